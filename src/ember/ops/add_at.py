"""``view[key] += values`` with repeated indices accumulating (NumPy's ``add.at``), run
where it can as one of the faster forms that add the same numbers in the same order: rows at
a vector index by numba's embedding kernel, a scatter's grid as one flat index. The gradients
of indexing, gather and ``index_add`` sum through it; index_put writes by :func:`write_at`."""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from ember.backend import compiled
from ember.ops.torch_steps import HALF_ARRAYS

__all__: list[str] = []


def write_at(xp: Any, view: Any, key: Any, values: Any, mode: str, indexed: bool,
             failed: ValueError | None = None) -> None:
    """``view[key] = values`` (``mode`` "set") or ``+=`` ("add": accumulating where ``key``
    is ``indexed`` by arrays, through :func:`add_at`); a ``view`` of None re-raises ``failed``
    (an index_put that found no writable array)."""
    if view is None:
        raise failed
    if mode == "add" and indexed:
        add_at(xp, view, key, values)
    elif mode == "add":
        view += values
    else:
        view[key] = values


def add_at(xp: Any, view: Any, key: tuple, values: Any, wide: bool = False) -> None:
    """``view[key] += values``, repeated indices accumulating, as ``xp.add.at``. NumPy's
    ``add.at`` is fast (~5 ns an element against ~50) only for one index into a 1-D array, so
    a 1-D index along a dimension of a larger array runs as one such call per leading slice,
    the trailing dimensions folded into the index: the same sums in the same order, 10x
    faster on the gradient of a gather such as roi_align's. A half float view sums in its own
    type step by step, as PyTorch's index_put_ (4096 ones add to float16's 2048), or with
    ``wide`` in float32, rounded once, as its scatter_add (4096)."""
    if wide and view.itemsize == 2 and view.dtype in HALF_ARRAYS:
        _half_add_at(xp, view, key, values)
        return
    dim = len(key) - 1
    index = key[dim]
    if xp is np and view.ndim == 1 and index.ndim > 1:  # (gather's gradient: flat positions)
        values = np.broadcast_to(values, index.shape).reshape(-1)
        np.add.at(view, index.reshape(-1), values)
        return
    if (xp is not np or view.ndim == 1 or index.ndim != 1 or not view.flags.c_contiguous
            or any(type(k) is not slice for k in key[:dim])):
        if xp is np and _flat_add_at(view, key, values):
            return
        xp.add.at(view, key, values)
        return
    n, m, inner = view.shape[dim], index.shape[0], view.shape[dim + 1:]
    post = math.prod(inner)
    if math.prod(view.shape[:dim]) * m * post < 1024:  # too small for the loop to pay
        xp.add.at(view, key, values)
        return
    index = np.where(index < 0, index + n, index) if m and index.min() < 0 else index
    values = np.broadcast_to(values, view.shape[:dim] + (m,) + inner)
    if _rows_added_in_numba(view, index, values, dim):
        return
    step = max(1, (1 << 20) // post)  # folded indices in chunks of about a million
    for start in range(0, m, step):
        part = index[start:start + step]
        flat = (part.astype(np.intp, copy=False)[:, None] * post + np.arange(post)).ravel()
        for lead in np.ndindex(view.shape[:dim]):
            np.add.at(view[lead].reshape(-1), flat, values[lead][start:start + step].ravel())


def _half_add_at(xp: Any, view: Any, key: tuple, values: Any) -> None:
    """:func:`add_at` into a half float ``view``, summed in float32: over just the positions
    the key's index arrays reach (each once, their sums rounded once) where the arrays are
    adjacent and in range; over a float32 copy of the whole view otherwise."""
    at = [d for d, k in enumerate(key) if type(k) is not slice]
    values = values.astype(np.float32)
    if (at and at == list(range(at[0], at[-1] + 1))
            and all(k == slice(None) for k in key if type(k) is slice)):
        sizes = view.shape[at[0]:at[-1] + 1]
        arrays = xp.broadcast_arrays(*(key[d] for d in at))
        if all(a.size == 0 or (-n <= a.min() and a.max() < n) for a, n in zip(arrays, sizes)):
            ids = xp.ravel_multi_index(tuple(a % n for a, n in zip(arrays, sizes)), sizes)
            unique, inverse = xp.unique(ids, return_inverse=True)
            reached = key[:at[0]] + xp.unravel_index(unique, sizes)
            total = view[reached].astype(np.float32)
            add_at(xp, total, key[:at[0]] + (inverse.reshape(ids.shape),), values)
            view[reached] = total
            return
    total = view.astype(np.float32)
    add_at(xp, total, key, values)
    view[...] = total


def _rows_added_in_numba(view: Any, index: Any, values: Any, dim: int) -> bool:
    """:func:`_add_at`'s rows (everything after ``dim``) added at ``index`` by numba's
    embedding kernel in one call, the leading slices folded into the rows (slice ``l``'s
    index offset by ``l`` times the rows of a slice): the same sums in the same order as
    ``add.at``, without its index of every element (~3x on index_select's gradient). False,
    doing nothing, where it does not apply (numba off, other dtypes, an index out of range:
    ``add.at`` raises)."""
    if (view.dtype not in (np.float32, np.float64) or values.dtype != view.dtype
            or not view.flags.writeable or index.dtype not in (np.int32, np.int64)
            or not compiled.numba_enabled() or index.min() < 0
            or index.max() >= view.shape[dim]):
        return False
    kernels = compiled.load("ember.ops.embedding_numba")
    if kernels is None:
        return False
    n, post = view.shape[dim], math.prod(view.shape[dim + 1:])
    lead = math.prod(view.shape[:dim])
    if post == 1:  # (elements, not rows: no folded index of lead x m positions)
        kernels.add_columns_at(np.ascontiguousarray(values).reshape(lead, index.shape[0]),
                               np.ascontiguousarray(index), view.reshape(lead, n))
        return True
    rows = np.ascontiguousarray(values).reshape(lead * index.shape[0], post)
    folded = (np.arange(lead, dtype=np.int64)[:, None] * n + index).reshape(-1)
    kernels.add_rows_at(rows, folded, view.reshape(lead * n, post))
    return True


def _flat_add_at(view: Any, key: tuple, values: Any) -> bool:
    """``np.add.at(view, key, values)`` for a key of one integer array per dimension (a
    scatter's grid), run as one flat index into the C-contiguous ``view``: the same sums in
    the same order (the key's broadcast shape in C order), without ``add.at``'s slow path
    for several or multi-dimensional indices (~10x). False, doing nothing, for other keys."""
    if (len(key) != view.ndim or view.ndim < 2 or not view.flags.c_contiguous
            or not all(type(k) is np.ndarray and k.dtype.kind in "iu" for k in key)):
        return False
    shape = np.broadcast_shapes(*(k.shape for k in key))
    if math.prod(shape) < 1024 or any(k.size and (k.min() < 0 or k.max() >= n)
                                      for k, n in zip(key, view.shape, strict=True)):
        return False  # (small: not worth it; add.at wraps negative indices, refuses others)
    flat = flat_index(key, view.shape)
    np.add.at(view.reshape(-1), flat.reshape(-1), np.broadcast_to(values, shape).reshape(-1))
    return True


def flat_index(key: tuple, shape: tuple) -> Any:
    """The C-order flat positions in an array of ``shape`` of a key of one integer array per
    dimension (broadcast), as intp: an int32 key's products would wrap past 2**31."""
    flat = np.zeros(np.broadcast_shapes(*(k.shape for k in key)), dtype=np.intp)
    stride = 1
    for k, n in zip(key[::-1], shape[::-1], strict=True):
        flat += k.astype(np.intp, copy=False) * stride
        stride *= n
    return flat
