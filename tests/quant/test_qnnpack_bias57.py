"""QNNPACK quantizes a float bias to int32 with the scale ``input_scale * weight_scale``
multiplied in float64 (PyTorch's ``QuantizeBias``) and then rounded to float32, not the
product of the float32-rounded scales: the two differ by an ulp for scales such as 0.12,
which moves biases on exact ties (review57f item 4)."""

import warnings

import numpy as np
import pytest
import torch
import torch.ao.nn.quantized as tnnq

import ember
import ember.ao.nn.quantized as ennq

warnings.filterwarnings("ignore", message=".*quantized tensor creation functions")

SPATIAL = {"Linear": 0, "Conv1d": 1, "Conv2d": 2, "Conv3d": 3, "ConvTranspose2d": 2}


def _out(M, nnq, kind, per_channel, sx, sw, b, so, x):
    c, n = len(b), SPATIAL[kind]
    layer = nnq.Linear(c, c) if kind == "Linear" else getattr(nnq, kind)(c, c, 1)
    w = M.tensor(np.linspace(-0.5, 0.5, c * c).reshape(c, c, *[1] * n).astype(np.float32))
    if per_channel:
        qw = M.quantize_per_channel(w, M.tensor(np.full(c, sw)), M.tensor(np.zeros(c, np.int64)),
                                    0, M.qint8)
    else:
        qw = M.quantize_per_tensor(w, sw, 0, M.qint8)
    layer.set_weight_bias(qw, M.tensor(b))
    layer.scale, layer.zero_point = so, 128
    return layer(M.quantize_per_tensor(M.tensor(x), sx, 100, M.quint8)).int_repr().numpy()


@pytest.mark.parametrize("kind", list(SPATIAL))
@pytest.mark.parametrize("per_channel", [False, True])
def test_bias_scale_multiplied_in_float64_as_torch(kind, per_channel):
    if per_channel and kind == "ConvTranspose2d":
        pytest.skip("PyTorch's quantized ConvTranspose2d takes per-tensor weights")
    old = torch.backends.quantized.engine, ember.backends.quantized.engine
    torch.backends.quantized.engine = ember.backends.quantized.engine = "qnnpack"
    rng = np.random.default_rng(SPATIAL[kind] + 10 * per_channel)
    try:
        for sx, sw in ((0.001, 0.12), (0.03, 0.12), (0.007, 0.29), (0.15, 0.021)):
            c = 8
            b = ((rng.integers(-90, 90, c) + 0.5) * (sx * sw)).astype(np.float32)  # (near ties)
            so = float(np.float32(sx) * np.float32(sw))
            shape = (3, c) if kind == "Linear" else (1, c, *[2] * SPATIAL[kind])
            x = np.zeros(shape, np.float32)  # (the input's zero point: the output reads the bias)
            t = _out(torch, tnnq, kind, per_channel, sx, sw, b, so, x)
            e = _out(ember, ennq, kind, per_channel, sx, sw, b, so, x)
            np.testing.assert_array_equal(e, t, err_msg=f"scales {sx}, {sw}")
    finally:
        torch.backends.quantized.engine, ember.backends.quantized.engine = old
