"""Helpers shared by the distributions: parameter broadcasting, probs <-> logits, sums over
event dims, ``lazy_property`` for parameters computed on first use, and the Euler-Mascheroni
constant, and PyTorch's lower-triangle <-> vector conversions."""

from __future__ import annotations

import numbers
from typing import Any

import ember
from ember.errors import ArgumentError
from ember.tensor import Tensor

__all__ = ["EULER_GAMMA", "broadcast_all", "clamp_probs", "euler_constant", "lazy_property",
           "logits_to_probs", "one_minus_exp", "probs_to_logits", "shape_shown", "sum_rightmost",
           "tril_matrix_to_vec", "vec_to_tril_matrix", "where_above"]

EULER_GAMMA = 0.57721566490153286061  # -digamma(1): Gumbel, Weibull and Kumaraswamy moments
euler_constant = EULER_GAMMA  # (PyTorch's name for it)


def shape_shown(value: Any) -> Any:
    """What an error message shows for a parameter: a tensor's shape as a plain tuple, any
    other value as itself.

    Example:
        >>> shape_shown(ember.zeros(2, 3)), shape_shown(1.5)
        ((2, 3), 1.5)
    """
    return tuple(value.shape) if isinstance(value, Tensor) else value


def broadcast_all(*values: Any, owner: str = "distribution") -> tuple[Tensor, ...]:
    """Tensors of one broadcast shape from tensors and Python numbers; numbers take the dtype
    of the first tensor (the default dtype when there is none).

    Example:
        >>> loc, scale = broadcast_all(ember.zeros(3), 1.0)
        >>> scale.shape
        ember.Size([3])
    """
    first = next((v for v in values if isinstance(v, Tensor)), None)
    for v in values:
        if not isinstance(v, (Tensor, numbers.Number)):
            raise TypeError(f"{owner}: parameters must be ember Tensors or Python numbers, got "
                            f"{type(v).__name__}; hint: wrap arrays with ember.tensor(...)")
    dtype = first.dtype if first is not None and first.dtype.is_floating_point else None
    tensors = [v if isinstance(v, Tensor) else ember.tensor(float(v), dtype=dtype)
               for v in values]
    shapes = [tuple(t.shape) for t in tensors]
    try:
        shape = ember.broadcast_shapes(*shapes)
    except Exception as exc:
        raise ArgumentError(f"{owner}: parameter shapes {', '.join(map(str, shapes))} do not "
                            "broadcast; hint: give every parameter the same batch shape") from exc
    return tuple(t if t.shape == shape else t.expand(shape) for t in tensors)


def sum_rightmost(value: Tensor | float, dims: int) -> Tensor | float:
    """``value`` summed over its rightmost ``dims`` dims (a number is returned as is)."""
    if dims == 0 or not isinstance(value, Tensor):
        return value
    start = value.dim() - dims  # (more dims than the value's: all of it, as torch's)
    return (value.flatten(start) if start >= 0 else value.reshape(-1)).sum(-1)


def as_value(value: Any, like: Tensor) -> Tensor:
    """``value`` as a tensor: a Python number becomes one of ``like``'s dtype (as PyTorch's
    transformed cdf/icdf take one); a tensor is returned as is (it promotes with the
    parameters).

    Example:
        >>> as_value(0.5, ember.tensor([1.0], dtype=ember.float64))
        tensor(0.5000, dtype=ember.float64)
    """
    return value if isinstance(value, Tensor) else ember.as_tensor(value, dtype=like.dtype)


def where_above(x: Tensor, bound: float, fn: Any, otherwise: Any, *others: Tensor) -> Tensor:
    """``fn(x)`` where ``x > bound``, a NaN where ``x`` or one of ``others`` (the other
    parameters the moment reads) is NaN, else ``otherwise``; ``fn`` only sees values above
    the bound, so the branch not taken cannot put NaN into gradients (a moment that is
    infinite or undefined for heavy tails; a NaN parameter, as a diverging fit makes with
    ``validate_args=False``, stays visible rather than reading as a heavy tail).

    Example:
        >>> where_above(ember.tensor([0.5, 3.0, float("nan"), 0.5]), 1.0, lambda a: a / (a - 1),
        ...             float("inf"), ember.tensor([1.0, 1.0, 1.0, float("nan")]))
        tensor([   inf, 1.5000,    nan,    nan])
    """
    above = x > bound
    fallback = ember.where(ember.isnan(x), x, otherwise)
    for other in others:
        fallback = ember.where(ember.isnan(other), other, fallback)
    return ember.where(above, fn(ember.where(above, x, bound + 1.0)), fallback)


def one_minus_exp(s: Tensor) -> Tensor:
    """``1 - e^s`` for ``s <= 0`` (a cdf from a log survival) without cancellation, as
    ``-expm1(s)`` (whose slope ``-e^s`` stays exact for ``s < 0``); +0 at ``s = 0``.

    Example:
        >>> one_minus_exp(ember.tensor([-1e-15, -50.0], dtype=ember.float64))
        tensor([1.0000e-15, 1.0000e+00], dtype=ember.float64)
    """
    return 0.0 - ember.expm1(s)


def clamp_probs(probs: Tensor) -> Tensor:
    """``probs`` clamped into ``[eps, 1 - eps]`` of its dtype, so logs stay finite."""
    eps = ember.finfo(probs.dtype).eps
    return probs.clamp(min=eps, max=1 - eps)


def probs_to_logits(probs: Tensor, is_binary: bool = False) -> Tensor:
    """Logits of probabilities: ``log p - log(1 - p)`` if ``is_binary``, else ``log p``.
    Only exact 0 and 1 (and values outside) move to ``eps`` and ``1 - eps``, as PyTorch's
    clamp; a probability inside ``(0, 1)`` keeps its own log (PyTorch's clamp lifts float32
    ones below 1.2e-7: ``Binomial(10, probs=1e-12).log_prob(1)`` is -13.6, not -25.3)."""
    eps = ember.finfo(probs.dtype).eps
    p = ember.where(probs <= 0, eps, ember.where(probs >= 1, 1 - eps, probs))
    return ember.log(p) - ember.log1p(-p) if is_binary else ember.log(p)


def logits_to_probs(logits: Tensor, is_binary: bool = False) -> Tensor:
    """Probabilities of logits: ``sigmoid`` if ``is_binary``, else ``softmax`` over the last
    dim."""
    return ember.sigmoid(logits) if is_binary else ember.softmax(logits, -1)


class lazy_property:  # noqa: N801 - a decorator, named like ``property``
    """A property computed on first access and then stored on the instance."""

    def __init__(self, fn: Any) -> None:
        self.fn = fn
        self.__doc__ = fn.__doc__
        self.__name__ = fn.__name__

    def __get__(self, instance: Any, owner: Any = None) -> Any:
        if instance is None:
            return self
        with ember.enable_grad():
            value = self.fn(instance)
        instance.__dict__[self.__name__] = value
        return value


def _tril_size(n: int, diag: int) -> int:
    """How many elements of an ``n x n`` matrix lie on or below diagonal ``diag``."""
    return sum(min(max(i + diag + 1, 0), n) for i in range(n))


def tril_matrix_to_vec(mat: Tensor, diag: int = 0) -> Tensor:
    """The elements of (a batch of) square matrices on and below diagonal ``diag``, in row
    order, as the last dim.

    Example:
        >>> tril_matrix_to_vec(ember.tensor([[1.0, 2.0], [3.0, 4.0]]))
        tensor([1., 3., 4.])
    """
    n = mat.shape[-1]
    if not -n <= diag < n:
        raise ArgumentError(f"tril_matrix_to_vec: diag ({diag}) provided is outside "
                            f"[{-n}, {n - 1}]")
    rows, cols = ember.tril_indices(n, n, diag, device=mat.device)
    return mat[..., rows, cols]


def vec_to_tril_matrix(vec: Tensor, diag: int = 0) -> Tensor:
    """The square matrices whose elements on and below diagonal ``diag`` are ``vec``'s last
    dim, in row order (zeros above): the inverse of :func:`tril_matrix_to_vec`.

    Example:
        >>> vec_to_tril_matrix(ember.tensor([1.0, 3.0, 4.0]))
        tensor([[1., 0.],
                [3., 4.]])
    """
    size = vec.shape[-1]
    n = 0
    while _tril_size(n + 1, diag) <= size:  # (the largest n: an n x n matrix below diag < 0)
        n += 1
    if _tril_size(n, diag) != size:
        raise ArgumentError(f"vec_to_tril_matrix: the size of last dimension is {size} which "
                            "cannot be expressed as the lower triangular part of a square D x D "
                            f"matrix (diag={diag})")
    mat = vec.new_zeros(tuple(vec.shape[:-1]) + (n, n))
    rows, cols = ember.tril_indices(n, n, diag, device=vec.device)
    mat[..., rows, cols] = vec
    return mat
