"""Constants that follow a dynamic axis, rebuilt from the run-time shape. The IR holds a
constant made from a size (``ember.arange(T)``, a causal mask ``ember.ones(T, T).triu(1)``,
``ember.zeros(B, 4)``) as its traced value; the exporter compares it with the same constant
in the second trace (the dynamic axes resized) and, when both are one of these patterns with
the same parameters, writes ONNX nodes that compute it from the run-time sizes:

- filled with one value: ``Expand``;
- ``start + step * arange(n)`` along one axis (the others of size 1): ``Range``;
- two values split along a diagonal of the last two dimensions (``triu``/``tril`` of a
  filled tensor, ``where`` on such a mask): ``Trilu`` of ones, then ``Where``;
- one element that is an input's dynamic size (``loss.sum() / x.shape[0]``): ``Shape``.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ember.dtypes import bool_, int64


def rebuild(ctx: Any, var: Any, array: np.ndarray, twin: np.ndarray) -> str | None:
    """ONNX nodes computing the constant ``var`` (traced as ``array``, as ``twin`` in the
    second trace) from the run-time shape; None when it follows none of the patterns (or no
    input dimension gives its dynamic sizes: then ``ctx`` has recorded why)."""
    if array.ndim != twin.ndim or not array.size or not twin.size:
        return None
    fill = _filled(array, twin)
    arange = _arange(array, twin) if fill is None else None
    tri = _triangle(array, twin) if fill is None and arange is None else None
    if fill is None and arange is None and tri is None:
        return _size(ctx, var, array, twin)
    shape = ctx.shape_tensor(var, [], infer_one=False)
    if shape is None:
        return None
    dtype = var.dtype
    if fill is not None:
        return ctx.node("Expand", [ctx.constant(fill, var.name), shape])
    if arange is not None:
        axis, start, step = arange
        count = ctx.node("Gather", [shape, ctx.constant(np.asarray(axis, dtype=np.int64))])
        steps = ctx.node("Range", [ctx.constant(np.asarray(0, dtype=np.int64)), count,
                                   ctx.constant(np.asarray(1, dtype=np.int64))])
        values = ctx.node("Add", [ctx.node("Mul", [ctx.cast(steps, int64, dtype),
                                                   ctx.scalar(step, dtype)]),
                                  ctx.scalar(start, dtype)])
        return ctx.node("Reshape", [values, shape])
    upper, k, inside, outside = tri
    mask = triangle_mask(ctx, shape, k, upper)
    if dtype is bool_:  # (two values: one is True; onnxruntime has no Where on bools)
        return mask if inside else ctx.node("Not", [mask])
    return ctx.node("Where", [mask, ctx.scalar(inside, dtype), ctx.scalar(outside, dtype)])


def _size(ctx: Any, var: Any, array: np.ndarray, twin: np.ndarray) -> str | None:
    """One element, in each trace the size of the same dynamic dimension of an input (a
    Python ``int`` from ``x.shape`` in arithmetic), read from that dimension at run time."""
    if array.size != 1 or twin.size != 1 or array.dtype.kind not in "iuf":
        return None
    sizes = (array.reshape(-1)[0], twin.reshape(-1)[0])
    if not all(float(s).is_integer() for s in sizes):  # (inf and NaN too: refused)
        return None
    dim = ctx.input_dim(*(int(s) for s in sizes))
    if dim is None:
        return None
    size = ctx.cast(dim, int64, var.dtype)
    return ctx.node("Reshape", [size, ctx.ints(array.shape)])


def triangle_mask(ctx: Any, shape: str, k: int, upper: bool) -> str:
    """A bool tensor of the run-time ``shape`` (a 1-D int64 tensor), true on and above
    (``upper``) or on and below the ``k``-th diagonal of its last two dimensions."""
    ones = ctx.node("Expand", [ctx.constant(np.asarray(1, dtype=np.int64), "one"), shape])
    tri = ctx.node("Trilu", [ones, ctx.constant(np.asarray(k, dtype=np.int64), "k")],
                   upper=int(upper))
    return ctx.cast(tri, int64, bool_)


def _same(a: np.ndarray, b: np.ndarray) -> bool:
    return a.shape == b.shape and bool(np.array_equal(a, b, equal_nan=True))


def _filled(array: np.ndarray, twin: np.ndarray) -> np.ndarray | None:
    """The 0-d value both constants hold everywhere."""
    first = array.reshape(-1)[:1].reshape(())
    if _same(array, np.broadcast_to(first, array.shape)) and \
            _same(twin, np.broadcast_to(first, twin.shape)):
        return first
    return None


def _arange(array: np.ndarray, twin: np.ndarray) -> tuple[int, Any, Any] | None:
    """``(axis, start, step)`` when both constants are ``start + step * arange(n)`` along
    ``axis`` (computed in their dtype, as the exported Range, Cast, Mul and Add do)."""
    long = {d for a in (array, twin) for d, s in enumerate(a.shape) if s > 1}
    if len(long) != 1 or array.dtype.kind not in "iuf":
        return None
    axis = long.pop()  # (one of them may have one element: an index grid of a batch of 1)
    flat = (array if array.size > 1 else twin).reshape(-1)
    start, step = flat[0], flat[1] - flat[0]
    for a in (array, twin):
        n = a.shape[axis]
        if a.size != n:
            return None
        made = np.arange(n).astype(a.dtype) * step + start
        if not _same(a.reshape(-1), made.astype(a.dtype)):
            return None
    return axis, start, step


def _triangle(array: np.ndarray, twin: np.ndarray) -> tuple[bool, int, Any, Any] | None:
    """``(upper, k, inside, outside)`` when both constants hold ``inside`` on and above
    (``upper``) or below the ``k``-th diagonal of their last two dimensions, ``outside``
    elsewhere."""
    if array.ndim < 2:
        return None
    values = np.unique(array)
    if len(values) != 2:
        return None
    rows, cols = np.indices(array.shape[-2:])
    offset = cols - rows
    for inside, outside in (values, values[::-1]):
        where = np.broadcast_to(array == inside, array.shape).reshape(-1, *array.shape[-2:])
        if not where[0].any():
            continue
        for upper in (True, False):
            k = int(offset[where[0]].min() if upper else offset[where[0]].max())
            if all(_same(a, _pattern(a.shape, upper, k, inside, outside).astype(a.dtype))
                   for a in (array, twin)):
                return upper, k, inside, outside
    return None


def _pattern(shape: tuple, upper: bool, k: int, inside: Any, outside: Any) -> np.ndarray:
    rows, cols = np.indices(shape[-2:])
    mask = cols - rows >= k if upper else cols - rows <= k
    return np.broadcast_to(np.where(mask, inside, outside), shape)
