"""Float modules PyTorch runs unchanged on quantized tensors (AvgPool2d, Hardtanh, Threshold,
Upsample): convert swaps them for quantized twins, so a converted model runs as torch's
(sweep65c; they raised QuantizedOperandError at the first quantized input)."""

import numpy as np
import pytest
import torch
import torch.ao.quantization as tq

import ember
import ember.ao.nn.quantized.functional as qF
import ember.ao.quantization as eq
from ember.errors import ArgumentError, ShapeError
from tests.quant.helpers import TORCH_NAMES, copy_weights

LAYERS = ["AvgPool2d(3, 2, 1)", "AvgPool2d(2, ceil_mode=True, count_include_pad=False)",
          "AvgPool2d(3, 1, 1, divisor_override=5)", "Hardtanh(-0.3, 0.7)", "Threshold(0.2, -0.5)",
          "Upsample(scale_factor=2)", "Upsample(size=(7, 5))",
          "Upsample(scale_factor=1.7, mode='nearest-exact')",
          "UpsamplingNearest2d(scale_factor=3)",
          # (the twin ignored recompute_scale_factor: mend65e)
          "Upsample(scale_factor=1.6, recompute_scale_factor=True)",
          "Upsample(scale_factor=(1.6, 2.3), mode='nearest-exact', recompute_scale_factor=True)"]


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


@pytest.mark.parametrize("dtype,zero_point", [(ember.quint8, 131), (ember.qint8, -7)])
@pytest.mark.parametrize("align_corners", [False, True])
@pytest.mark.parametrize("resize", [{"scale_factor": 2}, {"size": (9, 11)},
                                    {"scale_factor": 1.7}, {"size": (3, 4)}])
def test_quantized_bilinear_as_torch_nchw_kernel(dtype, zero_point, align_corners, resize):
    x = (np.random.default_rng(0).standard_normal((2, 5, 6, 7)) * 2).astype(np.float32)
    e = qF.interpolate(ember.quantize_per_tensor(ember.tensor(x), 0.02, zero_point, dtype),
                       mode="bilinear", align_corners=align_corners, **resize)
    t = torch.nn.functional.interpolate(
        torch.quantize_per_tensor(torch.tensor(x), 0.02, zero_point, TORCH_NAMES[dtype]),
        mode="bilinear", align_corners=align_corners, **resize)
    assert (e.q_scale(), e.q_zero_point(), e.dtype) == (0.02, zero_point, dtype)
    ei, ti = e.int_repr().numpy().astype(int), t.int_repr().numpy().astype(int)
    # (PyTorch's build fuses some multiply-adds: values within an ulp of a half may round
    # the other way, about 1 integer in 50,000)
    assert ei.shape == ti.shape and np.abs(ei - ti).max() <= 1
    assert (ei != ti).sum() <= 2


@pytest.mark.parametrize("mode", ["nearest", "nearest-exact", "bilinear"])
def test_converted_upsample_recomputes_the_scale_factor_as_torch(mode):
    # (the twin resized by the factor 1.6, not by 9 / 5: [0,0,1,1,2,...] for torch's
    # [0,0,1,2,2,...]: mend65e; the input straight from a QuantStub, NCHW, so bilinear is exact)
    x = np.arange(60, dtype=np.float32).reshape(1, 2, 5, 6) / 10
    out = []
    for lib, q in ((ember, eq), (torch, tq)):
        up = lib.nn.Upsample(scale_factor=1.6, mode=mode, recompute_scale_factor=True)
        m = _convert(lib.nn.Sequential(q.QuantStub(), up), q, lib.tensor(x))
        out.append(m(lib.tensor(x)).int_repr().numpy())
    np.testing.assert_array_equal(*out)
    assert out[0].shape == (1, 2, 8, 9)


@pytest.mark.parametrize("mode,align_corners", [("nearest", None), ("nearest-exact", None),
                                                ("bilinear", False), ("bilinear", True)])
@pytest.mark.parametrize("resize", [{"size": (12, 14)}, {"scale_factor": 1}])
@pytest.mark.parametrize("channels_last", [False, True])
def test_quantized_interpolate_lays_out_as_torch(mode, align_corners, resize, channels_last):
    # (bilinear gave strides (8, 1, 16, 192) for (2, 8, 12, 14), nearest C order of a
    # channels-last input; torch keeps the input's suggested format: mend65e)
    x = np.random.default_rng(0).standard_normal((2, 8, 6, 7)).astype(np.float32)
    out = []
    for lib, interpolate in ((ember, qF.interpolate),
                             (torch, torch.nn.functional.interpolate)):
        t = lib.tensor(x)
        t = t.contiguous(memory_format=lib.channels_last) if channels_last else t
        q = lib.quantize_per_tensor(t, 0.05, 3, lib.quint8)
        out.append(interpolate(q, mode=mode, align_corners=align_corners, **resize))
    assert tuple(out[0].stride()) == out[1].stride()
    np.testing.assert_array_equal(out[0].int_repr().numpy(), out[1].int_repr().numpy())


def test_converted_bilinear_upsample_and_its_refusals():
    m = ember.nn.Sequential(eq.QuantStub(), ember.nn.UpsamplingBilinear2d(scale_factor=2),
                            eq.DeQuantStub())
    m = _convert(m, eq, ember.ones(1, 1, 2, 2))
    assert type(m[1]).__name__ == "UpsamplingBilinear2d"
    np.testing.assert_allclose(m(ember.ones(1, 1, 2, 2)).numpy(), np.ones((1, 1, 4, 4)),
                               atol=0.01)
    q = ember.quantize_per_tensor(ember.ones(1, 2, 3), 0.1, 0, ember.quint8)
    with pytest.raises(ShapeError, match="'bilinear' expects a 4-D"):
        qF.interpolate(q, scale_factor=2, mode="bilinear")
    with pytest.raises(ArgumentError, match="'bicubic' is not supported.*dequantize"):
        qF.interpolate(q.unsqueeze(0), scale_factor=2, mode="bicubic")


@pytest.mark.parametrize("layer", ["Sigmoid", "Tanh", "Hardsigmoid"])
def test_converted_fixed_range_activation_prints_as_torch(layer):
    x = np.random.default_rng(0).standard_normal((4, 3)).astype(np.float32)
    e = _convert(ember.nn.Sequential(eq.QuantStub(), getattr(ember.nn, layer)(),
                                     eq.DeQuantStub()), eq, ember.tensor(x))
    t = _convert(torch.nn.Sequential(tq.QuantStub(), getattr(torch.nn, layer)(),
                                     tq.DeQuantStub()), tq, torch.tensor(x))
    assert repr(e[1]) == repr(t[1]) == f"{layer}()"


@pytest.mark.parametrize("layer", ["ReLU6(inplace=True)", "ReLU6()", "ReLU(inplace=True)",
                                   "ReLU()", "Hardtanh(-0.5, 2.0, inplace=True)",
                                   "Hardtanh(-0.5, 2.0)"])
def test_converted_inplace_activation_prints_and_writes_as_torch(layer):
    # (QuantizedReLU6() and ReLU() printed without inplace=True, and with it ReLU6, ReLU and
    # Hardtanh left their quantized input be; torch's write it and return it: mend65e)
    x = np.linspace(-3, 8, 12, dtype=np.float32).reshape(1, 3, 2, 2)
    got = []
    for lib, q in ((ember, eq), (torch, tq)):
        m = _convert(lib.nn.Sequential(q.QuantStub(), eval("lib.nn." + layer, {"lib": lib})),
                     q, lib.tensor(x))
        qx = lib.quantize_per_tensor(lib.tensor(x), 0.05, 60, lib.quint8)
        out = m[1](qx)
        got.append((repr(m[1]), out is qx, qx.int_repr().numpy().tolist(),
                    out.int_repr().numpy().tolist()))
    assert got[0] == got[1]
