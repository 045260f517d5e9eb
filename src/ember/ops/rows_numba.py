"""Softmax, log_softmax, standardization, layer norm and their gradients along the contiguous
rows of an array, in numba (imported only when :func:`ember.backend.compiled.numba_enabled`;
chosen by :mod:`ember.ops.rows_kernel` for softmax and normalization): each row is read from memory
once and its passes run in cache, where NumPy makes four to six passes over the whole array
and allocates temporaries.

A running maximum or sum is a chain of dependent operations that the compiler may not reorder
(float addition is not associative), so it would not vectorize: the maximum is kept as four
running maxima, and the sums are functions whose additions may be reordered (into vector
partial sums), in float64. The layer-norm kernels are compiled whole with reordering allowed,
so that their sums run inside the row's passes (the backward's in its first pass, not two
more passes through summing functions): ~30 % faster.
"""

from __future__ import annotations

import numpy as np
from numba import types

from ember.backend.compiled import njit
from ember.ops.erf_numba import exp_nonpositive
from ember.ops.im2col_numba import FLOATS

# the digest of erf_numba.py, whose code the kernels below compile: numba's disk
# cache sees an edit of this file only (tests/backend/test_numba_dependencies.py)
DEPENDENCY_DIGEST = "6e22ae114aae4d87"


def _arrays(f: types.Type, ndim: int) -> list[types.Array]:
    return [types.Array(f, ndim, "C", readonly=ro) for ro in (False, True)]


_F32 = types.float32


def _rows_into(f: types.Type, inputs: int, outputs: int, *extra: types.Type) -> list:
    """Signatures of a kernel of ``inputs`` (rows, n) arrays, the first possibly read-only (a
    memory-mapped input: the callers pass no other read-only array), into ``outputs``
    writable ones, then ``extra`` arguments."""
    writable = types.Array(f, 2, "C")
    return [types.void(first, *(writable,) * (inputs - 1 + outputs), *extra)
            for first in _arrays(f, 2)]


@njit("float32(float32, float32)")
def _larger(a, b):
    """a if it is larger than b, else b (one instruction; a nan in the row makes every
    ``exp(x - max)`` of it nan, whatever the maximum, so its softmax is nan as NumPy's)."""
    return a if a > b else b


@njit([_F32(row) for row in _arrays(_F32, 1)])
def _row_max(row):
    """The row's maximum, as four running maxima that the CPU overlaps."""
    n = row.size
    whole = n - n % 4
    a = b = c = d = row[0]
    for j in range(0, whole, 4):
        a = _larger(row[j], a)
        b = _larger(row[j + 1], b)
        c = _larger(row[j + 2], c)
        d = _larger(row[j + 3], d)
    for j in range(whole, n):
        a = _larger(row[j], a)
    return _larger(_larger(a, b), _larger(c, d))


@njit([types.float64(row) for f in FLOATS for row in _arrays(f, 1)], reassociate=True)
def _sum(row):
    """Σ row, in float64."""
    total = 0.0
    for j in range(row.size):
        total += row[j]
    return total


@njit([types.float64(row, types.float64) for f in FLOATS for row in _arrays(f, 1)],
      reassociate=True)
def _squares(row, mean):
    """Σ (row - mean)², in float64."""
    total = 0.0
    for j in range(row.size):
        d = row[j] - mean
        total += d * d
    return total


@njit([types.float64(a, types.Array(f, 1, "C")) for f in FLOATS for a in _arrays(f, 1)],
      reassociate=True)
def _dot(a, b):
    """Σ a·b, in float64."""
    total = 0.0
    for j in range(a.size):
        total += a[j] * b[j]
    return total


@njit(_rows_into(_F32, 1, 1))
def softmax_rows(x, out):
    """Softmax of each row of ``x`` into ``out`` (both (rows, n), n ≥ 1)."""
    for r in range(x.shape[0]):
        row, o = x[r], out[r]
        top = _row_max(row)
        for j in range(row.size):
            o[j] = exp_nonpositive(row[j] - top)
        scale = np.float32(1.0 / _sum(o))
        for j in range(row.size):
            o[j] *= scale


@njit(_rows_into(_F32, 1, 1))
def log_softmax_rows(x, out):
    """log_softmax ``x - max - log Σ exp(x - max)`` of each row of ``x`` into ``out`` (both
    (rows, n), n ≥ 1), the sum in float64."""
    for r in range(x.shape[0]):
        row, o = x[r], out[r]
        top = _row_max(row)
        for j in range(row.size):
            o[j] = exp_nonpositive(row[j] - top)
        log_sum = np.float32(np.log(_sum(o)))
        for j in range(row.size):
            o[j] = (row[j] - top) - log_sum


@njit([sig for f in FLOATS for sig in _rows_into(f, 2, 1)])
def softmax_grad_rows(v, y, out):
    """softmax's gradient ``y·(v - Σ v·y)`` of each row (cotangent ``v``, softmax ``y``)
    into ``out``."""
    for r in range(v.shape[0]):
        g, p, o = v[r], y[r], out[r]
        total = p.dtype.type(_dot(g, p))
        for j in range(g.size):
            o[j] = p[j] * (g[j] - total)


@njit([sig for f in FLOATS for sig in _rows_into(f, 1, 3, types.float64)])
def standardize_rows(x, out, mean, var, eps):
    """``(x - mean) / sqrt(var + eps)`` of each row of ``x`` into ``out``, with the row's mean
    and (biased) variance (``mean`` and ``var``: (rows, 1)), both summed in float64."""
    n = x.shape[1]
    for r in range(x.shape[0]):
        row, o = x[r], out[r]
        m = _sum(row) / n
        v = _squares(row, m) / n
        center, scale = row.dtype.type(m), row.dtype.type(1.0 / np.sqrt(v + eps))
        for j in range(n):
            o[j] = (row[j] - center) * scale
        mean[r, 0], var[r, 0] = center, v


@njit([sig for f in FLOATS for sig in _rows_into(f, 3, 1)])
def standardize_grad_rows(g, y, rstd, out):
    """standardize's gradient ``rstd·(g - mean(g) - y·mean(g·y))`` of each row (cotangent
    ``g``, standardized ``y``, ``rstd``: (rows, 1)) into ``out``."""
    n = g.shape[1]
    for r in range(g.shape[0]):
        gr, yr, o = g[r], y[r], out[r]
        mean_g = gr.dtype.type(_sum(gr) / n)
        mean_gy = gr.dtype.type(_dot(gr, yr) / n)
        scale = rstd[r, 0]
        for j in range(n):
            o[j] = scale * (gr[j] - mean_g - yr[j] * mean_gy)


@njit([sig for f in FLOATS for sig in _rows_into(f, 4, 1)], reassociate=True)
def standardize_input_grad_rows(g, x, mean, rstd, out):
    """standardize's gradient from its input: ``standardize_grad_rows`` of ``y = (x -
    mean)·rstd``, built in the row's passes (``mean``, ``rstd``: (rows, 1)), into ``out``."""
    n = g.shape[1]
    for r in range(g.shape[0]):
        gr, xr, o = g[r], x[r], out[r]
        center, scale = mean[r, 0], rstd[r, 0]
        sum_g = sum_gy = 0.0
        for j in range(n):
            sum_g += gr[j]
            sum_gy += gr[j] * ((xr[j] - center) * scale)
        mean_g, mean_gy = g.dtype.type(sum_g / n), g.dtype.type(sum_gy / n)
        for j in range(n):
            o[j] = scale * (gr[j] - mean_g - (xr[j] - center) * scale * mean_gy)


def _layer_norm_signatures(f: types.Type) -> list:
    rows, vector = types.Array(f, 2, "C"), types.Array(f, 1, "C")
    return [types.void(first, rows, rows, rows, vector, vector, types.float64)
            for first in _arrays(f, 2)]


@njit([sig for f in FLOATS for sig in _layer_norm_signatures(f)], reassociate=True)
def layer_norm_rows(x, out, mean, rstd, weight, bias, eps):
    """Layer norm ``(x - mean)·rstd·weight + bias`` of each row of ``x`` into ``out``, with the
    row's mean and ``rstd = 1/sqrt(var + eps)`` ((rows, 1)), its statistics summed in
    float64."""
    n = x.shape[1]
    for r in range(x.shape[0]):
        row, o = x[r], out[r]
        total = 0.0
        for j in range(n):
            total += row[j]
        m = total / n
        squares = 0.0
        for j in range(n):
            d = row[j] - m
            squares += d * d
        center = row.dtype.type(m)
        scale = row.dtype.type(1.0 / np.sqrt(squares / n + eps))
        for j in range(n):
            o[j] = (row[j] - center) * scale * weight[j] + bias[j]
        mean[r, 0], rstd[r, 0] = center, scale


def _layer_norm_grad_signatures(f: types.Type) -> list:
    rows, vector, sums = types.Array(f, 2, "C"), types.Array(f, 1, "C"), \
        types.Array(types.float64, 1, "C")
    return [types.void(first, rows, rows, rows, rows, vector, sums, sums)
            for first in _arrays(f, 2)]


@njit([sig for f in FLOATS for sig in _layer_norm_grad_signatures(f)], reassociate=True)
def layer_norm_grad_rows(g, x, mean, rstd, dx, weight, weight_sum, bias_sum):
    """Layer norm's backward for the rows of the output gradient ``g`` and input ``x``: the
    input gradient ``rstd·(h - mean(h) - x̂·mean(h·x̂))``, ``h = g·weight`` and ``x̂ = (x -
    mean)·rstd``, into ``dx``; ``Σ g·x̂`` and ``Σ g`` over the rows added into the float64
    ``weight_sum`` and ``bias_sum`` (the weight's and bias's gradients)."""
    n = g.shape[1]
    xhat, h = np.empty(n, g.dtype), np.empty(n, g.dtype)
    for r in range(g.shape[0]):
        gr, xr, o = g[r], x[r], dx[r]
        center, scale = mean[r, 0], rstd[r, 0]
        sum_h = sum_hx = 0.0
        for j in range(n):
            xhat[j] = (xr[j] - center) * scale
            h[j] = gr[j] * weight[j]
            sum_h += h[j]
            sum_hx += h[j] * xhat[j]
        for j in range(n):
            weight_sum[j] += gr[j] * xhat[j]
            bias_sum[j] += gr[j]
        mean_h, mean_hx = g.dtype.type(sum_h / n), g.dtype.type(sum_hx / n)
        for j in range(n):
            o[j] = scale * (h[j] - mean_h - xhat[j] * mean_hx)
