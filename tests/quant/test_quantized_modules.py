"""Quantized modules on the edges of their inputs: float tensors after the quantized region,
empty batches, wrong shapes, reflection padding; each as PyTorch (fbgemm) or with its error."""

import numpy as np
import pytest
import torch
import torch.ao.quantization as tq

import ember
import ember.ao.quantization as eq
from ember.quant.modules import quantized as nnq
from tests.quant.helpers import copy_weights, same


def _after_dequant(nn, stubs):
    return nn.Sequential(stubs.QuantStub(), nn.Linear(4, 6), nn.ReLU(), stubs.DeQuantStub(),
                         nn.ReLU(), nn.Unflatten(1, (1, 2, 3)), nn.MaxPool2d((1, 2)),
                         nn.Flatten()).eval()


def test_relu_and_max_pool_after_the_quantized_region_take_float_tensors():
    torch.manual_seed(0)
    t, e = _after_dequant(torch.nn, tq), _after_dequant(ember.nn, eq)
    copy_weights(t, e)
    t.qconfig, e.qconfig = tq.default_qconfig, eq.default_qconfig
    x = np.random.RandomState(0).randn(8, 4).astype(np.float32)
    tp, ep = tq.prepare(t), eq.prepare(e)
    tp(torch.tensor(x))
    ep(ember.tensor(x))
    tc, ec = tq.convert(tp), eq.convert(ep)
    assert [type(m).__name__ for m in ec] == [type(m).__name__ for m in tc]
    # (the float linear layers may round differently in the last bit, and so the scales)
    np.testing.assert_allclose(ec(ember.tensor(x[:3])).numpy(),
                               tc(torch.tensor(x[:3])).numpy(), rtol=1e-6)


def _qx(shape, scale=0.1, zero_point=3):
    return ember.quantize_per_tensor(ember.ones(*shape), scale, zero_point, ember.quint8)


def test_dequantize_of_an_ordinary_tensor_as_torch():  # (float32, itself if so: sweep65c)
    import torch.ao.nn.quantized as tnnq
    for values, dtype in [([0.3, -1.25], "float64"), ([1, 2], "int64"), ([0.5], "float32")]:
        t = tnnq.DeQuantize()(torch.tensor(values, dtype=getattr(torch, dtype)))
        e = nnq.DeQuantize()(ember.tensor(values, dtype=getattr(ember, dtype)))
        assert e.dtype is ember.float32 and e.tolist() == t.tolist()
    x = ember.tensor([1.0])
    assert nnq.DeQuantize()(x) is x


def test_empty_batches_give_empty_outputs():
    assert nnq.Linear(4, 3)(_qx((0, 4))).shape == (0, 3)
    assert nnq.Linear(4, 3)(_qx((2, 0, 4))).shape == (2, 0, 3)
    dyn = eq.quantize_dynamic(ember.nn.Sequential(ember.nn.Linear(4, 3)))
    assert dyn(ember.ones(0, 4)).shape == (0, 3)


def test_calibration_on_an_empty_batch_then_data():
    m = ember.nn.Sequential(eq.QuantStub(), ember.nn.Linear(4, 3), eq.DeQuantStub()).eval()
    m.qconfig = eq.default_qconfig
    p = eq.prepare(m)
    p(ember.ones(0, 4))
    p(ember.randn(5, 4))
    assert eq.convert(p)(ember.randn(2, 4)).shape == (2, 3)


@pytest.mark.parametrize("make, shape, match", [
    (lambda: nnq.Linear(4, 3), (4,), r"at least 2-D"),
    (lambda: nnq.Linear(4, 3), (2, 5), r"4 input features.*\(2, 5\)"),
    (lambda: nnq.Conv2d(4, 8, 3), (1, 3, 5, 5), r"4 input channels.*\(1, 3, 5, 5\)"),
    (lambda: nnq.Conv2d(4, 8, 3, padding=1, dilation=2), (1, 4, 2, 2),
     r"smaller than the kernel"),
])
def test_wrong_input_shapes_are_named(make, shape, match):
    with pytest.raises(ValueError, match=match):
        make()(_qx(shape))


def test_groups_must_divide_the_channels():
    with pytest.raises(ValueError, match="out_channels must be divisible by groups"):
        nnq.Conv2d(4, 6, 3, groups=4)
    with pytest.raises(ValueError, match="in_channels must be divisible by groups"):
        nnq.Conv2d(3, 6, 3, groups=2)


def test_reflection_padded_conv_equals_torch():
    torch.manual_seed(0)
    kw = dict(kernel_size=3, padding=(1, 2), padding_mode="reflect", stride=(1, 2))
    t = torch.nn.Sequential(tq.QuantStub(), torch.nn.Conv2d(2, 3, **kw), tq.DeQuantStub())
    e = ember.nn.Sequential(eq.QuantStub(), ember.nn.Conv2d(2, 3, **kw), eq.DeQuantStub())
    copy_weights(t, e)
    t.qconfig, e.qconfig = tq.default_qconfig, eq.default_qconfig
    x = np.random.RandomState(1).randn(2, 2, 5, 6).astype(np.float32)
    tp, ep = tq.prepare(t.eval()), eq.prepare(e.eval())
    tp(torch.tensor(x))
    ep(ember.tensor(x))
    tc, ec = tq.convert(tp), eq.convert(ep)
    # (the float convolutions may differ in the last bit, and so the output scales: compare the
    # quantized convolution on the same quantized input, with torch's output parameters)
    ec[1].scale, ec[1].zero_point = tc[1].scale, tc[1].zero_point
    qx = tc[0](torch.tensor(x))
    eqx = ember.quantize_per_tensor(ember.tensor(x), qx.q_scale(), qx.q_zero_point(),
                                    ember.quint8)
    same(ec[1](eqx).int_repr(), tc[1](qx).int_repr())


@pytest.mark.parametrize("features", [16, 1100])  # (GEMMs in float32, and in float64)
def test_long_dot_products_stay_exact(features):
    torch.manual_seed(0)
    t = torch.nn.Sequential(torch.nn.Linear(features, 3))
    e = ember.nn.Sequential(ember.nn.Linear(features, 3))
    copy_weights(t, e)
    x = np.random.RandomState(0).uniform(-1, 1, (4, features)).astype(np.float32)
    same(eq.quantize_dynamic(e)(ember.tensor(x)), tq.quantize_dynamic(t)(torch.tensor(x)))


def test_quantized_module_reprs_name_them_as_torch():
    import torch.ao.nn.quantized as tnnq
    import torch.ao.nn.quantized.dynamic as tnnqd

    import ember.ao.nn.quantized as ennq
    import ember.ao.nn.quantized.dynamic as ennqd
    made = [(lambda m: m.Linear(3, 2)), (lambda m: m.Conv2d(2, 4, 3)),
            (lambda m: m.ConvTranspose1d(2, 2, 3)), (lambda m: m.Dropout(0.5)),
            (lambda m: m.ReLU6()), (lambda m: m.Hardswish(0.5, 3)),
            (lambda m: m.BatchNorm2d(3)), (lambda m: m.Embedding(5, 2))]
    dynamic = [(lambda m: m.Linear(3, 2)), (lambda m: m.LSTM(2, 3)), (lambda m: m.GRUCell(2, 3))]
    for make, (t, e) in [(f, (tnnq, ennq)) for f in made] + [(f, (tnnqd, ennqd)) for f in dynamic]:
        want = repr(make(t)).split("(")[0]
        assert repr(make(e)).split("(")[0] == want
    model = ember.nn.Sequential(ember.nn.Linear(3, 2))
    quantized = eq.quantize_dynamic(model, {ember.nn.Linear})
    assert repr(quantized).splitlines()[1].startswith("  (0): DynamicQuantizedLinear(")


@pytest.mark.parametrize("kw", [{}, {"num_layers": 2, "bias": False, "batch_first": True,
                                     "dropout": 0.5, "bidirectional": True}])
def test_dynamic_rnn_repr_as_torch(kw):
    import torch.ao.nn.quantized.dynamic as tnnqd

    import ember.ao.nn.quantized.dynamic as ennqd
    for name in ("LSTM", "GRU"):
        want = repr(getattr(tnnqd, name)(2, 3, **kw))
        assert repr(getattr(ennqd, name)(2, 3, **kw)) == want
    # (torch 2.13 prints no dtype, float16 too: sweep65c)
    for name in ("LSTM", "GRU"):
        got = repr(getattr(ennqd, name)(2, 3, dtype=ember.float16, **kw))
        assert got == repr(getattr(tnnqd, name)(2, 3, dtype=torch.float16, **kw))


@pytest.mark.parametrize("name, args, kw", [
    ("Conv2d", (2, 4, 3), {}),
    ("Conv2d", (2, 4, 3), {"padding": 1, "dilation": 2, "groups": 2, "bias": False, "stride": 2}),
    ("Conv1d", (2, 4, 3), {"padding_mode": "reflect"}),
    ("ConvTranspose2d", (2, 4, 3), {"output_padding": 1, "stride": 2}),
    ("ConvTranspose1d", (2, 2, 3), {"padding": 1})])
def test_quantized_conv_repr_as_torch(name, args, kw):
    import torch.ao.nn.quantized as tnnq

    import ember.ao.nn.quantized as ennq
    want = repr(getattr(tnnq, name)(*args, **kw))
    assert repr(getattr(ennq, name)(*args, **kw)) == want


@pytest.mark.parametrize("scale, zero_point", [(0.1, 2), (1e-9, 0)])
def test_quantize_repr_as_torch(scale, zero_point):
    import torch.ao.nn.quantized as tnnq

    import ember.ao.nn.quantized as ennq
    want = repr(tnnq.Quantize(scale, zero_point, torch.quint8)).replace("torch.", "ember.")
    assert repr(ennq.Quantize(scale, zero_point, ember.quint8)) == want
