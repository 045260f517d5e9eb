"""Gradient clipping: ``clip_grad_norm_`` (by the norm of all gradients together, also in two
steps: ``get_total_norm`` then ``clip_grads_with_norm_``; ``clip_grad_norm`` is its deprecated
spelling) and ``clip_grad_value_`` (elementwise), in place under ``no_grad`` as in PyTorch."""

from __future__ import annotations

import math
import warnings
from collections.abc import Callable, Iterable
from types import GeneratorType

import numpy as np

import ember
from ember.errors import ArgumentError, ArgumentTypeError, OpError, refuse_non_tensor
from ember.ops.primitive import DISPATCH
from ember.tensor import Tensor, _wrap

__all__ = ["clip_grad_norm_", "clip_grad_norm", "clip_grad_value_", "clip_grads_with_norm_",
           "get_total_norm"]


# Parameters that are this rank's pieces of larger ones (``fully_shard``'s Shard(0) pieces):
# ember.distributed registers ``fn(parameters, norm_type) -> (the others, norm or None)``,
# which takes out the pieces it knows and returns the norm of their whole gradients over the
# ranks, so that clip_grad_norm_ clips by the whole model's norm (as PyTorch's does with
# DTensor gradients) and every rank scales by the same factor.
SHARDED_NORMS: list[Callable[[list[Tensor], float], tuple[list[Tensor], Tensor | None]]] = []


def _as_list(tensors: Tensor | Iterable[Tensor]) -> list[Tensor]:
    return [tensors] if isinstance(tensors, Tensor) else list(tensors)


def _norm_order(norm_type: float | str) -> float:
    """``float(norm_type)``, as PyTorch takes it (so ``"inf"`` is the max norm), with an Ember
    error where that fails (PyTorch: ``float``'s ValueError or TypeError)."""
    try:
        return float(norm_type)
    except (TypeError, ValueError) as e:
        error = ArgumentTypeError if isinstance(e, TypeError) else ArgumentError
        raise error(f"get_total_norm (clip_grad_norm_): norm_type must be a number (inf or "
                    f"'inf' for the max norm), got {norm_type!r}") from None


def get_total_norm(tensors: Tensor | Iterable[Tensor], norm_type: float | str = 2.0,
                   error_if_nonfinite: bool = False, foreach: bool | None = None) -> Tensor:
    """The ``norm_type``-norm of all ``tensors`` taken together as one vector."""
    tensors = _as_list(tensors)
    norm_type = _norm_order(norm_type)
    if not tensors:
        return ember.tensor(0.0)
    for t in tensors:
        refuse_non_tensor("get_total_norm", "tensors", t)
    if not all(isinstance(t, Tensor) for t in tensors):
        raise NotImplementedError("get_total_norm (clip_grad_norm_): sparse gradients are not "
                                  "supported, as in PyTorch (its vector_norm has no sparse "
                                  "kernel). Hint: nn.Embedding(sparse=False) gives dense ones")
    with ember.no_grad():
        total = _plain_two_norm(tensors) if norm_type == 2.0 else None
        if total is None:
            flat = [t.detach().reshape(-1) for t in tensors]
            if norm_type == math.inf:
                total = ember.stack([f.abs().max() if f.numel()
                                     else ember.zeros((), dtype=f.dtype) for f in flat]).max()
            else:
                total = ember.stack([f.norm(norm_type) for f in flat]).norm(norm_type)
    if error_if_nonfinite and not bool(ember.isfinite(total)):
        raise OpError(f"The total norm of order {norm_type} for gradients from "
                      "`parameters` is non-finite, so it cannot be clipped. To disable "
                      "this error and scale the gradients by the non-finite norm anyway, set "
                      "`error_if_nonfinite=False`")
    return total


def clip_grad_norm_(parameters: Tensor | Iterable[Tensor], max_norm: float,
                    norm_type: float | str = 2.0, error_if_nonfinite: bool = False,
                    foreach: bool | None = None) -> Tensor:
    """Scales the gradients of ``parameters`` in place so that their total norm is at most
    ``max_norm``; returns the total norm before clipping (``norm_type`` may be ``inf`` or
    ``"inf"``). The pieces of a ``fully_shard`` model count with their whole gradients (every
    rank calls it).

    Example:
        >>> total = nn.utils.clip_grad_norm_(model.parameters(), max_norm=1.0)
    """
    if isinstance(parameters, GeneratorType) and not (parameters := list(parameters)):
        warnings.warn("`parameters` is an empty generator, no gradient clipping will occur "
                      "(was it used up already, e.g. by an earlier model.parameters() loop?)",
                      stacklevel=2)
    parameters = rest = _as_list(parameters)
    norm_type = _norm_order(norm_type)
    norms = []
    for sharded_norm in SHARDED_NORMS:
        rest, norm = sharded_norm(rest, norm_type)
        if norm is not None:
            norms.append(norm)
    total = get_total_norm([p.grad for p in rest if p.grad is not None] + norms, norm_type,
                           error_if_nonfinite)
    clip_grads_with_norm_(parameters, max_norm, total)
    return total


def clip_grad_norm(parameters: Tensor | Iterable[Tensor], max_norm: float,
                   norm_type: float | str = 2.0, error_if_nonfinite: bool = False,
                   foreach: bool | None = None) -> Tensor:
    """Deprecated spelling of :func:`clip_grad_norm_` (warns with a ``FutureWarning``, as
    PyTorch does).

    Example:
        >>> total = nn.utils.clip_grad_norm(model.parameters(), 1.0)  # FutureWarning
    """
    warnings.warn("`nn.utils.clip_grad_norm` is now deprecated in favor of "
                  "`nn.utils.clip_grad_norm_`.", FutureWarning, stacklevel=2)
    return clip_grad_norm_(parameters, max_norm, norm_type, error_if_nonfinite, foreach)


def clip_grads_with_norm_(parameters: Tensor | Iterable[Tensor], max_norm: float,
                          total_norm: Tensor | float, foreach: bool | None = None) -> None:
    """Scales the gradients of ``parameters`` in place by ``max_norm / (total_norm + 1e-6)``
    when that is below 1 (``total_norm`` from :func:`get_total_norm`, e.g. computed across
    several groups or ranks).

    Example:
        >>> grads = [p.grad for p in model.parameters()]
        >>> nn.utils.clip_grads_with_norm_(model.parameters(), 1.0, nn.utils.get_total_norm(grads))
    """
    grads = [p.grad for p in _as_list(parameters) if p.grad is not None]
    if not grads:
        return
    if not isinstance(total_norm, Tensor):
        total_norm = ember.tensor(float(total_norm))
    coef = (float(max_norm) / (total_norm + 1e-6)).clamp(max=1.0)
    with ember.no_grad():
        cast: dict[ember.dtype, Tensor] = {}
        for g in grads:
            c = cast.get(g.dtype)
            if c is None:  # (a half gradient scales by the coefficient unrounded, one rounding
                # as PyTorch's float32 opmath; rounding it to half first was ~1 ulp off)
                c = cast[g.dtype] = coef if g.dtype in _HALVES else coef.to(g.dtype)
            if _plain(g) and g._view is None and g._data.flags.writeable \
                    and type(c._data) is np.ndarray:
                np.multiply(g._data, c._data, out=g._data)  # (mul_'s values, no op's overhead)
                g._vc.value += 1
            else:
                g.mul_(c)


def _plain(t: Tensor) -> bool:
    """Whether ``t`` is a float32/float64 NumPy-backed tensor and no transform, profiler or
    autocast watches (the fast paths then compute what the ops would, without them)."""
    return not DISPATCH.stack and type(t) is Tensor and type(t._data) is np.ndarray and \
        t._data.dtype in _FLOATS


_FLOATS = (np.dtype(np.float32), np.dtype(np.float64))
_HALVES = (ember.float16, ember.bfloat16)


def _plain_two_norm(tensors: list[Tensor]) -> Tensor | None:
    """The 2-norm of ``tensors`` together as ``vector_norm`` of each and then of their stack
    computes it (each ``sqrt(sum(x * x))`` in the dtype, the same bits), for plain tensors of
    one dtype; None otherwise. Per tensor a few NumPy calls instead of several ops (200
    gradients: ~4 ms of op overhead)."""
    dtype = tensors[0]._data.dtype
    if not all(_plain(t) and t._data.dtype == dtype for t in tensors):
        return None
    norms = []
    for t in tensors:
        flat = t._data.reshape(-1)
        norms.append(np.sqrt(np.add.reduce(np.multiply(flat, flat), axis=None, dtype=dtype)))
    stacked = np.stack(norms)
    total = np.sqrt(np.add.reduce(np.multiply(stacked, stacked), axis=None, dtype=dtype))
    return _wrap(np.asarray(total, dtype=dtype), tensors[0]._device)


def clip_grad_value_(parameters: Tensor | Iterable[Tensor], clip_value: float,
                     foreach: bool | None = None) -> None:
    """Clamps every gradient of ``parameters`` into ``[-clip_value, clip_value]`` in place.

    Example:
        >>> nn.utils.clip_grad_value_(model.parameters(), 0.5)
    """
    clip_value = float(clip_value)
    with ember.no_grad():
        for p in _as_list(parameters):
            if p.grad is not None:
                p.grad.clamp_(-clip_value, clip_value)
