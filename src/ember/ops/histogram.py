"""``histogram``: counts (or summed weights) of a tensor's values in bins given by a number of
equal bins over a range or by their edges, with the edges; optionally a density.
``histogramdd``: the same over D-dimensional points, one set of bins per dimension.

As in PyTorch, each bin holds ``[left, right)`` except the last, which holds its right edge
too; values outside the bins (and NaN) are not counted. With no range, the bins span the data
(``[v - 0.5, v + 0.5]`` for constant data, ``[0, 1]`` for none). No gradient flows.
"""

from __future__ import annotations

import builtins
import math
from collections.abc import Sequence
from typing import Any

from ember import return_types
from ember.errors import ArgumentTypeError, DTypeError, OpError, ShapeError
from ember.ops.creation import linspace, ones_like, zeros
from ember.ops.int_args import as_int
from ember.ops.search import searchsorted
from ember.ops.select import where
from ember.tensor import Tensor, method

__all__ = ["histogram", "histogramdd"]


def _range(x: Tensor, range: Any, op: str) -> tuple[float, float]:
    if range is not None:
        if len(range) != 2:  # (checked before the bins, in PyTorch's order)
            raise ShapeError(f"{op}: for a 1-dimensional histogram range should have 2 "
                             f"elements, but got {len(range)}. Hint: range=(min, max)")
        lo, hi = _given_range(range, op)
    elif x.numel():
        lo, hi = float(x.min()), float(x.max())
    else:
        lo, hi = 0.0, 1.0
    if not (abs(lo) < float("inf") and abs(hi) < float("inf")):
        raise OpError(f"{op}: the range [{lo}, {hi}] is not finite. Hint: pass "
                      "range=(min, max), or remove NaN and infinities")
    if lo == hi:
        lo, hi = lo - 0.5, hi + 0.5
    return lo, hi


def _given_range(range: Any, op: str) -> tuple[float, float]:
    """A ``(min, max)`` range given, as floats; a RuntimeError, as PyTorch's, if min > max."""
    lo, hi = float(range[0]), float(range[1])
    if lo > hi:
        raise OpError(f"{op}: min should not exceed max, but got min {lo} max {hi}")
    return lo, hi


def _check_edges(bins: Tensor, dtype: Any, op: str) -> None:
    """A bins tensor is 1-D edges of the input's dtype (a RuntimeError, as PyTorch's)."""
    if bins.ndim != 1 or bins.numel() < 2:
        raise ShapeError(f"{op}: a bins tensor holds the bin edges, at least 2 in one "
                         f"dimension, got shape {tuple(bins.shape)}. Hint: pass an int "
                         "for that many equal bins")
    if bins.dtype is not dtype:
        raise DTypeError(f"{op}: input and bins should have one dtype, got input "
                         f"{dtype.name} and bins {bins.dtype.name}")


def _count(bins: Any, op: str) -> int:
    """A number of equal bins: an int > 0 (else a RuntimeError, as PyTorch's)."""
    bins = as_int(bins, op, "bins")
    if bins <= 0:
        raise ShapeError(f"{op}: bins must be > 0, but got {bins}")
    return bins


def _check_weight(weight: Tensor | None, input: Tensor, op: str) -> None:
    """``weight``, when given, has ``input``'s shape (without its last dimension, of
    coordinates, for ``histogramdd``; for ``histogram`` its number of elements, as PyTorch
    flattens both) and dtype, as PyTorch asks."""
    if weight is None:
        return
    points = op == "histogramdd"
    if (tuple(weight.shape) != tuple(input.shape[:-1]) if points
            else weight.numel() != input.numel()):
        want = ("the same shape as the input tensor excluding its innermost dimension"
                if points else "as many elements as the input tensor")
        raise ShapeError(f"{op}: if weight tensor is provided it should have {want}, but got "
                         f"input with shape {tuple(input.shape)} and weight with shape "
                         f"{tuple(weight.shape)}")
    if weight.dtype is not input.dtype:
        raise DTypeError(f"{op}: weight should have the input's dtype, got input "
                         f"{input.dtype.name} and weight {weight.dtype.name}")


def _check_float(op: str, input: Tensor) -> None:
    if not input.dtype.is_floating_point:
        raise DTypeError(f"{op}: expected a floating input, got {input.dtype.name}. "
                         "Hint: call .float() first")


def _bin(x: Tensor, bins: int | Tensor, range: Any, dtype: Any, op: str
         ) -> tuple[Tensor, Tensor, Tensor]:
    """For the 1-D values ``x``: each one's bin index (any value where it falls in none),
    whether it falls in one, and the bin edges."""
    if isinstance(bins, Tensor):
        _check_edges(bins, dtype, op)
        edges = bins.detach()
    else:
        bins = _count(bins, op)
        lo, hi = _range(x, range, op)
        edges = linspace(lo, hi, bins + 1, dtype=dtype, device=x.device)
    # by the edges returned, as PyTorch does: a value on an inner edge opens the next bin
    idx = searchsorted(edges, x, right=True) - 1
    idx = where(x == edges[-1], edges.numel() - 2, idx)
    inside = (x >= edges[0]) & (x <= edges[-1])
    return idx, inside, edges


def _bins_per_dim(bins: Any) -> tuple | list:
    """``histogramdd``'s ``bins``: ``(count,)`` for one count for every dimension, else the
    list given (counts, or tensors of edges); a tensor or a mix of counts and tensors is a
    ``TypeError``, as PyTorch's parser refuses them."""
    if isinstance(bins, Tensor) or isinstance(bins, (str, bytes)) or \
            not hasattr(bins, "__iter__"):
        if isinstance(bins, Tensor) and bins.ndim:
            raise ArgumentTypeError(f"histogramdd: bins must be an int, a sequence of ints or "
                                    f"a sequence of 1-D tensors of edges, got a Tensor of "
                                    f"shape {tuple(bins.shape)}. Hint: pass list(bins)")
        return (bins,)  # (an int; a NumPy int or a 0-d tensor; the rest raise in _count)
    per_dim = list(bins)
    if len({isinstance(b, Tensor) for b in per_dim}) > 1:
        raise ArgumentTypeError("histogramdd: bins must be all counts or all tensors of edges, "
                                f"got {[type(b).__name__ for b in per_dim]}")
    return per_dim


@method()
def histogram(input: Tensor, bins: int | Tensor = 100, *, range: Any = None,  # noqa: A002
              weight: Tensor | None = None, density: bool = False) -> return_types.histogram:
    """The histogram of ``input``'s values: ``bins`` equal bins over ``range`` (the data's
    by default), or the bins between consecutive values of the increasing 1-D tensor
    ``bins``. Returns ``(hist, bin_edges)``; ``hist`` sums ``weight`` (same shape as
    ``input``) instead of counting when given, and is a density when ``density``.

    Example:
        >>> ember.histogram(ember.tensor([1.0, 2.0, 1.0, 4.0]), bins=3)
        ember.return_types.histogram(
        hist=tensor([2., 1., 1.]),
        bin_edges=tensor([1., 2., 3., 4.]))
    """
    _check_float("histogram", input)
    x = input.detach().reshape(-1)
    idx, inside, edges = _bin(x, bins, range, input.dtype, "histogram")
    _check_weight(weight, input, "histogram")  # (after the bins, as PyTorch checks)
    n = edges.numel() - 1
    w = ones_like(x) if weight is None else weight.detach().reshape(-1)
    idx = where(inside, idx, 0).clamp(min=0)
    hist = zeros(max(n, 0), dtype=input.dtype, device=input.device)
    hist = hist.index_add(0, idx, where(inside, w, 0.0))
    if density:
        hist = hist / (hist.sum() * (edges[1:] - edges[:-1]))
    return return_types.histogram(hist, edges)


def histogramdd(input: Tensor, bins: int | Sequence[int] | Sequence[Tensor], *,
                range: Sequence[float] | None = None,  # noqa: A002
                weight: Tensor | None = None, density: bool = False) -> return_types.histogramdd:
    """The D-dimensional histogram of the points in ``input`` (shape ``(..., D)``: its last
    dimension holds each point's D coordinates). ``bins``: one number of equal bins for every
    dimension, one per dimension, or one tensor of edges per dimension; ``range``: the flat
    ``[min0, max0, min1, max1, …]``. Returns ``(hist, bin_edges)``, ``hist`` of shape
    ``(bins0, bins1, …)``, summing ``weight`` (shape ``input.shape[:-1]``) when given and a
    density when ``density``. No gradient flows.

    Example:
        >>> pts = ember.tensor([[0.0, 0.0], [1.0, 1.0], [2.0, 0.5], [1.0, 0.0]])
        >>> ember.histogramdd(pts, bins=2).hist
        tensor([[1., 0.],
                [1., 2.]])
    """
    op = "histogramdd"
    per_dim = _bins_per_dim(bins)
    _check_float(op, input)
    if input.ndim < 2:
        raise ShapeError(f"{op}: input tensor should have at least 2 dimensions (points by "
                         f"coordinates), got shape {tuple(input.shape)}")
    d = input.shape[-1]
    per_dim = per_dim * d if isinstance(per_dim, tuple) else per_dim
    # the checks in PyTorch's order: range's length, the number of bins, each range, the
    # bins of each dimension (PyTorch looks at a count of 0, or edges of one element, after
    # the weight), the weight
    if range is not None and len(range) != 2 * d:
        raise ShapeError(f"{op}: for a {d}-dimensional histogram range should have {2 * d} "
                         f"elements, but got {len(range)}")
    if len(per_dim) != d:
        raise ShapeError(f"{op}: the size of bins ({len(per_dim)}) must be equal to the "
                         f"innermost dimension of the input ({d})")
    if range is not None and not isinstance(per_dim[0], Tensor):
        for k in builtins.range(d):
            _given_range(range[2 * k:2 * k + 2], op)
    for b in per_dim:
        if isinstance(b, Tensor):
            _check_edges(b, input.dtype, op)
        else:
            _count(b, op)
    _check_weight(weight, input, op)
    points = input.detach().reshape(-1, d)
    flat_idx, inside, all_edges = None, None, []
    for k in builtins.range(d):
        lo_hi = None if range is None else (range[2 * k], range[2 * k + 1])
        idx, ins, edges = _bin(points[:, k], per_dim[k], lo_hi, input.dtype, op)
        n = edges.numel() - 1
        flat_idx = idx if flat_idx is None else flat_idx * n + idx
        inside = ins if inside is None else inside & ins
        all_edges.append(edges)
    sizes = tuple(e.numel() - 1 for e in all_edges)
    w = ones_like(points[:, 0]) if weight is None else weight.detach().reshape(-1)
    hist = zeros(math.prod(sizes), dtype=input.dtype, device=input.device)
    hist = hist.index_add(0, where(inside, flat_idx, 0).clamp(min=0),
                          where(inside, w, 0.0)).reshape(sizes)
    if density:
        volume = None
        for k, e in enumerate(all_edges):
            width = (e[1:] - e[:-1]).reshape((-1,) + (1,) * (d - 1 - k))
            volume = width if volume is None else volume * width
        hist = hist / (hist.sum() * volume)
    return return_types.histogramdd(hist, tuple(all_edges))
