"""1×1, stride-1, unpadded convolutions inside the ``conv`` primitive: products of the pixels
alone. An NCHW input is a GEMM per sample, ``W @ x[n]``, on the input as it lies (NCHW out, as
PyTorch's); any other layout one GEMM of its pixel rows (free for channels-last), as the other
convolutions' (channels-last out). The output's layout follows the input's alone, never the
sizes, so a traced graph does not change with the batch size."""

from __future__ import annotations

from math import prod
from typing import Any

from ember.backend import gemm
from ember.layouts import array_dense_in
from ember.ops.im2col import Pads

__all__ = ["pointwise", "pointwise_conv", "pointwise_weight_grad"]


def pointwise(kernel: tuple, padding: Pads, stride: tuple) -> bool:
    """Whether a convolution is 1×1, stride 1 and unpadded: a product of the pixels alone."""
    return all(k == 1 for k in kernel) and all(s == 1 for s in stride) and \
        all(p == (0, 0) for p in padding)


def _samples_first(a: Any) -> Any:
    """(N, C, *spatial) ``a`` as (N, C, L) if that is a view of an NCHW-ordered (not a
    channels-last) array, else None."""
    nd = a.ndim - 2
    channels_last = (0, *range(2, nd + 2), 1)
    if array_dense_in(a, channels_last) or not array_dense_in(a, tuple(range(1, nd + 2))):
        return None  # (an array that is both, (N, C, 1, 1), goes as rows, as it always did)
    return a.reshape(a.shape[:2] + (prod(a.shape[2:]),))


def _few_pixels(n: int, length: int, weight_elements: int) -> bool:
    """Whether a 1×1 product of an NCHW batch runs faster as one GEMM of the input copied to
    (Cin, N·L) than as a GEMM per sample: a large weight is packed again for each sample's
    product, which few pixels do not repay (measured with the pixel-row GEMM this replaced,
    1 thread, 32×2048→512 at 7×7: 41 ms as one GEMM, 43-48 per sample; at 14×14, and with a
    256×256 weight at 7×7, per sample is 5-25 % faster; the channel-major copy is as fast,
    review58mi)."""
    return n >= 4 and length < 64 and weight_elements >= 1 << 18


def _rows(xp: Any, a: Any, dtype: Any) -> Any:
    """(N, C, *spatial) → (N·L, C) in ``dtype``: a free view of a channels-last array."""
    return xp.moveaxis(a, 1, -1).reshape(-1, a.shape[1]).astype(dtype, copy=False)


def pointwise_conv(xp: Any, x: Any, w: Any, bias: Any, compute: Any) -> Any:
    """A 1×1 stride-1 convolution, the bias (in the GEMM's dtype) added to the fresh output.
    NCHW ``x``: the batch of GEMMs ``W @ x[n]`` on ``x`` as it lies, NCHW out (PyTorch's
    layout; copying ``x`` to pixel rows took 2-3x the GEMM's time on a 256→21 head), or, for
    few pixels by a large weight (:func:`_few_pixels`), one GEMM ``W @ x`` of ``x`` copied to
    (Cin, N·L), its (Cout, N·L) result copied back to NCHW (both copies move runs of L
    pixels); else one GEMM of the pixel rows (free for a channels-last ``x``), channels-last
    out as the other paths'. The output's layout follows the input's alone, never the sizes:
    a layout that changed with the batch made a traced model's graph change with it (a
    ResNeXt's last 1×1 conv, once channels-last from batch 4, added to an NCHW branch)."""
    n, cout, spatial = x.shape[0], w.shape[0], x.shape[2:]
    weight = w[(slice(None), slice(None)) + (0,) * len(spatial)]  # (Cout, Cin): a view
    dtype = x.dtype if compute is None else compute.np
    samples = _samples_first(x)
    if samples is None:
        out = gemm.matmul(xp, _rows(xp, x, dtype), weight.T.astype(dtype, copy=False))
        if bias is not None:  # (in the GEMM's dtype, before the one cast back, as PyTorch's)
            out += bias
        out = out.reshape((n,) + spatial + (cout,)).astype(x.dtype, copy=False)
        return out.transpose((0, len(spatial) + 1, *range(1, len(spatial) + 1)))
    weight, length = weight.astype(dtype, copy=False), samples.shape[2]
    if _few_pixels(n, length, weight.size):
        channels = xp.ascontiguousarray(samples.transpose(1, 0, 2), dtype=dtype)
        out = gemm.matmul(xp, weight, channels.reshape(channels.shape[0], -1))
        out = out.reshape((cout, n, length)).transpose(1, 0, 2)
    else:
        out = gemm.matmul(xp, weight, samples.astype(dtype, copy=False))
    if bias is not None:
        out += bias.reshape((cout, 1))
    return xp.ascontiguousarray(out, dtype=x.dtype).reshape((n, cout) + spatial)


def pointwise_weight_grad(xp: Any, x: Any, g: Any, compute: Any) -> Any:
    """A 1×1 stride-1 convolution's weight gradient Σₙ g[n] @ x[n]ᵀ. NCHW ``x`` and ``g``: per
    sample, accumulated, where the (Cout, Cin) sums cost less than copying both to (C, N·L)
    (a 7×7 layer's few pixels: then those copies and one GEMM); else one GEMM of the pixel
    rows, gᵀ @ x (free views of channels-last arrays)."""
    n, cin, cout = x.shape[0], x.shape[1], g.shape[1]
    dtype = x.dtype if compute is None else compute.np
    xs, gs = _samples_first(x), _samples_first(g)
    if xs is None or gs is None:
        gw = gemm.matmul(xp, _rows(xp, g, dtype).T, _rows(xp, x, dtype))
    else:
        xs, gs = xs.astype(dtype, copy=False), gs.astype(dtype, copy=False)
        if cout * cin <= xs.shape[2] * (cin + cout):
            gw = gemm.matmul(xp, gs[0], xs[0].T)
            part = xp.empty_like(gw)
            for i in range(1, n):
                gw += gemm.matmul(xp, gs[i], xs[i].T, out=part)
        else:
            gw = gemm.matmul(xp, gs.transpose(1, 0, 2).reshape(cout, -1),
                             xs.transpose(1, 0, 2).reshape(cin, -1).T)
    return xp.ascontiguousarray(gw.reshape((cout, cin) + (1,) * (x.ndim - 2)), dtype=x.dtype)
