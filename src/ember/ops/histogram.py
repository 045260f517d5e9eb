"""``histogram``: counts (or summed weights) of a tensor's values in bins given by a number of
equal bins over a range or by their edges, with the edges; optionally a density.

As in PyTorch, each bin holds ``[left, right)`` except the last, which holds its right edge
too; values outside the bins (and NaN) are not counted. With no range, the bins span the data
(``[v - 0.5, v + 0.5]`` for constant data, ``[0, 1]`` for none). No gradient flows.
"""

from __future__ import annotations

from typing import Any, NamedTuple

from ember import dtypes
from ember.errors import DTypeError, ShapeError
from ember.ops.creation import linspace, ones_like, zeros
from ember.ops.search import searchsorted
from ember.ops.select import where
from ember.tensor import Tensor, method

__all__ = ["histogram"]


class HistogramResult(NamedTuple):
    hist: Tensor
    bin_edges: Tensor


def _range(x: Tensor, range: Any) -> tuple[float, float]:
    if range is not None:
        lo, hi = float(range[0]), float(range[1])
    elif x.numel():
        lo, hi = float(x.min()), float(x.max())
    else:
        lo, hi = 0.0, 1.0
    if lo > hi:
        raise ValueError(f"histogram: min should not exceed max, but got min {lo} max {hi}")
    if not (abs(lo) < float("inf") and abs(hi) < float("inf")):
        raise ValueError(f"histogram: the range [{lo}, {hi}] is not finite. Hint: pass "
                         "range=(min, max), or remove NaN and infinities")
    if lo == hi:
        lo, hi = lo - 0.5, hi + 0.5
    return lo, hi


@method()
def histogram(input: Tensor, bins: int | Tensor = 100, *, range: Any = None,  # noqa: A002
              weight: Tensor | None = None, density: bool = False) -> HistogramResult:
    """The histogram of ``input``'s values: ``bins`` equal bins over ``range`` (the data's
    by default), or the bins between consecutive values of the increasing 1-D tensor
    ``bins``. Returns ``(hist, bin_edges)``; ``hist`` sums ``weight`` (same shape as
    ``input``) instead of counting when given, and is a density when ``density``.

    Example:
        >>> ember.histogram(ember.tensor([1.0, 2.0, 1.0, 4.0]), bins=3)
        HistogramResult(hist=tensor([2., 1., 1.]), bin_edges=tensor([1., 2., 3., 4.]))
    """
    if not input.dtype.is_floating_point:
        raise DTypeError(f"histogram: expected a floating input, got {input.dtype.name}. "
                         "Hint: call .float() first")
    x = input.detach().reshape(-1)
    if weight is not None and tuple(weight.shape) != tuple(input.shape):
        raise ShapeError(f"histogram: weight must have the input's shape {tuple(input.shape)}, "
                         f"got {tuple(weight.shape)}")
    if isinstance(bins, Tensor):
        if bins.ndim != 1 or bins.numel() < 2:
            raise ShapeError(f"histogram: a bins tensor holds the bin edges, at least 2 in one "
                             f"dimension, got shape {tuple(bins.shape)}. Hint: pass an int "
                             "for that many equal bins")
        if bins.dtype is not input.dtype:
            raise DTypeError(f"histogram: input and bins should have one dtype, got input "
                             f"{input.dtype.name} and bins {bins.dtype.name}")
        edges = bins.detach()
        n = edges.numel() - 1
        idx = searchsorted(edges, x, right=True) - 1
        idx = where(x == edges[-1], n - 1, idx)
        inside = (x >= edges[0]) & (x <= edges[-1])
    else:
        n = int(bins)
        if n <= 0:
            raise ValueError(f"histogram: bins must be > 0, but got {n}")
        lo, hi = _range(x, range)
        edges = linspace(lo, hi, n + 1, dtype=input.dtype, device=input.device)
        idx = ((x - lo) * (n / (hi - lo))).floor().to(dtypes.int64).clamp(max=n - 1)
        inside = (x >= lo) & (x <= hi)
    w = ones_like(x) if weight is None else weight.detach().reshape(-1).to(input.dtype)
    idx = where(inside, idx, 0).clamp(min=0)
    hist = zeros(max(n, 0), dtype=input.dtype, device=input.device)
    hist = hist.index_add(0, idx, where(inside, w, 0.0))
    if density:
        hist = hist / (hist.sum() * (edges[1:] - edges[:-1]))
    return HistogramResult(hist, edges)
