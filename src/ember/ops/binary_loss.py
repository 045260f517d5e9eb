"""Binary and distribution losses with PyTorch's reductions: binary_cross_entropy,
binary_cross_entropy_with_logits (primitives of their own: :mod:`ember.ops.bce`,
:mod:`ember.ops.bce_logits`), kl_div, poisson_nll_loss and gaussian_nll_loss (composites).
The classification and regression losses are in :mod:`ember.ops.loss`.
"""

from __future__ import annotations

import math
import warnings

from ember import dtypes
from ember.autograd.graph import name_node
from ember.dtypes import result_type
from ember.errors import ArgumentError, DTypeError, ShapeError, user_stacklevel
from ember.ops.bce import bce_terms, check_probabilities
from ember.ops.bce_logits import bce_logits_terms
from ember.ops.broadcast import broadcast_shapes, expand
from ember.ops.convert import cast, float32_under_autocast
from ember.ops.loss import _check_float, _constant, _reduce, _reduction, _same_dtype
from ember.ops.select import where
from ember.tensor import Tensor

__all__: list[str] = []


def _check_real(op: str, input: Tensor) -> None:
    """Refuses a bool or complex input; an integer one promotes in the loss's arithmetic, as
    in PyTorch."""
    if not (isinstance(input, Tensor) and input.dtype.category == dtypes.INT):
        _check_float(op, input)


def _same_shape(op: str, input: Tensor, target: Tensor, weight: Tensor | None) -> None:
    """Refuses a target of another shape than the input's, and a weight that does not
    broadcast to it (PyTorch's loss has the input's shape: it never broadcasts past it)."""
    shape = tuple(input.shape)
    if tuple(target.shape) != shape:
        raise ArgumentError(f"{op}: target size {tuple(target.shape)} must be the same as input "
                            f"size {shape}")
    if isinstance(weight, Tensor) and broadcast_shapes(tuple(weight.shape), shape,
                                                       op=op) != shape:
        raise ShapeError(f"{op}: weight of shape {tuple(weight.shape)} must broadcast to the "
                         f"input's shape {shape}")


def binary_cross_entropy(input: Tensor, target: Tensor, weight: Tensor | None = None,
                         size_average: bool | None = None, reduce: bool | None = None,
                         reduction: str = "mean") -> Tensor:
    """``-(t·log(x) + (1 - t)·log(1 - x))`` for probabilities ``x``, each log clamped at -100
    and the gradient in ``x`` bounded as PyTorch does (so a 0 or 1 probability gives a finite
    loss and gradient: :mod:`ember.ops.bce`).

    Example:
        >>> F.binary_cross_entropy(ember.tensor([0.5]), ember.tensor([1.0]))
        tensor(0.6931)
    """
    op = "binary_cross_entropy"
    reduction = _reduction(op, size_average, reduce, reduction)
    _check_float(op, input)
    _same_shape(op, input, target, weight)
    _same_dtype(op, input, target)
    check_probabilities(op, input, target)
    loss = bce_terms(input, target)  # (in the input's dtype, and so the weighted loss)
    return _reduce(loss if weight is None else loss * cast(weight, input.dtype), reduction)


@float32_under_autocast
def binary_cross_entropy_with_logits(input: Tensor, target: Tensor,
                                     weight: Tensor | None = None,
                                     size_average: bool | None = None,
                                     reduce: bool | None = None, reduction: str = "mean",
                                     pos_weight: Tensor | None = None) -> Tensor:
    """Binary cross entropy of ``sigmoid(input)``, computed stably from the logits as
    ``(1 - t)·x + w_pos·softplus(-x)``, ``w_pos = 1 + (pos_weight - 1)·t``; the gradient
    ``(1 - t)·sigmoid(x) - pos_weight·t·sigmoid(-x)`` keeps every digit where the prediction
    is confident (PyTorch's ``sigmoid(x) - t`` cancels there). At ``x = ±inf`` a zero weight
    times an infinite term counts as 0, the limit (PyTorch's ``0 * inf`` is NaN).

    Example:
        >>> F.binary_cross_entropy_with_logits(ember.tensor([0.0]), ember.tensor([1.0]))
        tensor(0.6931)
    """
    op = "binary_cross_entropy_with_logits"
    reduction = _reduction(op, size_average, reduce, reduction)
    _check_float(op, input)
    _same_shape(op, input, target, weight)
    # PyTorch's result has a floating target's dtype (the weights' too are cast to it); the
    # terms are computed in all operands' dtype (float32 logits keep their gradient's digits
    # beside a bfloat16 target), then rounded to it
    operands = (input, target) if pos_weight is None else (input, target, pos_weight)
    wide = result_type(*operands)
    dtype = target.dtype if target.dtype.is_floating_point else wide
    loss = cast(_bce_logits_terms(input, target, pos_weight, wide), dtype)
    if weight is not None:
        loss = loss * cast(weight, dtype)
    return name_node(_reduce(loss, reduction), "BinaryCrossEntropyWithLogitsBackward0")


def _bce_logits_terms(input: Tensor, target: Tensor, pos_weight: Tensor | None,
                      dtype: dtypes.DType) -> Tensor:
    """The primitive's terms, its operands in ``dtype`` and ``pos_weight`` expanded to the
    target's shape."""
    t = cast(target, dtype)
    return bce_logits_terms(cast(input, dtype), t, None if pos_weight is None else
                            expand(cast(pos_weight, dtype), t.shape))


@float32_under_autocast
def kl_div(input: Tensor, target: Tensor, size_average: bool | None = None,
           reduce: bool | None = None, reduction: str = "mean",
           log_target: bool = False) -> Tensor:
    """Kullback-Leibler divergence ``target·(log(target) - input)`` with ``input`` given as
    log-probabilities (and ``target`` too with ``log_target``); a zero target adds 0, a
    negative one NaN (as PyTorch). Unlike PyTorch's NaN, the gradient for a zero target is
    ``-input`` (log(target) counted as 0 there).

    ``reduction='batchmean'`` divides the sum by the batch size (the true KL divergence);
    'mean' divides by the number of elements, and warns so, as PyTorch does.

    Example:
        >>> p = ember.tensor([0.25, 0.75])
        >>> F.kl_div(p.log(), p, reduction="sum")
        tensor(0.)
    """
    if reduction == "mean" and size_average is None and reduce is None:
        warnings.warn("kl_div: reduction 'mean' divides the total loss by both the batch size "
                      "and the support size; 'batchmean' divides only by the batch size, and "
                      "aligns with the KL div math definition", UserWarning,
                      stacklevel=user_stacklevel())
    return kl_div_reduced(input, target, _reduction("kl_div", size_average, reduce, reduction),
                          log_target)


def kl_div_reduced(input: Tensor, target: Tensor, reduction: str, log_target: bool) -> Tensor:
    """:func:`kl_div` with ``reduction`` already read, without its 'mean' warning (which
    PyTorch gives in ``F.kl_div`` only, not in ``torch.kl_div``)."""
    _check_float("kl_div", input)
    if isinstance(target, Tensor) and not (target.dtype.is_floating_point or
                                           target.dtype.is_complex):
        raise DTypeError(f"kl_div: Integral inputs not supported: the target is "
                         f"{target.dtype.name}. Hint: target.to({input.dtype.name})")
    if log_target:
        loss = target.exp() * (target - input)
    else:  # t·log(t): 0 for a zero target, NaN for a negative one (its log), as PyTorch's xlogy
        loss = target * where(target == 0, 1, target).log() - target * input
    if reduction == "batchmean":
        return loss.sum() / (input.shape[0] if input.ndim else 1)
    return _reduce(loss, reduction)


@float32_under_autocast
def poisson_nll_loss(input: Tensor, target: Tensor, log_input: bool = True, full: bool = False,
                     size_average: bool | None = None, eps: float = 1e-8,
                     reduce: bool | None = None, reduction: str = "mean") -> Tensor:
    """Negative log-likelihood of ``target`` counts under a Poisson with rate ``exp(input)``
    (``log_input``) or ``input``; ``full`` adds Stirling's term for targets above 1.

    Example:
        >>> F.poisson_nll_loss(ember.tensor([0.0]), ember.tensor([1.0]))
        tensor(1.)
    """
    reduction = _reduction("poisson_nll_loss", size_average, reduce, reduction)
    _check_real("poisson_nll_loss", input)
    if log_input:
        loss = input.exp() - target * input
    else:
        loss = input - target * (input + eps).log()
    if full:
        big = target > 1
        safe = where(big, target, 2.0)
        stirling = safe * safe.log() - safe + 0.5 * (safe * (2 * math.pi)).log()
        loss = loss + where(big, stirling, 0.0)
    return _reduce(loss, reduction)


def gaussian_nll_loss(input: Tensor, target: Tensor, var: Tensor | float, full: bool = False,
                      eps: float = 1e-6, reduction: str = "mean") -> Tensor:
    """Negative log-likelihood of ``target`` under a Gaussian with mean ``input`` and
    variance ``var`` (shaped like ``input``, one dim short, or broadcasting along one dim).

    ``var`` is clamped at ``eps`` for the value only; its gradient passes through unchanged,
    as in PyTorch.

    Example:
        >>> F.gaussian_nll_loss(ember.tensor([0.0]), ember.tensor([0.0]), ember.tensor([1.0]))
        tensor(0.)
    """
    op = "gaussian_nll_loss"
    reduction = _reduction(op, None, None, reduction)
    _check_real(op, input)
    if not isinstance(var, Tensor):
        if var < 0:
            raise ArgumentError(f"{op}: var has a negative entry ({var})")
        real = input.dtype if input.dtype.is_floating_point else dtypes.get_default_dtype()
        var = _constant(input.device.xp.full(input.shape, var, dtype=real.np), input)
    elif bool((var._data < 0).any()):
        raise ArgumentError(f"{op}: var has negative entries")
    if tuple(var.shape) != tuple(input.shape):
        if tuple(var.shape) == tuple(input.shape[:-1]):
            var = var.unsqueeze(-1)
        elif var.ndim != input.ndim or sum(
                v for i, v in zip(input.shape, var.shape, strict=True) if i != v) != 1:
            raise ArgumentError(f"{op}: var of shape {tuple(var.shape)} does not fit input of "
                                f"shape {tuple(input.shape)}")
    var = where(var < eps, var + (eps - var).detach(), var)  # (an infinite var stays inf)
    d = input - target
    loss = 0.5 * (var.log() + d * d / var)
    if full:
        loss = loss + 0.5 * math.log(2 * math.pi)
    return _reduce(loss, reduction)
