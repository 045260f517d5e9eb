"""Group norm and its backward over the samples of a C-contiguous (N, C, …) array, in numba
(imported only when :func:`ember.backend.compiled.numba_enabled`; chosen by
:mod:`ember.ops.group_norm`). Each sample is one row of ``C·spatial`` values, its groups
contiguous runs of that row: the statistics and the per-channel scale and shift (forward), the
input gradient and the weight's and bias's per-channel sums (backward) are made in one visit of
each group, where the composite ``standardize``, ``mul``, ``add`` and their backward make about
ten passes over the activation.

The statistics are :mod:`ember.ops.rows_numba`'s float64 sums (so the normalised values are
those ``standardize`` gives); the backward is compiled whole with its additions reorderable, so
that its sums vectorize.
"""

from __future__ import annotations

import numpy as np
from numba import types

from ember.backend.compiled import njit
from ember.ops.im2col_numba import FLOATS
from ember.ops.rows_numba import _squares, _sum

# the digest of rows_numba.py, whose code the kernels below compile: numba's disk
# cache sees an edit of this file only (tests/backend/test_numba_dependencies.py)
DEPENDENCY_DIGEST = "357a7037cdc2f6a6"


def _signatures(f: types.Type, inputs: int, outputs: int, *extra: types.Type) -> list:
    """``inputs`` (N, n) input rows, then ``outputs`` writable arrays of 2 dims and ``extra``
    arguments."""
    rows = types.Array(f, 2, "C")
    return [types.void(*(rows,) * (inputs + outputs), *extra)]


_VECTOR = {f: types.Array(f, 1, "C") for f in FLOATS}
_SUMS = types.Array(types.float64, 1, "C")


@njit([sig for f in FLOATS
       for sig in _signatures(f, 1, 3, _VECTOR[f], _VECTOR[f], types.float64)])
def group_norm_rows(x, out, mean, rstd, weight, bias, eps):
    """Group norm ``(x - mean)·rstd·weight + bias`` of each sample row of ``x`` ((N, C·s):
    C channels of s values, ``mean.shape[1]`` groups of consecutive channels) into ``out``,
    with each group's mean and ``rstd = 1/sqrt(var + eps)`` ((N, groups)), the statistics
    summed in float64."""
    groups, channels = mean.shape[1], weight.size
    per = channels // groups
    spatial = x.shape[1] // channels
    n = per * spatial
    for r in range(x.shape[0]):
        for k in range(groups):
            row, o = x[r, k * n:(k + 1) * n], out[r, k * n:(k + 1) * n]
            m = _sum(row) / n
            center = row.dtype.type(m)
            scale = row.dtype.type(1.0 / np.sqrt(_squares(row, m) / n + eps))
            for c in range(per):  # (loops from 0 over a channel's slice vectorize)
                w, b = weight[k * per + c], bias[k * per + c]
                xc, oc = row[c * spatial:(c + 1) * spatial], o[c * spatial:(c + 1) * spatial]
                for j in range(spatial):
                    oc[j] = (xc[j] - center) * scale * w + b
            mean[r, k], rstd[r, k] = center, scale


@njit([sig for f in FLOATS for sig in _signatures(f, 4, 1, _VECTOR[f], _SUMS, _SUMS)],
      reassociate=True)
def group_norm_grad_rows(g, x, mean, rstd, dx, weight, weight_sum, bias_sum):
    """Group norm's backward for the sample rows of the output gradient ``g`` and input ``x``
    (as :func:`group_norm_rows` sees them): the input gradient ``rstd·(h - mean(h) -
    x̂·mean(h·x̂))`` per group, ``h = g·weight`` and ``x̂ = (x - mean)·rstd``, into ``dx``;
    each channel's ``Σ g·x̂`` and ``Σ g`` added into the float64 ``weight_sum`` and
    ``bias_sum``."""
    groups, channels = mean.shape[1], weight.size
    per = channels // groups
    spatial = x.shape[1] // channels
    n = per * spatial
    for r in range(x.shape[0]):
        for k in range(groups):
            gr, xr, o = g[r, k * n:(k + 1) * n], x[r, k * n:(k + 1) * n], \
                dx[r, k * n:(k + 1) * n]
            center, scale = mean[r, k], rstd[r, k]
            sum_h = sum_hx = 0.0
            for c in range(per):  # (loops from 0 over a channel's slice vectorize)
                w = weight[k * per + c]
                gc, xc = gr[c * spatial:(c + 1) * spatial], xr[c * spatial:(c + 1) * spatial]
                sum_g = sum_gx = 0.0
                for j in range(spatial):
                    sum_g += gc[j]
                    sum_gx += gc[j] * ((xc[j] - center) * scale)
                sum_h += sum_g * w
                sum_hx += sum_gx * w
                weight_sum[k * per + c] += sum_gx
                bias_sum[k * per + c] += sum_g
            mean_h, mean_hx = g.dtype.type(sum_h / n), g.dtype.type(sum_hx / n)
            for c in range(per):
                w = weight[k * per + c]
                gc, xc = gr[c * spatial:(c + 1) * spatial], xr[c * spatial:(c + 1) * spatial]
                oc = o[c * spatial:(c + 1) * spatial]
                for j in range(spatial):
                    oc[j] = scale * (gc[j] * w - mean_h - (xc[j] - center) * scale * mean_hx)
