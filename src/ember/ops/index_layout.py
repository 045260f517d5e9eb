"""The layout of advanced indexing's result, as PyTorch's: its TensorIterator orders the
result's dims (:func:`~ember.layouts.stride_order`) as the source's strides run (the indexed
dims, moved to the front when they are not adjacent, replaced by the index shape at stride
0), breaking ties by the index tensors' strides, where NumPy puts the index dims first in
memory. And what its node shows, as PyTorch's ``IndexBackward0`` (:data:`INDEX_SAVED`)."""

from __future__ import annotations

from functools import lru_cache
from typing import Any

import numpy as np

from ember.backend import MetaArray
from ember.layouts import broadcast_strides, dense_strides, stride_order


def _view_strides(shape: tuple, strides: list, before: int, after: int) -> list:
    """The strides PyTorch's ``view`` gives ``shape`` (``strides``) with ``before`` leading
    and ``after`` trailing dims of size 1 added (its ``computeStride``, for this case)."""
    if not shape:
        return [1] * (before + after)
    numel, base = 1, strides[-1]
    for d in range(len(shape) - 1, 0, -1):
        numel *= shape[d]
        if shape[d - 1] != 1 and strides[d - 1] != numel * base:
            numel, base = 1, strides[d - 1]
    return [numel * shape[0] * base] * before + list(strides) + [strides[-1]] * after


def _operands(a: tuple, idx: tuple, dims: tuple) -> tuple[list, list]:
    """The shape of the iteration and the element strides of its inputs as PyTorch's
    ``index`` sets them up: the source with the indexed dims (moved to the front when not
    adjacent) replaced by the index shape at stride 0, and each index tensor expanded (from
    layouts: shapes and element strides)."""
    b = np.broadcast_shapes(*(i[0] for i in idx))
    shape, src = list(a[0]), list(a[1])
    if dims[-1] - dims[0] != len(dims) - 1:  # (its transposeToFront)
        order = list(dims) + [d for d in range(len(shape)) if d not in dims]
        src, shape = [src[d] for d in order], [shape[d] for d in order]
        dims = tuple(range(len(dims)))
    before, after = dims[0], len(shape) - dims[-1] - 1
    full = shape[:before] + list(b) + shape[len(shape) - after:]
    operands = [src[:before] + [0] * len(b) + src[len(src) - after:]]
    for i in idx:
        st = _view_strides(b, list(broadcast_strides(*i, b)), before, after)
        sizes = [1] * before + list(b) + [1] * after
        operands.append([0 if m == 1 and n != 1 else s for s, m, n in zip(st, sizes, full)])
    return full, operands


def index_strides(a: Any, idx: tuple, dims: tuple) -> tuple:
    """The element strides PyTorch gives ``a[index arrays idx at dims]``."""
    def layout(x: Any) -> tuple:
        return tuple(x.shape), tuple(s // x.itemsize for s in x.strides)
    return _index_strides(layout(a), tuple(map(layout, idx)), dims)


@lru_cache(maxsize=512)
def _index_strides(a: tuple, idx: tuple, dims: tuple) -> tuple:
    shape, operands = _operands(a, idx, dims)
    return dense_strides(shape, stride_order(tuple(shape), *operands))


def _c_contiguous(a: Any) -> bool:
    """C-contiguous, dims of size 1 included (NumPy's flag overlooks their strides, which
    PyTorch's iterator reads)."""
    if not a.flags.c_contiguous:
        return False
    if 1 not in a.shape:
        return True
    step = a.itemsize
    for n, s in zip(reversed(a.shape), reversed(a.strides)):
        if s != step:
            return False
        step *= n
    return True


def take_in_torch_layout(xp: Any, a: Any, i: Any, d: int) -> Any:
    """``a`` indexed by the 1-d ``i`` at dim ``d`` (the result's dims are ``a``'s) in
    PyTorch's layout. ``take`` writes its result in C order: from ``a`` transposed into that
    layout's dim order it comes out in PyTorch's, with no second pass. ``take`` copies a
    source that is not C-contiguous whole first; from such a one, fancy indexing (which reads
    only the elements taken), then :func:`in_torch_layout`."""
    if _c_contiguous(a) and _c_contiguous(i):
        return xp.take(a, i, axis=d)
    want = index_strides(a, (i,), (d,))
    order = sorted(range(a.ndim), key=lambda q: -want[q])  # (outermost first)
    at = a.transpose(order)
    if at.flags.c_contiguous:
        return xp.take(at, i, axis=order.index(d)).transpose(np.argsort(order))
    return in_torch_layout(a[(slice(None),) * d + (i,)], a, (i,), (d,))


def in_torch_layout(r: Any, a: Any, idx: tuple, dims: tuple) -> Any:
    """``r`` (``a[index arrays idx at dims]`` as NumPy laid it out, or a meta array) in
    PyTorch's layout: a copy where the strides differ. From a C-contiguous ``a`` and index
    arrays PyTorch's is C-contiguous (its iterator keeps every dim in place): the common case,
    found without :func:`index_strides`."""
    if r.size <= 1:
        return r
    if _c_contiguous(a) and all(_c_contiguous(i) for i in idx):
        return r if r.flags.c_contiguous else r.copy()
    want = tuple(s * r.itemsize for s in index_strides(a, idx, dims))
    if all(s == w for s, w, n in zip(r.strides, want, r.shape) if n != 1):
        return r
    if isinstance(r, MetaArray):
        return MetaArray(r.shape, r.dtype, want)
    out = np.ndarray(r.shape, r.dtype, np.empty(r.size, r.dtype), 0, want)
    out[...] = r
    return out


def _saved_indices(node: Any) -> tuple:
    """``x[key].grad_fn._saved_indices``: an index tensor per indexed dim, None for a dim
    before the last indexed one that is not (a mask reads as its ``nonzero()`` tensors)."""
    dims = node.params["dims"]
    at = dict(zip(dims, node.inputs[1:]))
    return tuple(at.get(d) for d in range(max(dims) + 1))


# PyTorch's names of what IndexBackward0 saves: the primitive's ``saved_as``
INDEX_SAVED = {"indices": _saved_indices,
               "self_sym_sizes": lambda node: tuple(node.inputs[0].shape)}
