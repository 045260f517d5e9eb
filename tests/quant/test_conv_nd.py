"""Quantized Conv1d and Conv3d (fused with batch norm and ReLU or not, per-tensor and
per-channel weights) against PyTorch's fbgemm kernels: equal integers once the observers hold
the same ranges."""

import numpy as np
import pytest
import torch
import torch.ao.quantization as tq

import ember
import ember.ao.quantization as eq
from ember.quant.modules import quantized as nnq
from tests.quant.helpers import copy_weights, same


def _net(nn, stubs, n):
    conv, bn = getattr(nn, f"Conv{n}d"), getattr(nn, f"BatchNorm{n}d")
    return nn.Sequential(stubs.QuantStub(), conv(2, 4, 3, padding=1), bn(4), nn.ReLU(),
                         conv(4, 6, 2, stride=2, groups=2, dilation=1), nn.ReLU(),
                         conv(6, 3, 1, bias=False), stubs.DeQuantStub()).eval()


@pytest.mark.parametrize("n, spatial", [(1, (9,)), (3, (4, 5, 6))])
@pytest.mark.parametrize("per_channel", [False, True])
def test_conv_nd_equals_torch(n, spatial, per_channel):
    torch.manual_seed(n)
    t, e = _net(torch.nn, tq, n), _net(ember.nn, eq, n)
    with torch.no_grad():
        t[2].running_mean.uniform_(-0.5, 0.5)
        t[2].running_var.uniform_(0.5, 2)
    copy_weights(t, e)
    groups = [["1", "2", "3"], ["4", "5"]]
    t, e = tq.fuse_modules(t, groups), eq.fuse_modules(e, groups)
    assert type(e[1]).__name__ == f"ConvReLU{n}d" and type(e[4]).__name__ == f"ConvReLU{n}d"
    copy_weights(t, e)  # (the batch-norm folds may differ in the last bit: start equal)
    qc = "default_per_channel_qconfig" if per_channel else "default_qconfig"
    t.qconfig, e.qconfig = getattr(tq, qc), getattr(eq, qc)
    tp, ep = tq.prepare(t), eq.prepare(e)
    x = np.random.default_rng(n).normal(size=(3, 2, *spatial)).astype(np.float32)
    tp(torch.from_numpy(x))
    ep(ember.from_numpy(x))
    copy_weights(tp, ep)  # the same observed ranges
    tc, ec = tq.convert(tp), eq.convert(ep)
    assert [type(m).__name__ for m in ec] == [type(m).__name__ for m in tc]
    same(ec(ember.from_numpy(x)), tc(torch.from_numpy(x)))


def _qx(shape):
    return ember.quantize_per_tensor(ember.ones(*shape), 0.1, 3, ember.quint8)


def test_conv_nd_errors_name_the_layer():
    with pytest.raises(ValueError, match=r"Conv1d: expected a 3-D \(N, C, L\) input"):
        nnq.Conv1d(2, 2, 3)(_qx((1, 2, 4, 4)))
    with pytest.raises(ValueError, match="Conv3d: only numeric zeros padding"):
        nnq.Conv3d(2, 2, 3, padding_mode="reflect")
    with pytest.raises(ValueError, match="Conv1d: the padded input"):
        nnq.Conv1d(2, 2, 3)(_qx((1, 2, 2)))


def test_reflection_padded_conv1d_equals_torch():
    torch.manual_seed(0)
    kw = dict(kernel_size=3, padding=2, padding_mode="reflect")
    t = torch.nn.Sequential(tq.QuantStub(), torch.nn.Conv1d(2, 3, **kw), tq.DeQuantStub())
    e = ember.nn.Sequential(eq.QuantStub(), ember.nn.Conv1d(2, 3, **kw), eq.DeQuantStub())
    copy_weights(t, e)
    t.qconfig, e.qconfig = tq.default_qconfig, eq.default_qconfig
    x = np.random.RandomState(1).randn(2, 2, 7).astype(np.float32)
    tp, ep = tq.prepare(t.eval()), eq.prepare(e.eval())
    tp(torch.tensor(x))
    ep(ember.tensor(x))
    copy_weights(tp, ep)
    same(eq.convert(ep)(ember.tensor(x)), tq.convert(tp)(torch.tensor(x)))


def test_qat_conv_nd_converts_like_torch():
    torch.manual_seed(0)
    t = torch.nn.Sequential(tq.QuantStub(), torch.nn.Conv3d(1, 2, 2), torch.nn.ReLU(),
                            tq.DeQuantStub())
    e = ember.nn.Sequential(eq.QuantStub(), ember.nn.Conv3d(1, 2, 2), ember.nn.ReLU(),
                            eq.DeQuantStub())
    copy_weights(t, e)
    t = tq.fuse_modules_qat(t, ["1", "2"])
    e = eq.fuse_modules_qat(e, ["1", "2"])
    t.qconfig, e.qconfig = tq.get_default_qat_qconfig("x86"), eq.get_default_qat_qconfig("x86")
    tp, ep = tq.prepare_qat(t.train()), eq.prepare_qat(e.train())
    assert type(ep[1]).__name__ == "ConvReLU3d"
    x = np.random.RandomState(2).randn(2, 1, 3, 3, 4).astype(np.float32)
    ty, ey = tp(torch.tensor(x)), ep(ember.tensor(x))
    np.testing.assert_allclose(ey.detach().numpy(), ty.detach().numpy(), atol=1e-6)
    copy_weights(tp, ep)
    same(eq.convert(ep.eval())(ember.tensor(x)), tq.convert(tp.eval())(torch.tensor(x)))


def test_qat_batch_norm_fusion_refusal_names_the_torch_module():
    m = ember.nn.Sequential(ember.nn.Conv3d(1, 2, 1), ember.nn.BatchNorm3d(2)).train()
    assert type(eq.fuse_modules_qat(m, ["0", "1"])[0]).__name__ == "ConvBn3d"
    m = ember.nn.Sequential(ember.nn.Linear(2, 2), ember.nn.BatchNorm1d(2)).train()
    with pytest.raises(NotImplementedError, match="PyTorch's LinearBn1d"):
        eq.fuse_modules_qat(m, ["0", "1"])


@pytest.mark.parametrize("name", ["Conv2d", "ConvTranspose2d"])
@pytest.mark.parametrize("kwargs, message", [
    ({"stride": 0}, "stride must be positive"),
    ({"dilation": 0}, "dilation must be positive"),
    ({"kernel_size": 0}, "kernel_size must be positive"),
    ({"padding": -1}, "padding must be non-negative"),
    ({"kernel_size": (3, 3, 3)}, r"kernel_size must be an int or 2 ints"),
    ({"groups": 0}, "groups must be a positive int"),
])
def test_conv_geometry_refused_at_construction_as_torch(name, kwargs, message):
    # PyTorch's prepacking refuses these; they must not reach the kernel (silent wrong shapes)
    args = {"in_channels": 2, "out_channels": 2, "kernel_size": 3, **kwargs}
    with pytest.raises(ValueError, match=f"quantized {name}: {message}"):
        getattr(ember.ao.nn.quantized, name)(**args)
