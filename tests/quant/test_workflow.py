"""prepare / convert / prepare_qat / quantize_dynamic / fuse_modules on small models with the
same weights and data in Ember and PyTorch (fbgemm): the quantized models' outputs are equal."""

import numpy as np
import pytest
import torch
import torch.ao.quantization as tq

import ember
import ember.ao.quantization as eq
from tests.quant.helpers import copy_weights, same


def _cnn(nn, stubs):
    class Net(nn.Module):
        def __init__(self):
            super().__init__()
            self.quant, self.dequant = stubs.QuantStub(), stubs.DeQuantStub()
            self.conv = nn.Conv2d(1, 4, 3, padding=1)
            self.bn = nn.BatchNorm2d(4)
            self.relu = nn.ReLU()
            self.pool = nn.MaxPool2d(2)
            self.conv2 = nn.Conv2d(4, 6, 3, stride=2, groups=2)
            self.fc1 = nn.Linear(24, 16)
            self.relu2 = nn.ReLU()
            self.fc2 = nn.Linear(16, 5)

        def forward(self, x):
            x = self.pool(self.relu(self.bn(self.conv(self.quant(x)))))
            x = self.conv2(x).flatten(1)
            return self.dequant(self.fc2(self.relu2(self.fc1(x))))
    return Net()


def _pair(seed=0):
    torch.manual_seed(seed)
    t = _cnn(torch.nn, tq)
    with torch.no_grad():
        t.bn.running_mean.uniform_(-0.5, 0.5)
        t.bn.running_var.uniform_(0.5, 2)
        t.bn.weight.uniform_(0.5, 1.5)
    e = _cnn(ember.nn, eq)
    copy_weights(t, e)
    return t, e


def _data(n, seed):
    rng = np.random.default_rng(seed)
    return [rng.normal(size=(8, 1, 12, 12)).astype(np.float32) for _ in range(n)]


@pytest.mark.parametrize("per_channel", [False, True])
@pytest.mark.parametrize("fuse", [False, True])
def test_post_training_static_quantization_equals_torch(per_channel, fuse):
    t, e = (m.eval() for m in _pair())
    if fuse:
        groups = [["conv", "bn", "relu"], ["fc1", "relu2"]]
        t, e = tq.fuse_modules(t, groups), eq.fuse_modules(e, groups)
        copy_weights(t, e)  # the batch-norm folds differ in float rounding: start equal
    weight = "default_per_channel_weight_observer" if per_channel else "default_weight_observer"
    t.qconfig = tq.QConfig(activation=tq.MinMaxObserver.with_args(reduce_range=True),
                           weight=getattr(tq, weight))
    e.qconfig = eq.QConfig(activation=eq.MinMaxObserver.with_args(reduce_range=True),
                           weight=getattr(eq, weight))
    if not fuse:  # a batch norm outside a fusion stays float: take it out of the region
        t.bn.qconfig = e.bn.qconfig = None
        t.bn, e.bn = torch.nn.Identity(), ember.nn.Identity()
    tp, ep = tq.prepare(t), eq.prepare(e)
    for x in _data(3, 1):
        tp(torch.from_numpy(x))
        ep(ember.from_numpy(x))
    (x,) = _data(1, 2)
    tx, ex = torch.from_numpy(x), ember.from_numpy(x)
    # calibrated separately, the float models' last-bit differences can move a scale by an ulp
    ty, ey = tq.convert(tp)(tx).numpy(), eq.convert(ep)(ex).numpy()
    steps = np.abs(ty - ey) / tp.fc2.activation_post_process.calculate_qparams()[0].item()
    assert steps.max() <= 1 + 1e-3 and (steps > 0.5).mean() <= 0.01
    copy_weights(tp, ep)  # the same observed ranges: then every element is equal
    tc, ec = tq.convert(tp), eq.convert(ep)
    assert type(ec.fc1).__name__ == ("LinearReLU" if fuse else "Linear")
    tq_x, eq_x = tc.quant(tx), ec.quant(ex)
    same(eq_x.int_repr(), tq_x.int_repr())
    t_conv, e_conv = tc.conv(tq_x), ec.conv(eq_x)
    assert (e_conv.q_scale(), e_conv.q_zero_point()) == (t_conv.q_scale(), t_conv.q_zero_point())
    same(e_conv.int_repr(), t_conv.int_repr())
    same(ec(ex), tc(tx))  # the whole model: every element equal


@pytest.mark.parametrize("version", [0, 1])  # (FakeQuantize; FusedMovingAvgObsFakeQuantize)
def test_quantization_aware_training_equals_torch(version):
    t, e = _pair(1)
    t.bn, e.bn = torch.nn.Identity(), ember.nn.Identity()
    t = tq.fuse_modules_qat(t.train(), [["conv", "relu"], ["fc1", "relu2"]])
    e = eq.fuse_modules_qat(e.train(), [["conv", "relu"], ["fc1", "relu2"]])
    t.qconfig = tq.get_default_qat_qconfig("x86", version)
    e.qconfig = eq.get_default_qat_qconfig("x86", version)
    tp, ep = tq.prepare_qat(t), eq.prepare_qat(e)
    assert type(ep.conv).__name__ == "ConvReLU2d" and hasattr(ep.conv, "weight_fake_quant")
    for i, x in enumerate(_data(3, 3)):
        target = np.random.default_rng(i).integers(0, 5, 8)
        for model, lib in ((tp, torch), (ep, ember)):
            xx, yy = lib.from_numpy(x), lib.from_numpy(target)
            loss = (torch.nn.functional if lib is torch else ember.nn.functional).cross_entropy(
                model(xx), yy)
            loss.backward()
            with lib.no_grad():  # plain SGD, written out (torch.optim would import dynamo)
                for param in model.parameters():
                    param.add_(param.grad, alpha=-0.05)
                    param.grad = None
    np.testing.assert_allclose(ep.fc2.weight.detach().numpy(), tp.fc2.weight.detach().numpy(),
                               atol=1e-5)
    tc, ec = tq.convert(tp.eval()), eq.convert(ep.eval())
    (x,) = _data(1, 4)
    ty, ey = tc(torch.from_numpy(x)).numpy(), ec(ember.from_numpy(x)).numpy()
    steps = np.abs(ty - ey) / tc.fc2.scale
    # (float training drift of ~1e-8 in an observed range moves an output scale by an ulp)
    assert steps.max() <= 1.0 + 1e-4 and (steps > 0.5).mean() <= 0.1


def test_dynamic_quantization_equals_torch():
    torch.manual_seed(0)
    t = torch.nn.Sequential(torch.nn.Linear(20, 30), torch.nn.ReLU(), torch.nn.Linear(30, 7))
    e = ember.nn.Sequential(ember.nn.Linear(20, 30), ember.nn.ReLU(), ember.nn.Linear(30, 7))
    copy_weights(t, e)
    tq_, eq_ = tq.quantize_dynamic(t), eq.quantize_dynamic(e)
    x = np.random.default_rng(0).normal(size=(2, 64, 20)).astype(np.float32)
    same(eq_(ember.from_numpy(x)), tq_(torch.from_numpy(x)))
    per_channel = {ember.nn.Linear: eq.per_channel_dynamic_qconfig}
    ep = eq.quantize_dynamic(e, per_channel)
    tp = tq.quantize_dynamic(t, {torch.nn.Linear: tq.per_channel_dynamic_qconfig})
    same(ep(ember.from_numpy(x)), tp(torch.from_numpy(x)))
    with pytest.raises(ValueError, match="qint8"):
        eq.quantize_dynamic(e, dtype=ember.qint32)


def test_quantized_state_dict_saves_and_loads(tmp_path):
    _, e = _pair(2)
    e.bn = ember.nn.Identity()
    e = eq.fuse_modules(e.eval(), [["conv", "relu"]])
    e.qconfig = eq.default_per_channel_qconfig
    p = eq.prepare(e)
    for x in _data(2, 5):
        p(ember.from_numpy(x))
    q = eq.convert(p)
    ember.save(q.state_dict(), tmp_path / "q.safetensors")
    _, fresh = _pair(3)
    fresh.bn = ember.nn.Identity()
    fresh = eq.fuse_modules(fresh.eval(), [["conv", "relu"]])
    fresh.qconfig = eq.default_per_channel_qconfig
    p2 = eq.prepare(fresh)
    p2(ember.from_numpy(_data(1, 6)[0]))
    q2 = eq.convert(p2)
    q2.load_state_dict(ember.load(tmp_path / "q.safetensors"))
    (x,) = _data(1, 7)
    same(q2(ember.from_numpy(x)), q(ember.from_numpy(x)))
    assert q2.fc1.weight().int_repr().dtype == ember.int8
    with pytest.raises(Exception, match="Missing|missing"):
        q2.load_state_dict({})


def test_fuse_modules_folds_batch_norm_like_torch():
    t, e = (m.eval() for m in _pair(4))
    tf = tq.fuse_modules(t, ["conv", "bn", "relu"])
    ef = eq.fuse_modules(e, ["conv", "bn", "relu"])
    assert [type(m).__name__ for m in (ef.conv, ef.bn, ef.relu)] == \
        ["ConvReLU2d", "Identity", "Identity"]
    np.testing.assert_allclose(ef.conv[0].weight.detach().numpy(),
                               tf.conv[0].weight.detach().numpy(), rtol=1e-6, atol=1e-7)
    with pytest.raises(NotImplementedError, match="Cannot fuse"):
        eq.fuse_modules(e, ["fc1", "conv"])
    with pytest.raises(NotImplementedError, match="training"):
        eq.fuse_modules(e.train(), ["conv", "bn"])


def test_workflow_errors_are_clear():
    _, e = _pair()
    with pytest.raises(ValueError, match="training mode"):
        eq.prepare_qat(e.eval())
    with pytest.warns(UserWarning, match="None of the submodule"):
        eq.prepare(e)
    qlin = eq.convert(eq.prepare(_qconfigured_linear()))[1]
    with pytest.raises(TypeError, match="QuantStub"):
        qlin(ember.randn(2, 3))


def _qconfigured_linear():
    m = ember.nn.Sequential(eq.QuantStub(), ember.nn.Linear(3, 2), eq.DeQuantStub()).eval()
    m.qconfig = eq.default_qconfig
    return m


def test_aliases_and_reprs():
    assert ember.quantization.prepare is eq.prepare is ember.quant.prepare
    from ember.ao.nn.quantized import dynamic
    assert dynamic.Linear.__name__ == "Linear"
    m = _qconfigured_linear()
    p = eq.prepare(m)
    p(ember.randn(4, 3))
    text = repr(eq.convert(p))
    assert "Quantize(scale=" in text and "qscheme=ember.per_tensor_affine" in text


def test_state_dict_strictness_and_float_dequantize():
    q = eq.convert(eq.prepare(_qconfigured_linear()))
    state = dict(q.state_dict())
    state["1.extra"] = ember.zeros(1)
    with pytest.raises(Exception, match="extra"):
        q.load_state_dict(state)
    x = ember.randn(2)
    assert q[2](x) is x
    with pytest.raises(NotImplementedError, match="symmetric"):
        eq.MinMaxObserver(qscheme=ember.per_tensor_symmetric, reduce_range=True)


def test_prepare_observes_the_modules_torch_observes():
    names = []
    for lib, stubs in ((torch, tq), (ember, eq)):
        m = lib.nn.Sequential(stubs.QuantStub(), lib.nn.Linear(2, 2), stubs.DeQuantStub(),
                              lib.nn.Sequential()).eval()
        m.qconfig = stubs.default_qconfig
        names.append([n for n, _ in stubs.prepare(m).named_modules()])
    assert names[1] == names[0]  # (no observer after a DeQuantStub or an empty Sequential)
