"""Quantized ConvTranspose1d/2d/3d against PyTorch's fbgemm modules: the same weights and
calibration give the same integers (strides, padding, output padding, dilation, groups);
per-channel weights refused as PyTorch; state dicts round-trip."""

import numpy as np
import pytest
import torch
import torch.ao.quantization as tq

import ember
import ember.ao.quantization as eq
from tests.quant.helpers import copy_weights, same


def _pair(n, kwargs, seed):
    torch.manual_seed(seed)

    def build(nn, stubs):
        layer = getattr(nn, f"ConvTranspose{n}d")(4, 6, 3, **kwargs)
        return nn.Sequential(stubs.QuantStub(), layer, nn.ReLU(), stubs.DeQuantStub()).eval()
    t, e = build(torch.nn, tq), build(ember.nn, eq)
    copy_weights(t, e)
    return t, e


@pytest.mark.parametrize("n, kwargs", [
    (1, {"stride": 3, "padding": 2, "dilation": 2}),
    (2, {"stride": 2, "padding": 1, "output_padding": 1, "groups": 2}),
    (2, {"stride": (1, 2), "bias": False}),
    (3, {"stride": 2, "padding": (0, 1, 1)}),
])
def test_quantized_conv_transpose_equals_torch(n, kwargs):
    t, e = _pair(n, kwargs, seed=n)
    t.qconfig, e.qconfig = tq.default_qconfig, eq.default_qconfig
    tp, ep = tq.prepare(t), eq.prepare(e)
    x = np.random.default_rng(n).normal(size=(2, 4, *[5] * n)).astype(np.float32)
    tp(torch.tensor(x)), ep(ember.tensor(x))
    tc, ec = tq.convert(tp), eq.convert(ep)
    assert type(ec[1]).__name__ == f"ConvTranspose{n}d"
    qx = ec[0](ember.tensor(x))
    same(ec[1](qx).int_repr(), tc[1](tc[0](torch.tensor(x))).int_repr())
    # the dequantized floats to two float32 roundings: ATen dequantizes in vector blocks by an
    # fma and the tail elements by a multiply, and the block width depends on the CPU
    np.testing.assert_allclose(ec(ember.tensor(x)).numpy(), tc(torch.tensor(x)).numpy(),
                               rtol=2.5e-7, atol=0)
    fresh = type(ec[1])(4, 6, 3, **kwargs)
    fresh.load_state_dict(ec[1].state_dict())
    same(fresh(qx).int_repr(), ec[1](qx).int_repr())


def test_default_qconfig_mapping_quantizes_conv_transpose_per_tensor():
    t, e = _pair(2, {"stride": 2}, seed=5)
    tmap = tq.get_default_qconfig_mapping("x86")
    for mod in t.modules():
        mod.qconfig = tmap.object_type_qconfigs.get(type(mod), tmap.global_qconfig)
    tp = tq.prepare(t)
    ep = eq.prepare(e, qconfig_mapping=eq.get_default_qconfig_mapping("x86"))
    x = np.random.default_rng(5).normal(size=(2, 4, 4, 4)).astype(np.float32)
    tp(torch.tensor(x)), ep(ember.tensor(x))
    tc, ec = tq.convert(tp), eq.convert(ep)
    same(ec[1].weight().int_repr(), tc[1].weight().int_repr())
    assert ec[1].weight().q_scale() == tc[1].weight().q_scale()
    # (the float layers' last-bit differences move the histogram observer's range an ulp)
    np.testing.assert_allclose(ec(ember.tensor(x)).numpy(), tc(torch.tensor(x)).numpy(),
                               atol=1.01 * tc[1].scale)


def test_errors():
    _, e = _pair(2, {}, seed=0)
    e.qconfig = eq.get_default_qconfig("x86")
    p = eq.prepare(e)
    p(ember.randn(1, 4, 3, 3))
    with pytest.raises(ValueError, match="Per channel weight observer is not supported"):
        eq.convert(p)
    with pytest.raises(ValueError, match="zeros"):
        ember.ao.nn.quantized.ConvTranspose2d(2, 2, 3, padding_mode="reflect")
    with pytest.raises(ValueError, match="output_padding"):
        ember.ao.nn.quantized.ConvTranspose1d(2, 2, 3, stride=2, output_padding=2)
    m = ember.ao.nn.quantized.ConvTranspose2d(2, 2, 3)
    q = ember.quantize_per_tensor(ember.ones(1, 2, 3), 0.1, 0, ember.quint8)
    with pytest.raises(ValueError, match=r"Input shape must be `\(N, C, H, W\)`"):
        m(q)
    with pytest.raises(ValueError, match="expected 2 input channels"):
        m(ember.quantize_per_tensor(ember.ones(1, 3, 3, 3), 0.1, 0, ember.quint8))


@pytest.mark.parametrize("shape", [(0, 2, 3, 3), (1, 2, 0, 3)])
def test_empty_input_gives_torch_shape(shape):
    tm = torch.ao.nn.quantized.ConvTranspose2d(2, 3, 3, stride=2)
    em = ember.ao.nn.quantized.ConvTranspose2d(2, 3, 3, stride=2)
    expected = tm(torch.quantize_per_tensor(torch.ones(shape), 0.1, 0, torch.quint8))
    out = em(ember.quantize_per_tensor(ember.ones(*shape), 0.1, 0, ember.quint8))
    assert tuple(out.shape) == tuple(expected.shape)
