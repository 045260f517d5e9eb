"""Embedding's backward in numba (imported only when
:func:`ember.backend.compiled.numba_enabled`; chosen by :mod:`ember.ops.embedding`): the
gradient's rows added into the weight gradient's rows at their indices, in one pass and in
order, where NumPy sorts the indices, gathers the rows in that order (a copy of the whole
gradient) and sums the runs with ``add.reduceat`` (~10× slower on a language model's
(2048, 256) gradient)."""

from __future__ import annotations

from numba import types

from ember.backend.compiled import njit
from ember.ops.im2col_numba import FLOATS


def _signatures(result: types.Type) -> list:
    """``result(grad, indices, out)`` for each float dtype and int32/int64 indices, the
    gradient and the indices read-only or not."""
    return [result(types.Array(f, 2, "C", readonly=ro_g),
                   types.Array(i, 1, "C", readonly=ro_i), types.Array(f, 2, "C"))
            for f in FLOATS for i in (types.int32, types.int64)
            for ro_g in (False, True) for ro_i in (False, True)]


@njit(_signatures(types.int64))
def add_rows_at(grad, indices, out):
    """``out[indices[i]] += grad[i]`` for every row ``i`` of ``grad``, in order (each of
    ``out``'s rows is its rows' sum from left to right). Returns the position of the first
    index outside ``out``'s rows (none added after it), or -1."""
    n = out.shape[0]
    for i in range(indices.size):
        k = indices[i]
        if k < 0 or k >= n:
            return i
        row, target = grad[i], out[k]
        for j in range(row.size):
            target[j] += row[j]
    return -1


@njit(_signatures(types.void))
def add_columns_at(grad, indices, out):
    """``out[:, indices[i]] += grad[:, i]`` for every column ``i``, each row of ``out`` its
    columns' sums in order (the indices are in range): :func:`add_rows_at` for rows of one
    element (a padding's gradient), without an index per leading slice."""
    for r in range(grad.shape[0]):
        row, target = grad[r], out[r]
        for i in range(indices.size):
            target[indices[i]] += row[i]
