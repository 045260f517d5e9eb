"""Distances and similarities between vectors: ``cosine_similarity`` and ``pairwise_distance``
along a dimension (inputs broadcast), ``cdist`` between all pairs of rows of two inputs and
``pdist`` between the rows of one; composites of elementwise ops, sums, norms and (``cdist``,
p = 2) a matmul."""

from __future__ import annotations

import numpy as np

from ember import dtypes
from ember.errors import ArgumentError, DTypeError, ShapeError, is_floating_input, refuse_non_tensor
from ember.ops.broadcast import broadcast_shapes, broadcast_tensors
from ember.ops.compare import eq, isinf
from ember.ops.convert import cast, float32_under_autocast
from ember.ops.forwarding import check_tensors, hands_over
from ember.ops.gather import index_select
from ember.ops.int_args import as_float, as_int
from ember.ops.linalg import matmul
from ember.ops.norms import _root, _vector_norm, vector_norm
from ember.ops.reduce import amax
from ember.ops.reduce import sum as _sum
from ember.ops.rounding import ceil
from ember.ops.select import clamp, where
from ember.ops.shape import reshape_view, transpose
from ember.ops.unary import abs  # noqa: A004
from ember.tensor import Tensor, _wrap

__all__ = ["cosine_similarity", "pairwise_distance", "cdist", "pdist"]
_INF = float("inf")


def _clamped_norm(x: Tensor, dim: int, eps: float) -> Tensor:
    """``max(‖x‖₂, eps)`` along ``dim`` (kept), clamped in value only as PyTorch does it: the
    gradient is the norm's, also where the clamp applies."""
    n = vector_norm(x, 2, dim, True)
    return where(n.detach() < eps, n - n.detach() + eps, n)


def _as_floating(x1: Tensor, x2: Tensor) -> tuple[Tensor, Tensor]:
    """``x1`` and ``x2``, an integer or bool one converted to the floating dtype they
    promote to (each floating one keeps its dtype, as in PyTorch)."""
    try:
        dtype = dtypes.promote_types(x1.dtype, x2.dtype)
    except (AttributeError, DTypeError):  # (None, a number, a list: no dtype; an array's
        # or a torch tensor's dtype is no Ember dtype)
        refuse_non_tensor("cosine_similarity", "x1", x1)
        refuse_non_tensor("cosine_similarity", "x2", x2)
        raise
    if not dtype.is_floating_point:
        raise DTypeError(f"cosine_similarity: expected floating inputs (or one of them), got "
                         f"{x1.dtype.name} and {x2.dtype.name}. Hint: call .float() on one")
    return tuple(x if x.dtype.is_floating_point else cast(x, dtype) for x in (x1, x2))


def cosine_similarity(x1: Tensor, x2: Tensor, dim: int = 1, eps: float = 1e-8) -> Tensor:
    """``x1·x2 / (max(‖x1‖, eps) · max(‖x2‖, eps))`` along ``dim`` (which is removed). The
    inputs broadcast first, so a vector broadcast along ``dim`` has the norm of its copies;
    as in PyTorch, each is divided by its norm before the sum, and the clamp at ``eps`` does
    not enter the gradient.

    Example:
        >>> F.cosine_similarity(ember.tensor([[1.0, 0.0]]), ember.tensor([[1.0, 1.0]]))
        tensor([0.7071])
    """
    op = "cosine_similarity"
    dim, eps = as_int(dim, op, "dim"), as_float(eps, op, "eps")  # (a tuple dim summed both)
    if not eps >= 0:  # (a negative one gave NaN for a zero vector)
        raise ArgumentError(f"{op}: eps must be non-negative, got {eps}")
    x1, x2 = broadcast_tensors(*_as_floating(x1, x2))
    return _sum(x1 / _clamped_norm(x1, dim, eps) * (x2 / _clamped_norm(x2, dim, eps)), dim)


def pairwise_distance(x1: Tensor, x2: Tensor, p: float = 2.0, eps: float = 1e-6,
                      keepdim: bool = False) -> Tensor:
    """``‖x1 - x2 + eps‖_p`` along the last dimension, for any ``p`` ``vector_norm`` takes
    (0 counts the non-zero entries, ``±inf`` takes the largest/smallest ``|entry|``); complex
    inputs give the real norm of the moduli; integer ones turn floating with ``eps``.

    Example:
        >>> F.pairwise_distance(ember.tensor([[0.0, 0.0]]), ember.tensor([[3.0, 4.0]]))
        tensor([5.0000])
    """
    # (eps a float, as PyTorch reads it: integer inputs with eps=0 turn floating too)
    return vector_norm(x1 - x2 + as_float(eps, "pairwise_distance", "eps"), p, -1, keepdim)


_COMPUTE_MODES = ("use_mm_for_euclid_dist_if_necessary", "use_mm_for_euclid_dist",
                  "donot_use_mm_for_euclid_dist")


@hands_over
@float32_under_autocast
def cdist(x1: Tensor, x2: Tensor, p: float = 2.0,
          compute_mode: str = "use_mm_for_euclid_dist_if_necessary") -> Tensor:
    """The ``p``-norm distances between the rows of ``x1`` ``(…, P, M)`` and of ``x2``
    ``(…, R, M)``: a ``(…, P, R)`` tensor (batch dims broadcast). ``p = 0`` counts differing
    entries, ``p = inf`` takes the largest difference. For ``p = 2`` and ``compute_mode``
    ``"use_mm_for_euclid_dist"`` (or the default, when P or R exceeds 25), distances come
    from ``‖a‖² + ‖b‖² - 2a·b`` (a matmul), as PyTorch does; the gradient at distance 0 is 0.

    Example:
        >>> ember.cdist(ember.tensor([[0.0, 0.0]]), ember.tensor([[3.0, 4.0], [1.0, 0.0]]))
        tensor([[5., 1.]])
    """
    op = "cdist"
    check_tensors(op, x1=x1, x2=x2)
    for name, x in (("x1", x1), ("x2", x2)):
        if x.ndim < 2:
            raise ShapeError(f"{op}: only supports at least 2-d tensors, {name} has shape "
                             f"{tuple(x.shape)}")
        if not x.dtype.is_floating_point:
            raise DTypeError(f"{op}: only supports floating-point dtypes, {name} is "
                             f"{x.dtype.name}")
    if x1.dtype is not x2.dtype:
        raise DTypeError(f"{op}: x1 and x2 must have the same dtype, got {x1.dtype.name} and "
                         f"{x2.dtype.name}")
    if x1.shape[-1] != x2.shape[-1]:
        raise ShapeError(f"{op}: x1 and x2 must have the same number of columns, got shapes "
                         f"{tuple(x1.shape)} and {tuple(x2.shape)}")
    p = as_float(p, op, "p")
    if not p >= 0:
        raise ArgumentError(f"{op}: only supports non-negative p values, got {p}")
    if compute_mode not in _COMPUTE_MODES:
        raise ArgumentError(f"{op}: {compute_mode!r} is not a valid value for compute_mode; "
                            f"expected one of {', '.join(_COMPUTE_MODES)}")
    broadcast_shapes(tuple(x1.shape)[:-2], tuple(x2.shape)[:-2], op=f"{op} (the batch dimensions)")
    rows1, rows2 = x1.shape[-2], x2.shape[-2]
    use_mm = p == 2 and x1.numel() > 0 and x2.numel() > 0 and (
        compute_mode == "use_mm_for_euclid_dist" or (
            compute_mode == _COMPUTE_MODES[0] and (rows1 > 25 or rows2 > 25)))
    if use_mm:
        sq1 = _sum(x1 * x1, -1, keepdim=True)
        sq2 = _sum(x2 * x2, -1, keepdim=True)
        x2t = transpose(x2, -1, -2)
        squared = sq1 + transpose(sq2, -1, -2) - 2 * matmul(x1, x2t)
        return _root(clamp(squared, min=0), 2)
    diff = reshape_view(x1, tuple(x1.shape)[:-1] + (1, x1.shape[-1])) - \
        reshape_view(x2, tuple(x2.shape)[:-2] + (1,) + tuple(x2.shape)[-2:])
    return _norm_of_differences(diff, p, diff.ndim - 1)


def _norm_of_differences(diff: Tensor, p: float, dim: int) -> Tensor:
    """The ``p``-norm of ``diff`` along ``dim`` as ``cdist`` and ``pdist`` take it: for
    ``p = 0`` the count of non-zero differences, NaN where one is NaN (a zero gradient)."""
    if p == 0:
        return _sum(clamp(ceil(abs(diff)), max=1), dim)
    if p == _INF and diff.shape[dim] == 0:
        p = 1.0  # (the largest of no differences: 0)
    return _largest_difference(diff, dim) if p == _INF else _vector_norm(diff, p, (dim,), False)


def _largest_difference(diff: Tensor, dim: int) -> Tensor:
    """``max |diff|`` along ``dim`` whose gradient goes whole to every entry tied for the
    maximum, as PyTorch's ``cdist`` and ``pdist`` send it (``amax`` shares it among them):
    the maximum plus the first-order change of the tied entries, which is zero in value."""
    a = abs(diff)
    top = amax(a.detach(), dim, keepdim=True)
    change = _sum(where(eq(a.detach(), top), a - a.detach(), 0.0), dim)
    top = top.squeeze(dim)
    return where(isinf(top), top, top + change)  # (inf - inf would be nan)


def pdist(input: Tensor, p: float = 2) -> Tensor:
    """The ``p``-norm distances between the rows of an ``(N, M)`` input, for each pair
    ``i < j`` in row-major order: ``N (N - 1) / 2`` values. As in PyTorch, with ``p = inf``
    every entry tied for the largest difference receives the whole gradient.

    Example:
        >>> F.pdist(ember.tensor([[0.0, 0.0], [3.0, 4.0], [6.0, 8.0]]))
        tensor([ 5., 10.,  5.])
    """
    refuse_non_tensor("pdist", "input", input)  # (a PyTorch tensor passes the checks below)
    if input.ndim != 2:
        raise ShapeError(f"pdist: expected a 2-D (N, M) input, got shape {tuple(input.shape)}")
    if not is_floating_input("pdist", "input", input):
        raise DTypeError(f"pdist: expected a floating input, got {input.dtype.name}")
    p = as_float(p, "pdist", "p")
    if not p >= 0:
        raise ArgumentError(f"pdist: only supports non-negative p values, got {p}")
    rows, cols = np.triu_indices(input.shape[0], 1)
    xp, dev = input.device.xp, input.device
    diff = index_select(input, 0, _wrap(xp.asarray(rows.astype(np.int64)), dev)) - \
        index_select(input, 0, _wrap(xp.asarray(cols.astype(np.int64)), dev))
    return _norm_of_differences(diff, p, 1)
