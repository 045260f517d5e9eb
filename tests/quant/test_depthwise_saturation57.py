"""fbgemm's depthwise convolutions add the uint8 × int8 products of each pair of kernel taps
in saturating int16 (``vpmaddubsw``), on AVX-512 hosts too: with 8-bit activations PyTorch's
outputs are not the exact ones, and Ember's equal them (review57f item 7). Under the
``"x86"`` engine only the convolutions that PyTorch leaves to fbgemm saturate."""

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
