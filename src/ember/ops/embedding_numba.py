"""Embedding's backward in numba (imported only when
:func:`ember.backend.compiled.numba_enabled`; chosen by :mod:`ember.ops.embedding`): the
gradient's rows added into the weight gradient's rows at their indices, in one pass and in
order, where NumPy sorts the indices, gathers the rows in that order (a copy of the whole
gradient) and sums the runs with ``add.reduceat`` (~10× slower on a language model's
(2048, 256) gradient)."""

from __future__ import annotations

import numpy as np
from numba import types

from ember.backend.compiled import njit
from ember.ops.half_numba import float16_bit
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


@njit(types.uint16(types.uint32))
def bfloat16_bit(b):
    """The bfloat16 bits nearest (ties to even) the float32 whose bits are ``b``; a NaN
    becomes the quiet one of its sign (as ml_dtypes' conversion)."""
    if b & 0x7FFFFFFF > 0x7F800000:
        return np.uint16(((b >> 16) & 0x8000) | 0x7FC0)
    return np.uint16((b + 0x7FFF + ((b >> 16) & 1)) >> 16)


@njit([types.void(types.Array(types.uint16, 2, "C", readonly=ro_g),
                  types.Array(i, 1, "C", readonly=ro_i), types.Array(types.float32, 1, "C"),
                  types.Array(types.float32, 1, "C", readonly=True), types.boolean,
                  types.int64, types.Array(types.uint16, 2, "C"))
       for i in (types.int32, types.int64) for ro_g in (False, True) for ro_i in (False, True)])
def add_half_rows_at(grad, indices, alpha, widen, brain, fused, out):
    """``out[indices[i]] += alpha[k] * grad[i]`` row by row, in order, on float16 (bfloat16
    where ``brain``) bits, each sum rounded to the half dtype from float32: the product added
    unrounded in the first ``fused`` columns, rounded to the half dtype first after them
    (``widen``: each half's float32). A NaN sum keeps the NaN it adds to. Indices are in
    range."""
    for i in range(indices.size):
        k = indices[i]
        a, row, target = alpha[k], grad[i], out[k]
        for j in range(row.size):
            p = a * widen[row[j]]
            if j >= fused:
                p = widen[_half_bit(np.float32(p).view(np.uint32), brain)]
            t = widen[target[j]]
            total = t if t != t else t + p
            target[j] = _half_bit(np.float32(total).view(np.uint32), brain)


@njit(types.uint16(types.uint32, types.boolean))
def _half_bit(b, brain):
    """The bfloat16 (``brain``) or float16 bits nearest the float32 whose bits are ``b``."""
    if brain:
        return bfloat16_bit(b)
    return float16_bit(b)
