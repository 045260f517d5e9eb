"""Float modules PyTorch runs unchanged on quantized tensors (AvgPool2d, Hardtanh, Threshold,
Upsample): convert swaps them for quantized twins, so a converted model runs as torch's
(sweep65c; they raised QuantizedOperandError at the first quantized input)."""

import numpy as np
import pytest
import torch
import torch.ao.quantization as tq

import ember
import ember.ao.quantization as eq
from ember.errors import ArgumentError
from tests.quant.helpers import copy_weights

LAYERS = ["AvgPool2d(3, 2, 1)", "AvgPool2d(2, ceil_mode=True, count_include_pad=False)",
          "AvgPool2d(3, 1, 1, divisor_override=5)", "Hardtanh(-0.3, 0.7)", "Threshold(0.2, -0.5)",
          "Upsample(scale_factor=2)", "Upsample(size=(7, 5))",
          "Upsample(scale_factor=1.7, mode='nearest-exact')",
          "UpsamplingNearest2d(scale_factor=3)"]


def _model(nn, q, layer: str, channels: int):
    return nn.Sequential(q.QuantStub(), nn.Conv2d(3, channels, 3),
                         eval("nn." + layer, {"nn": nn}), nn.Conv2d(channels, 2, 1),
                         q.DeQuantStub())


def _convert(model, q, x):
    model.eval().qconfig = q.default_qconfig
    q.prepare(model, inplace=True)
    model(x)
    return q.convert(model, inplace=True)


@pytest.mark.parametrize("layer", LAYERS)
@pytest.mark.parametrize("channels", [3, 19])
def test_converted_model_runs_the_layer_on_quantized_tensors_as_torch(layer, channels):
    x = np.random.default_rng(channels).standard_normal((2, 3, 9, 8)).astype(np.float32)
    torch.manual_seed(channels)
    t = _model(torch.nn, tq, layer, channels)
    e = _model(ember.nn, eq, layer, channels)
    copy_weights(t, e)
    t, e = _convert(t, tq, torch.tensor(x)), _convert(e, eq, ember.tensor(x))
    # (the float convolutions round apart by an ulp, so the calibrated scales may too)
    np.testing.assert_allclose(e(ember.tensor(x)).numpy(), t(torch.tensor(x)).numpy(),
                               rtol=1e-5, atol=1e-6)
    assert repr(e[2]) == repr(t[2])
    # after the quantized region the twin takes float tensors as the float module
    y = np.random.default_rng(1).standard_normal((1, 2, 4, 4)).astype(np.float32)
    np.testing.assert_allclose(e[2](ember.tensor(y)).numpy(), t[2](torch.tensor(y)).numpy(),
                               rtol=1e-6)


def test_quantized_bilinear_upsample_is_refused_with_a_hint():
    m = ember.nn.Sequential(eq.QuantStub(), ember.nn.UpsamplingBilinear2d(scale_factor=2),
                            eq.DeQuantStub())
    m = _convert(m, eq, ember.ones(1, 1, 2, 2))
    with pytest.raises(ArgumentError, match="'bilinear' is not supported.*dequantize"):
        m(ember.ones(1, 1, 2, 2))

