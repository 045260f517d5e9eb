"""QConfigMapping (resolution as PyTorch's, eager prepare with one: same int8 outputs as PyTorch
given the same per-module qconfigs), the default mappings, the added qconfig presets, the fuser
methods and the ``ember.ao.quantization.*`` submodules."""

import importlib

import numpy as np
import pytest
import torch
import torch.ao.quantization as tq
from torch.ao.quantization.fx.qconfig_mapping_utils import (
    _maybe_adjust_qconfig_for_module_type_or_name as torch_resolve,
)

import ember
import ember.ao.quantization as eq
from tests.quant.helpers import TORCH_NAMES, copy_weights, same

_NAMES = ["", "fc", "block", "block.fc", "block.inner.fc", "head", "head.fc", "headless",
          "enc0.fc", "enc1.act"]


def _rules(mapping, linear, relu):
    return (mapping.set_global("g").set_object_type(linear, "lin").set_object_type(relu, None)
            .set_module_name_regex(r"enc\d\.fc", "rx1").set_module_name_regex("enc", "rx2")
            .set_module_name("block", "blk").set_module_name("head", "hd")
            .set_module_name("block.inner", None))


@pytest.mark.parametrize("kind", ["Linear", "ReLU", "Conv2d"])
def test_resolution_matches_torch(kind):
    t = _rules(tq.QConfigMapping(), torch.nn.Linear, torch.nn.ReLU)
    e = _rules(eq.QConfigMapping(), ember.nn.Linear, ember.nn.ReLU)
    for name in _NAMES:
        expected = torch_resolve(t, getattr(torch.nn, kind), name, t.global_qconfig)
        assert e.qconfig_for(getattr(ember.nn, kind), name) == expected, name


def _model(nn, stubs):
    return nn.Sequential(stubs.QuantStub(), nn.Linear(6, 5),
                         nn.Sequential(nn.Linear(5, 4), nn.ReLU()), stubs.DeQuantStub(),
                         nn.Linear(4, 3))


def test_eager_prepare_with_mapping_equals_torch():
    torch.manual_seed(0)
    t, e = _model(torch.nn, tq).eval(), _model(ember.nn, eq).eval()
    copy_weights(t, e)
    tm = (tq.QConfigMapping().set_global(tq.default_qconfig)
          .set_object_type(torch.nn.Linear, tq.default_per_channel_qconfig)
          .set_module_name("4", None))
    em = (eq.QConfigMapping().set_global(eq.default_qconfig)
          .set_object_type(ember.nn.Linear, eq.default_per_channel_qconfig)
          .set_module_name("4", None))
    for name, mod in t.named_modules():  # PyTorch's eager prepare takes qconfig attributes
        mod.qconfig = torch_resolve(tm, type(mod), name, tm.global_qconfig)
    tp, ep = tq.prepare(t), eq.prepare(e, qconfig_mapping=em)
    assert not hasattr(ep[4], "activation_post_process")
    x = np.random.default_rng(0).normal(size=(16, 6)).astype(np.float32)
    tp(torch.tensor(x)), ep(ember.tensor(x))
    tc, ec = tq.convert(tp), eq.convert(ep)
    assert [type(m).__name__ for m in ec] == [type(m).__name__ for m in tc]
    same(ec(ember.tensor(x)), tc(torch.tensor(x)))


def test_own_qconfig_attribute_wins_over_mapping_for_its_subtree():
    m = ember.nn.Sequential(ember.nn.Linear(2, 2), ember.nn.Sequential(ember.nn.Linear(2, 2)))
    m[1].qconfig = None
    eq.propagate_qconfig_(m, eq.QConfigMapping().set_global(eq.default_qconfig))
    assert m[0].qconfig is eq.default_qconfig and m[1][0].qconfig is None


def test_to_dict_from_dict_round_trip_and_errors():
    e = _rules(eq.QConfigMapping(), ember.nn.Linear, ember.nn.ReLU)
    t = _rules(tq.QConfigMapping(), ember.nn.Linear, ember.nn.ReLU)
    assert e.to_dict() == t.to_dict()
    back = eq.QConfigMapping.from_dict(e.to_dict())
    assert back.to_dict() == e.to_dict()
    with pytest.raises(NotImplementedError, match="module_name_object_type_order"):
        eq.QConfigMapping.from_dict({"module_name_object_type_order": [("", "x", 0, None)]})
    with pytest.raises(ValueError, match="unknown keys"):
        eq.QConfigMapping.from_dict({"object_types": []})
    with pytest.raises(ValueError, match=r"set_module_name_regex: '\[' is not a valid regex"):
        eq.QConfigMapping().set_module_name_regex("[", None)  # (not at the first prepare)


def _describe(factory):
    """A factory's class and keyword arguments, with PyTorch's names for Ember's objects."""
    if factory is None or isinstance(factory, type):
        return getattr(factory, "__name__", None)
    factory = getattr(factory, "p", factory)  # (PyTorch's wrapper of a functools.partial)
    cls, kwargs = ((factory.func, factory.keywords) if hasattr(factory, "func")
                   else (factory.cls, factory.kwargs))
    return cls.__name__, {k: _describe(v) if isinstance(v, type) or hasattr(v, "p")
                          or hasattr(v, "cls") else TORCH_NAMES.get(v, v)
                          for k, v in kwargs.items()}


def _describe_qconfig(qconfig):
    return None if qconfig is None else (_describe(qconfig.activation),
                                         _describe(qconfig.weight))


@pytest.mark.parametrize("qat", [False, True])
def test_default_mappings_match_torch(qat):
    get = "get_default_qat_qconfig_mapping" if qat else "get_default_qconfig_mapping"
    t, e = getattr(tq, get)("x86"), getattr(eq, get)("x86")
    assert _describe_qconfig(e.global_qconfig) == _describe_qconfig(t.global_qconfig)
    torch_rules = {getattr(k, "__name__", k): _describe_qconfig(v)
                   for k, v in t.object_type_qconfigs.items() if k is not torch.nn.PReLU}
    ember_rules = {getattr(k, "__name__", k): _describe_qconfig(v)
                   for k, v in e.object_type_qconfigs.items()}
    assert ember_rules == torch_rules


@pytest.mark.parametrize("name", [
    "default_qat_qconfig_v2", "default_weight_only_qconfig", "default_activation_only_qconfig",
    "default_reuse_input_qconfig"])
def test_qconfig_presets_match_torch(name):
    assert _describe_qconfig(getattr(eq, name)) == _describe_qconfig(getattr(tq, name))


@pytest.mark.parametrize("name", [
    "default_histogram_fake_quant", "default_fused_act_fake_quant",
    "default_fused_wt_fake_quant", "default_fused_per_channel_wt_fake_quant",
    "fused_wt_fake_quant_range_neg_127_to_127",
    "fused_per_channel_wt_fake_quant_range_neg_127_to_127",
    "default_histogram_observer", "weight_observer_range_neg_127_to_127",
    "per_channel_weight_observer_range_neg_127_to_127"])
def test_observer_and_fake_quant_presets_compute_as_torch(name):
    t, e = getattr(tq, name)(), getattr(eq, name)()
    x = np.random.default_rng(1).normal(size=(4, 8)).astype(np.float32) * 3
    for _ in range(2):
        ty, ey = t(torch.tensor(x)), e(ember.tensor(x))
        same(ey, ty)
        x = x * 0.5 + 1
    for (ts, tz), (es, ez) in [(t.calculate_qparams(), e.calculate_qparams())]:
        same(es, ts), same(ez, tz)


def _conv_bn_pair(kind, n):
    torch.manual_seed(n)
    tconv = getattr(torch.nn, kind)(2, 3, 3)
    tbn = getattr(torch.nn, f"BatchNorm{n}d")(3)
    with torch.no_grad():
        tbn.running_mean.uniform_(-1, 1), tbn.running_var.uniform_(0.5, 2)
        tbn.weight.uniform_(0.5, 1.5), tbn.bias.uniform_(-1, 1)
    econv, ebn = getattr(ember.nn, kind)(2, 3, 3), getattr(ember.nn, f"BatchNorm{n}d")(3)
    copy_weights(tconv, econv), copy_weights(tbn, ebn)
    return (tconv.eval(), tbn.eval()), (econv.eval(), ebn.eval())


@pytest.mark.parametrize("method, kind, n", [
    ("fuse_conv_bn", "Conv1d", 1), ("fuse_conv_bn", "Conv3d", 3),
    ("fuse_conv_bn_relu", "Conv2d", 2), ("fuse_convtranspose_bn", "ConvTranspose1d", 1),
    ("fuse_convtranspose_bn", "ConvTranspose2d", 2)])
def test_fuser_methods_match_torch(method, kind, n):
    (tconv, tbn), (econv, ebn) = _conv_bn_pair(kind, n)
    relu = method.endswith("relu")
    extra = ((torch.nn.ReLU().eval(),), (ember.nn.ReLU().eval(),)) if relu else ((), ())
    t = getattr(tq.fuser_method_mappings, method)(False, tconv, tbn, *extra[0])
    e = getattr(eq.fuser_method_mappings, method)(False, econv, ebn, *extra[1])
    assert type(e).__name__ == type(t).__name__
    for (tk, tv), (ek, ev) in zip(t.state_dict().items(), e.state_dict().items()):
        assert tk == ek
        np.testing.assert_allclose(ev.numpy(), tv.numpy(), rtol=1e-6, atol=1e-7)


def test_fuse_modules_folds_conv_transpose_batch_norm():
    (tconv, tbn), (econv, ebn) = _conv_bn_pair("ConvTranspose2d", 2)
    e = eq.fuse_modules(ember.nn.Sequential(econv, ebn), ["0", "1"])
    x = np.random.default_rng(2).normal(size=(1, 2, 4, 4)).astype(np.float32)
    np.testing.assert_allclose(e(ember.tensor(x)).detach().numpy(),
                               tbn(tconv(torch.tensor(x))).detach().numpy(), atol=1e-5)
    assert type(e[1]).__name__ == "Identity"


def test_fuser_method_errors():
    (_, _), (econv, ebn) = _conv_bn_pair("ConvTranspose1d", 1)
    with pytest.raises(NotImplementedError, match="not yet supported in QAT"):
        eq.fuse_convtranspose_bn(True, econv, ebn)
    with pytest.raises(ValueError, match=r"num_features \(2\) must be the Conv2d's out_channels"):
        eq.fuse_conv_bn_relu(True, ember.nn.Conv2d(1, 1, 1), ember.nn.BatchNorm2d(2),
                             ember.nn.ReLU())
    with pytest.raises(ValueError, match="affine=True and track_running_stats=True"):
        eq.fuse_conv_bn(True, ember.nn.Conv2d(1, 1, 1), ember.nn.BatchNorm2d(1, affine=False))
    with pytest.raises(ValueError, match="same mode"):
        eq.fuse_linear_bn(False, ember.nn.Linear(1, 1), ember.nn.BatchNorm1d(1).eval())
    with pytest.raises(TypeError, match="ConvTranspose1d"):
        eq.fuse_conv_bn(False, econv, ebn)
    with pytest.raises(NotImplementedError, match="Cannot fuse modules"):
        eq.get_fuser_method((ember.nn.ReLU, ember.nn.Linear))
    convt, bn = ember.nn.ConvTranspose2d(1, 1, 1), ember.nn.BatchNorm2d(1)  # (training mode)
    with pytest.raises(NotImplementedError, match=r"fuse_convtranspose_bn: .*training mode.*"
                                                  r"call \.eval\(\)"):
        eq.fuse_convtranspose_bn(False, convt, bn)


@pytest.mark.parametrize("sub", ["observer", "fake_quantize", "qconfig", "qconfig_mapping",
                                 "quantize", "fuse_modules", "fuser_method_mappings", "stubs",
                                 "quantization_mappings", "quant_type"])
def test_submodules_reexport_torch_names(sub):
    ours = importlib.import_module(f"ember.ao.quantization.{sub}")
    theirs = importlib.import_module(f"torch.ao.quantization.{sub}")
    assert ours.__all__ and all(hasattr(ours, n) for n in ours.__all__)
    public = [n for n in ours.__all__ if not n.isupper()]
    assert [n for n in public if not hasattr(theirs, n)] == []
    for n in ours.__all__:  # re-exports, not copies
        assert getattr(ours, n) is getattr(eq, n)


def test_package_attributes_are_the_submodules_but_fuse_modules_the_function():
    assert ember.quantization is eq
    assert eq.observer.__name__ == "ember.ao.quantization.observer"
    assert eq.qconfig_mapping.__name__ == "ember.ao.quantization.qconfig_mapping"
    assert callable(eq.fuse_modules) and callable(tq.fuse_modules)


def test_quantize_dynamic_takes_a_mapping():
    m = ember.nn.Sequential(ember.nn.Linear(4, 3), ember.nn.Sequential(ember.nn.Linear(3, 2)))
    qm = (eq.QConfigMapping().set_object_type(ember.nn.Linear, eq.default_dynamic_qconfig)
          .set_module_name("1", None))
    q = eq.quantize_dynamic(m, qm)
    assert type(q[0]).__module__ == "ember.quant.modules.dynamic"
    assert type(q[1][0]) is ember.nn.Linear


def test_a_qconfig_given_as_the_mapping_is_refused_with_a_hint():
    m = ember.nn.Sequential(ember.nn.Linear(2, 2))
    with pytest.raises(TypeError, match=r"prepare: qconfig_mapping must be a QConfigMapping.*"
                                        r"got QConfig.*set_global"):
        eq.prepare(m, qconfig_mapping=eq.default_qconfig)
    with pytest.raises(TypeError, match="propagate_qconfig_: qconfig_dict must be"):
        eq.propagate_qconfig_(m, eq.default_qconfig)
    with pytest.raises(TypeError, match="quantize_dynamic: qconfig_spec"):
        eq.quantize_dynamic(m, eq.default_dynamic_qconfig)
