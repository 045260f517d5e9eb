"""fbgemm's depthwise convolutions add the uint8 × int8 products of each pair of kernel taps
in saturating int16 (``vpmaddubsw``), on AVX-512 hosts too: with 8-bit activations PyTorch's
outputs are not the exact ones, and Ember's equal them (review57f item 7). Under the
``"x86"`` engine only the convolutions that PyTorch leaves to fbgemm saturate. Kernels of 7 are
on that path too, padding reads the zero point, and 3-D windows of more than 128 taps
saturate their activation sums at 32767 (review57m3 items 1-3)."""

import warnings

import numpy as np
import pytest
import torch
import torch.ao.nn.intrinsic.quantized as tnniq
import torch.ao.nn.quantized as tnnq

import ember
import ember.ao.nn.quantized as ennq
from ember.quant import kernels

warnings.filterwarnings("ignore", message=".*quantized tensor creation functions")


def _run(M, nnq, relu, kernel, channels, mult, stride, padding, wq, w_zp, per_channel, x, x_zp):
    cls = nnq.ConvReLU2d if relu else getattr(nnq, f"Conv{len(kernel)}d")
    layer = cls(channels, channels * mult, kernel, stride=stride, padding=padding,
                groups=channels)
    if per_channel:
        scales = np.linspace(0.005, 0.02, channels * mult)
        w = (wq * scales.reshape(-1, *[1] * (len(kernel) + 1))).astype(np.float32)
        qw = M.quantize_per_channel(M.tensor(w), M.tensor(scales),
                                    M.tensor(np.zeros(channels * mult, np.int64)), 0, M.qint8)
    else:
        qw = M.quantize_per_tensor(M.tensor(((wq - w_zp) * 0.01).astype(np.float32)), 0.01,
                                   w_zp, M.qint8)
    layer.set_weight_bias(qw, M.tensor(np.linspace(-2, 2, channels * mult).astype(np.float32)))
    layer.scale, layer.zero_point = 4.0, 100
    xq = M.quantize_per_tensor(M.tensor(x), 0.05, x_zp, M.quint8)
    return layer(xq).int_repr().numpy()


CASES = [  # kernel, channels, mult, stride, padding, w_zp, per_channel, x_zp, relu
    ((3, 3), 8, 1, 1, 1, 0, False, 0, False),
    ((3, 3), 16, 2, 2, 1, 3, False, 200, False),
    ((5, 5), 24, 1, 1, 2, 0, True, 37, True),
    ((5, 5), 8, 2, 2, 2, -2, False, 255, False),
    ((3, 3, 3), 16, 1, 1, 1, 0, True, 90, False),
    ((5, 3, 3), 8, 2, 2, (2, 1, 1), 1, False, 10, False),
    ((7, 7), 8, 1, 1, 3, 0, False, 60, False),
    ((7, 7), 16, 2, 2, 3, 0, True, 0, True),
    ((3, 7, 7), 8, 1, 2, (1, 3, 3), 0, False, 128, False),
    ((3, 3), 8, 1, 1, 0, 0, False, 0, False),  # (no padding: im2col, exact)
    ((3, 3), 12, 1, 1, 1, 0, False, 0, False),  # (12 channels: not depthwise, exact)
]


@pytest.mark.parametrize("engine", ["fbgemm", "x86"])
@pytest.mark.parametrize("kernel,channels,mult,stride,padding,w_zp,per_channel,x_zp,relu", CASES)
def test_depthwise_pairs_saturate_as_torch(engine, kernel, channels, mult, stride, padding,
                                           w_zp, per_channel, x_zp, relu):
    if engine == "x86" and kernels.x86_uses_onednn(w_zp, channels):
        pytest.skip("PyTorch's x86 engine runs this convolution with oneDNN (not modelled)")
    rng = np.random.default_rng(len(kernel) * 100 + channels + stride)
    shape = (2, channels, *[7] * len(kernel))
    q = np.where(rng.random(shape) < 0.7, rng.choice([0, 255], shape), rng.integers(0, 256, shape))
    x = (0.05 * (q - x_zp)).astype(np.float32)
    wshape = (channels * mult, 1, *kernel)
    wq = np.where(rng.random(wshape) < 0.7, rng.choice([-128, 127], wshape),
                  rng.integers(-128, 128, wshape))
    wq = np.clip(wq, -128 + max(w_zp, 0), 127 + min(w_zp, 0))
    args = (relu, kernel, channels, mult, stride, padding, wq, w_zp, per_channel, x, x_zp)
    old = torch.backends.quantized.engine, ember.backends.quantized.engine
    torch.backends.quantized.engine = ember.backends.quantized.engine = engine
    try:
        t = _run(torch, tnniq if relu else tnnq, *args)
        e = _run(ember, ennq, *args)
    finally:
        torch.backends.quantized.engine, ember.backends.quantized.engine = old
    np.testing.assert_array_equal(e, t)


def test_review_repro_centre_row():
    """8 channels, 3×3, activations 255 and weights 127: the exact centre is 291.465; PyTorch
    (and Ember) give 164 (four saturated pairs and one single tap)."""
    x = np.full((1, 8, 3, 3), 25.5, np.float32)
    w = np.full((8, 1, 3, 3), 1.27, np.float32)
    old = ember.backends.quantized.engine
    ember.backends.quantized.engine = "fbgemm"
    try:
        layer = ennq.Conv2d(8, 8, 3, groups=8, padding=1)
        qw = ember.quantize_per_tensor(ember.tensor(w), 0.01, 0, ember.qint8)
        layer.set_weight_bias(qw, None)
        layer.scale, layer.zero_point = 2.0, 0
        out = layer(ember.quantize_per_tensor(ember.tensor(x), 0.1, 0, ember.quint8))
    finally:
        ember.backends.quantized.engine = old
    np.testing.assert_array_equal(out.dequantize().numpy()[0, 0, 1], [162, 164, 130])


def _engine_run(engine, fn, *args):
    """``fn(torch, tnnq, *args)`` and ``fn(ember, ennq, *args)`` under ``engine``."""
    old = torch.backends.quantized.engine, ember.backends.quantized.engine
    torch.backends.quantized.engine = ember.backends.quantized.engine = engine
    try:
        return fn(torch, tnnq, *args), fn(ember, ennq, *args)
    finally:
        torch.backends.quantized.engine, ember.backends.quantized.engine = old


def _layer(M, nnq, kernel, wq, w_zp, x, x_zp, channels=8):
    """A depthwise ``Conv{n}d`` with "same" padding, int8 weights ``wq`` (their integers) of
    zero point ``w_zp`` (a list: per channel), run on ``x`` quantized with ``x_zp``."""
    layer = getattr(nnq, f"Conv{len(kernel)}d")(channels, channels, kernel, groups=channels,
                                               padding=tuple((k - 1) // 2 for k in kernel))
    if np.ndim(w_zp):
        scales = np.linspace(0.005, 0.02, channels)
        zps = np.asarray(w_zp, np.int64)
        shape = (-1, *[1] * (len(kernel) + 1))
        w = ((wq - zps.reshape(shape)) * scales.reshape(shape)).astype(np.float32)
        qw = M.quantize_per_channel(M.tensor(w), M.tensor(scales), M.tensor(zps), 0, M.qint8)
    else:
        qw = M.quantize_per_tensor(M.tensor(((wq - w_zp) * 0.01).astype(np.float32)), 0.01,
                                   w_zp, M.qint8)
    layer.set_weight_bias(qw, None)
    layer.scale, layer.zero_point = 4.0, 100
    return layer(M.quantize_per_tensor(M.tensor(x), 0.05, x_zp, M.quint8)).int_repr().numpy()


@pytest.mark.parametrize("engine", ["fbgemm", "x86"])
def test_padding_reads_the_zero_point(engine):
    """Activations 5 under a zero point of 255: only the padded taps (255 × 127) saturate
    (review57m3 R1: the corner row was [84 76 76] against PyTorch's [76 72 72])."""
    x = np.full((1, 8, 5, 5), -0.05 * 250, np.float32)
    wq = np.full((8, 1, 3, 3), 127)
    t, e = _engine_run(engine, _layer, (3, 3), wq, 1 if engine == "x86" else 0, x, 255)
    np.testing.assert_array_equal(e, t)


def test_kernel_7_is_depthwise():
    """A 7×7 kernel, activations 255 and weights 127 (review57m3 R2: PyTorch 202, exact 255)."""
    x = np.full((1, 8, 9, 9), 0.05 * 255, np.float32)
    t, e = _engine_run("fbgemm", _layer, (7, 7), np.full((8, 1, 7, 7), 127), 0, x, 0)
    assert t[0, 0, 4, 4] == 202
    np.testing.assert_array_equal(e, t)


@pytest.mark.parametrize("engine", ["fbgemm", "x86"])
@pytest.mark.parametrize("kernel,w_zp", [((7, 7, 7), 3), ((3, 7, 7), -2),
                                          ((7, 5, 5), [1, -3, 0, 2, 5, -1, 4, 0])])
def test_row_offsets_saturate(engine, kernel, w_zp):
    """More than 128 taps and a weight zero point: fbgemm clamps each window's activation
    sum to 32767 before subtracting it times the zero point (review57m3 R3: weights at their
    zero point, exact output 100, PyTorch 113)."""
    rng = np.random.default_rng(sum(kernel))
    x = (0.05 * rng.integers(220, 256, (2, 8, 7, 7, 7))).astype(np.float32)
    zps = np.broadcast_to(np.asarray(w_zp), (8,)).reshape(-1, 1, 1, 1, 1)
    wq = np.clip(rng.integers(-6, 7, (8, 1, *kernel)) + zps, -128, 127)
    t, e = _engine_run(engine, _layer, kernel, wq, w_zp, x, 0)
    np.testing.assert_array_equal(e, t)


def _pairs_lost(q, zero_point, w, padding):
    """The unscreened model: every tap pair of every channel, stride 1."""
    pad = [(0, 0), (0, 0)] + [(p, p) for p in padding]
    qp = np.pad(q.astype(np.int64), pad, constant_values=zero_point)
    k, size = w.shape[2:], q.shape[2:]
    taps = [qp[:, :, i:i + size[0], j:j + size[1]] for i in range(k[0]) for j in range(k[1])]
    prods = np.stack(taps, 2) * w.reshape(1, w.shape[0], -1, 1, 1).astype(np.int64)
    pairs = prods[:, :, 0:prods.shape[2] - 1:2] + prods[:, :, 1::2]
    return (np.clip(pairs, -32768, 32767) - pairs).sum(axis=2)


@pytest.mark.parametrize("seed", range(4))
def test_screened_pairs_equal_the_full_model(seed):
    """Screening tap pairs by their weights leaves the saturation unchanged."""
    rng = np.random.default_rng(seed)
    q = rng.integers(0, 256, (2, 8, 6, 6)).astype(np.uint8)
    w = np.clip(rng.normal(0, 60, (8, 1, 3, 3)).round(), -128, 127).astype(np.int8)
    got = kernels.depthwise_saturation(q, 200, w, (1, 1), (1, 1))
    np.testing.assert_array_equal(got, _pairs_lost(q, 200, w, (1, 1)))


def test_vnni_read_from_numpy_features(monkeypatch):
    """AVX-512 VNNI comes from NumPy's runtime feature table (any OS), /proc/cpuinfo only
    when NumPy has none; PyTorch's x86 engine sends nothing to oneDNN off Linux."""
    for vnni in (False, True):
        monkeypatch.setattr(kernels, "_cpu_features", lambda vnni=vnni: {"AVX512VNNI": vnni})
        kernels.avx512_vnni.cache_clear()
        assert kernels.avx512_vnni() is vnni
    monkeypatch.setattr(kernels.sys, "platform", "linux")
    assert kernels.x86_uses_onednn(0, 8)
    monkeypatch.setattr(kernels.sys, "platform", "win32")
    assert not kernels.x86_uses_onednn(0, 8)
    kernels.avx512_vnni.cache_clear()
