"""Requantization of quantized Linear/Conv outputs with a float bias on exact ties (sweep
quant57): fbgemm adds a per-tensor weight's bias as ``fma(bias, 1 / (sx * sw), acc)``;
QNNPACK's multiplier is ``(sx * sw) * (1 / so)``."""

import warnings

import numpy as np
import pytest
import torch
import torch.ao.nn.quantized as tnnq

import ember
import ember.ao.nn.quantized as ennq

warnings.filterwarnings("ignore", message=".*quantized tensor creation functions")


def _layer(M, nnq, kind, per_channel, w, b, out_scale):
    if kind == "Linear":
        layer = nnq.Linear(w.shape[1], w.shape[0])
    elif kind == "ConvTranspose2d":
        layer = nnq.ConvTranspose2d(w.shape[0], w.shape[1], 3, padding=1)
    else:
        layer = getattr(nnq, kind)(w.shape[1], w.shape[0], 3, padding=1)
    if per_channel:
        scales = np.linspace(0.005, 0.02, w.shape[0])
        qw = M.quantize_per_channel(M.tensor(w), M.tensor(scales),
                                    M.tensor(np.zeros(w.shape[0], np.int64)), 0, M.qint8)
    else:
        qw = M.quantize_per_tensor(M.tensor(w), 0.01, 0, M.qint8)
    layer.set_weight_bias(qw, M.tensor(b))
    layer.scale, layer.zero_point = out_scale, 60
    return layer


@pytest.mark.parametrize("engine", ["fbgemm", "qnnpack"])
@pytest.mark.parametrize("out_scale", [0.04, 0.06])
@pytest.mark.parametrize("kind,x_shape,w_shape,per_channel", [
    ("Conv3d", (2, 4, 5, 5, 5), (6, 4, 3, 3, 3), False),
    ("Conv3d", (2, 4, 5, 5, 5), (6, 4, 3, 3, 3), True),
    ("Conv2d", (2, 4, 9, 9), (6, 4, 3, 3), False),
    ("Conv2d", (2, 4, 9, 9), (6, 4, 3, 3), True),
    ("Linear", (256, 12), (6, 12), False),
    ("ConvTranspose2d", (2, 4, 9, 9), (4, 6, 3, 3), False)])
def test_bias_on_exact_ties_as_torch(kind, x_shape, w_shape, per_channel, out_scale, engine):
    old = torch.backends.quantized.engine, ember.backends.quantized.engine
    torch.backends.quantized.engine = ember.backends.quantized.engine = engine
    try:
        for seed in range(12):  # (scales whose products leave exact float32 ties)
            rng = np.random.default_rng(seed)
            x = rng.standard_normal(x_shape).astype(np.float32)
            w = rng.standard_normal(w_shape).astype(np.float32) * 0.3
            channels = w_shape[1] if kind == "ConvTranspose2d" else w_shape[0]
            b = (rng.integers(-8, 8, channels) * 0.1).astype(np.float32)
            tq = torch.quantize_per_tensor(torch.tensor(x), 0.03, 120, torch.quint8)
            eq = ember.quantize_per_tensor(ember.tensor(x), 0.03, 120, ember.quint8)
            t = _layer(torch, tnnq, kind, per_channel, w, b, out_scale)(tq).int_repr().numpy()
            e = _layer(ember, ennq, kind, per_channel, w, b, out_scale)(eq).int_repr().numpy()
            np.testing.assert_array_equal(e, t, err_msg=f"seed {seed}")
    finally:
        torch.backends.quantized.engine, ember.backends.quantized.engine = old
