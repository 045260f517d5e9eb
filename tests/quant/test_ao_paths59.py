"""PyTorch's import paths and names under ``torch.ao`` that Ember provides too:
``torch.ao.nn.intrinsic.quantized`` (and ``.dynamic``),
``fake_quantize.default_dynamic_fake_quant``, ``qconfig.default_quint8_weight_qconfig``."""

import importlib

import numpy as np
import torch.ao.nn.intrinsic.quantized as tnniq
import torch.ao.quantization.fake_quantize as tfq
import torch.ao.quantization.qconfig as tqc

import ember
import ember.ao.nn.quantized as nnq
from ember.ao.nn.quantized import dynamic as nnqd


def test_intrinsic_quantized_paths():
    nniq = importlib.import_module("ember.ao.nn.intrinsic.quantized")
    dyn = importlib.import_module("ember.ao.nn.intrinsic.quantized.dynamic")
    for name in ("BNReLU2d", "BNReLU3d", "ConvReLU1d", "ConvReLU2d", "ConvReLU3d", "LinearReLU"):
        assert hasattr(tnniq, name)
        assert getattr(nniq, name) is getattr(nnq, name)
    assert dyn.LinearReLU is nnqd.LinearReLU
    assert ember.ao.nn.intrinsic.quantized is nniq


def test_default_dynamic_fake_quant_as_torch():
    import torch

    from ember.ao.quantization.fake_quantize import default_dynamic_fake_quant
    t, e = tfq.default_dynamic_fake_quant(), default_dynamic_fake_quant()
    for i in range(3):
        x = np.random.default_rng(i).standard_normal((3, 4)).astype(np.float32) * (i + 1)
        np.testing.assert_array_equal(e(ember.tensor(x)).numpy(), t(torch.tensor(x)).numpy())
        assert float(e.scale) == float(t.scale) and int(e.zero_point) == int(t.zero_point)


def test_default_quint8_weight_qconfig_as_torch():
    import torch

    from ember.ao.quantization.qconfig import default_quint8_weight_qconfig as e
    t = tqc.default_quint8_weight_qconfig
    assert type(e.activation()).__name__ == type(t.activation()).__name__ == "HistogramObserver"
    x = np.random.default_rng(0).standard_normal((3, 4)).astype(np.float32)
    ew, tw = e.weight(), t.weight()
    ew(ember.tensor(x))
    tw(torch.tensor(x))
    assert [float(v) for v in ew.calculate_qparams()] == \
        [float(v) for v in tw.calculate_qparams()]
