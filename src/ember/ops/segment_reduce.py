"""``segment_reduce``: a reduction over consecutive segments of one dimension, the segments
given by their lengths (or by offsets, their boundaries).

The segments are gathered into a padded ``(…, segments, longest)`` block whose padding holds
the reduction's identity (0 for sum and mean, 1 for prod, ∓inf for max/min), which one
ordinary reduction then finishes; so the gradient is the reductions' (a max's split evenly
between ties, a product's exact with zeros) flowing back through the gather. An empty segment
gives ``initial`` when given, else the identity (NaN for mean), as in PyTorch.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ember import dtypes
from ember.errors import ArgumentError, DTypeError, ShapeError
from ember.ops.creation import tensor
from ember.ops.gather import gather
from ember.ops.reduce import normalize_dim
from ember.ops.select import maximum, minimum, where
from ember.ops.shape import movedim
from ember.tensor import Tensor

__all__ = ["segment_reduce"]

_IDENTITY = {"sum": 0.0, "mean": 0.0, "prod": 1.0, "max": -np.inf, "min": np.inf}
_NAMES = {"amax": "max", "amin": "min"}


def _lengths(op: str, lengths: Tensor | None, offsets: Tensor | None,
             indices: Tensor | None) -> np.ndarray:
    """The segment lengths as a host int64 array of shape ``(*batch, segments)``."""
    if indices is not None:
        raise NotImplementedError(f"{op}: indices based reduction is not supported (as in "
                                  "PyTorch). Hint: pass lengths or offsets")
    if lengths is None and offsets is None:
        raise ArgumentError(f"{op}: either lengths or offsets must be given")
    given = lengths if lengths is not None else offsets
    if given.dtype.is_floating_point or given.dtype is dtypes.bool_:
        raise DTypeError(f"{op}: lengths and offsets must be integers, got {given.dtype.name}")
    host = np.asarray(given.detach().cpu().numpy(), dtype=np.int64)
    if host.ndim == 0:
        raise ShapeError(f"{op}: lengths and offsets must have at least one dimension")
    out = host if lengths is not None else np.diff(host, axis=-1)
    if (out < 0).any():
        raise ArgumentError(f"{op}: lengths contains a negative value: {out.tolist()}"
                            if lengths is not None else
                            f"{op}: offsets must not decrease, got {host.tolist()}")
    return out


def segment_reduce(data: Tensor, reduce: str, *, lengths: Tensor | None = None,
                   indices: Tensor | None = None, offsets: Tensor | None = None, axis: int = 0,
                   unsafe: bool = False, initial: float | None = None) -> Tensor:
    """Reduces consecutive segments of ``data`` along ``axis`` with ``reduce`` (``'sum'``,
    ``'mean'``, ``'prod'``, ``'max'``/``'amax'`` or ``'min'``/``'amin'``). The segments:
    ``lengths`` of shape ``data.shape[:axis] + (segments,)``, or ``offsets`` with one more
    entry (their boundaries); the lengths must add up to ``data.shape[axis]`` unless
    ``unsafe`` (then fewer may be covered). ``initial`` joins every segment's reduction.
    Result shape: ``data.shape[:axis] + (segments,) + data.shape[axis + 1:]``.

    Example:
        >>> x = ember.tensor([1.0, 2.0, 3.0, 4.0, 5.0, 6.0])
        >>> ember.segment_reduce(x, "sum", lengths=ember.tensor([2, 0, 3, 1]))
        tensor([ 3.,  0., 12.,  6.])
        >>> ember.segment_reduce(x, "max", offsets=ember.tensor([0, 2, 6]))
        tensor([2., 6.])
    """
    op = "segment_reduce"
    kind = _NAMES.get(reduce, reduce)
    if kind not in _IDENTITY:
        raise ArgumentError(f"{op}: reduce must be one of 'sum', 'prod', 'mean', 'max' ('amax') "
                            f"or 'min' ('amin'), got {reduce!r}")
    if not data.dtype.is_floating_point:
        raise DTypeError(f"{op}: expected a floating data tensor, got {data.dtype.name}. "
                         "Hint: call .float() first")
    lens = _lengths(op, lengths, offsets, indices)
    axis = normalize_dim(axis, data.ndim, op)
    if lens.ndim - 1 != axis or lens.shape[:-1] != tuple(data.shape[:axis]):
        raise ShapeError(f"{op}: lengths of shape {lens.shape} need axis = lengths.ndim - 1 = "
                         f"{lens.ndim - 1} and leading sizes equal to data's "
                         f"{tuple(data.shape[:axis])}, got axis {axis} and data of shape "
                         f"{tuple(data.shape)}")
    n = data.shape[axis]
    covered = lens.sum(-1)
    if (covered > n).any() or (not unsafe and (covered != n).any()):
        raise ShapeError(f"{op}: the lengths of every row must add up to data.shape[{axis}] = "
                         f"{n} (fewer only with unsafe=True), got sums {covered.tolist()}")
    # (at least one column, so that all-empty segments still reduce over their padding)
    segments, longest = lens.shape[-1], max(int(lens.max(initial=0)), 1)
    starts = np.cumsum(lens, -1) - lens
    steps = np.arange(longest)
    where_from = np.minimum(starts[..., None] + steps, max(n - 1, 0))  # (*batch, S, L)
    valid = steps < lens[..., None]
    x = movedim(data, axis, -1)  # (*batch, *rest, n)
    rest = x.ndim - 1 - axis
    spots = where_from.reshape(lens.shape[:-1] + (1,) * rest + (segments * longest,))
    spots = np.broadcast_to(spots, tuple(x.shape[:-1]) + (segments * longest,))
    block_shape = tuple(x.shape[:-1]) + (segments, longest)
    keep = tensor(valid.reshape(lens.shape[:-1] + (1,) * rest + (segments, longest)),
                  device=data.device)
    if n:
        picked = gather(x, -1, tensor(np.ascontiguousarray(spots), device=data.device))
        block = where(keep, picked.reshape(block_shape), _IDENTITY[kind])
    else:  # no elements to gather: every segment is empty
        block = x.new_full(block_shape, _IDENTITY[kind])
    out = _reduce(kind, block, keep, initial)
    return movedim(out, -1, axis)


def _reduce(kind: str, block: Tensor, keep: Tensor, initial: Any) -> Tensor:
    """``kind`` over the last dim of the padded ``block``, ``initial`` joined in."""
    if kind in ("sum", "mean"):
        out = block.sum(-1)
        if initial is not None:
            out = out + initial
        if kind == "mean":
            count = keep.sum(-1).to(block.dtype)
            out = out / count
            if initial is not None:  # an empty segment's mean is initial
                out = where(count == 0, float(initial), out)
        return out
    if kind == "prod":
        out = block.prod(-1)
        return out if initial is None else out * initial
    out = block.amax(-1) if kind == "max" else block.amin(-1)
    if initial is None:
        return out
    return (maximum if kind == "max" else minimum)(out, float(initial))
