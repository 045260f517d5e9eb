"""The one-call eager workflow (quantize, quantize_qat, default_eval_fn), observer state dicts,
qconfig comparison and deprecated forms, qnnpack's presets and the module-mapping getters,
against torch.ao.quantization."""

import warnings

import numpy as np
import pytest
import torch
import torch.ao.quantization as tq

import ember
import ember.ao.quantization as eq
from tests.quant.helpers import copy_weights, same


def _net(nn, stubs):
    return nn.Sequential(stubs.QuantStub(), nn.Conv2d(2, 3, 3), nn.ReLU(), nn.Flatten(),
                         nn.Linear(12, 4), stubs.DeQuantStub())


def _pair(seed=0):
    torch.manual_seed(seed)
    t, e = _net(torch.nn, tq), _net(ember.nn, eq)
    copy_weights(t, e)
    return t, e


_X = np.random.default_rng(0).normal(size=(5, 2, 4, 4)).astype(np.float32)


def _torch_ranges(prepared):
    """``prepared``'s observer state as Ember tensors (so that both sides quantize with the
    same ranges: separately calibrated, float last bits may move a range by an ulp)."""
    return {k: ember.tensor(v.numpy()) for k, v in tq.get_observer_state_dict(prepared).items()}


def test_quantize_and_default_eval_fn_equal_torch():
    t, e = _pair()
    t.qconfig, e.qconfig = tq.default_qconfig, eq.default_qconfig
    data_t, data_e = [(torch.tensor(_X), None)], [(ember.tensor(_X), None)]
    ranges = {}

    def calibrate_t(model, data):
        tq.default_eval_fn(model, data)
        ranges.update(_torch_ranges(model))

    def calibrate_e(model, data):
        eq.default_eval_fn(model, data)
        eq.load_observer_state_dict(model, ranges)

    tqm = tq.quantize(t, calibrate_t, [data_t])
    eqm = eq.quantize(e, calibrate_e, [data_e])
    assert not hasattr(e[1], "activation_post_process")  # (a copy: the model is untouched)
    assert [type(m).__name__ for m in eqm] == [type(m).__name__ for m in tqm]
    same(eqm(ember.tensor(_X)), tqm(torch.tensor(_X)))
    same(eqm[4].weight().int_repr(), tqm[4].weight().int_repr())
    assert eq.quantize(e, eq.default_eval_fn, [data_e], inplace=True) is e


def test_quantize_qat_equals_torch():
    t, e = _pair(1)
    t.qconfig = tq.get_default_qat_qconfig("x86")
    e.qconfig = eq.get_default_qat_qconfig("x86")
    ranges = {}

    def train_t(model, x):
        model(x)
        ranges.update(_torch_ranges(model))

    def train_e(model, x):
        model(x)
        eq.load_observer_state_dict(model, ranges)

    tqm = tq.quantize_qat(t, train_t, (torch.tensor(_X),))
    eqm = eq.quantize_qat(e, train_e, (ember.tensor(_X),))
    assert eqm.training and tqm.training
    same(eqm.eval()(ember.tensor(_X)), tqm.eval()(torch.tensor(_X)))


def _prepared(qat=False, seed=0):
    t, e = _pair(seed)
    if qat:
        t.qconfig, e.qconfig = tq.get_default_qat_qconfig("x86"), eq.get_default_qat_qconfig("x86")
        return tq.prepare_qat(t.train()), eq.prepare_qat(e.train())
    t.qconfig, e.qconfig = tq.default_qconfig, eq.default_qconfig
    return tq.prepare(t.eval()), eq.prepare(e.eval())


@pytest.mark.parametrize("qat", [False, True])
def test_observer_state_dict_keys_values_and_reload_equal_torch(qat):
    t, e = _prepared(qat)
    t(torch.tensor(_X)), e(ember.tensor(_X))
    ts, es = tq.get_observer_state_dict(t), eq.get_observer_state_dict(e)
    assert list(es) == list(ts)
    for k in ts:
        np.testing.assert_allclose(es[k].numpy(), ts[k].numpy(), rtol=1e-6)
    _, fresh = _prepared(qat, seed=3)
    eq.load_observer_state_dict(fresh, _torch_ranges(t))
    for k, v in eq.get_observer_state_dict(fresh).items():
        same(v, ts[k])
    del es["4.activation_post_process.min_val" if not qat
           else "4.activation_post_process.activation_post_process.min_val"]
    with pytest.raises(RuntimeError, match="missing keys for observers.*min_val"):
        eq.load_observer_state_dict(fresh, es)


def test_qconfig_equals_like_torch():
    cases = [("default_qconfig", "default_qconfig"), ("default_qconfig", "default_qat_qconfig"),
             ("default_per_channel_qconfig", "default_qconfig")]
    for a, b in cases:
        assert eq.qconfig_equals(getattr(eq, a), getattr(eq, b)) == \
            tq.qconfig_equals(getattr(tq, a), getattr(tq, b))
    for lib in (tq, eq):  # separately built factories, nested observer factories
        assert lib.qconfig_equals(lib.get_default_qat_qconfig("x86"),
                                  lib.get_default_qat_qconfig("x86"))
        assert not lib.qconfig_equals(lib.get_default_qat_qconfig("x86"),
                                      lib.get_default_qat_qconfig("qnnpack"))
        assert lib.qconfig_equals(None, None) and not lib.qconfig_equals(lib.default_qconfig,
                                                                         None)
        assert not lib.qconfig_equals(
            lib.QConfig(lib.MinMaxObserver.with_args(quant_min=0, quant_max=127),
                        lib.default_weight_observer),
            lib.QConfig(lib.MinMaxObserver.with_args(quant_min=0, quant_max=255),
                        lib.default_weight_observer))


def test_deprecated_qconfig_forms_warn_like_torch():
    with pytest.warns(FutureWarning, match="get_default_qconfig_mapping"):
        d = eq.get_default_qconfig_dict("qnnpack")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        td = tq.get_default_qconfig_dict("qnnpack")
        tqat = tq.get_default_qat_qconfig_dict()
    assert list(d) == list(td) and eq.qconfig_equals(d[""], eq.get_default_qconfig("qnnpack"))
    assert len(d["object_type"]) == len(td["object_type"]) - 1  # (less PyTorch's PReLU entry)
    with pytest.warns(FutureWarning, match="get_default_qat_qconfig_mapping"):
        assert list(eq.get_default_qat_qconfig_dict()) == list(tqat)
    with pytest.warns(FutureWarning, match="QConfigDynamic"):
        qc = eq.QConfigDynamic(weight=eq.default_weight_observer)
    assert qc.activation is ember.nn.Identity and qc.weight is eq.default_weight_observer
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        with pytest.raises(ValueError, match="observer instance"):
            eq.QConfigDynamic(weight=eq.MinMaxObserver())


def _data(seed):
    rng = np.random.default_rng(seed)
    return [(rng.normal(size=(4, 6)) * 2 + shift).astype(np.float32) for shift in (0.3, -1, 2)]


@pytest.mark.parametrize("name", [
    "default_symmetric_qnnpack_qconfig", "default_per_channel_symmetric_qnnpack_qconfig",
    "default_symmetric_qnnpack_qat_qconfig", "default_per_channel_symmetric_qnnpack_qat_qconfig",
    "get_default_qconfig", "get_default_qat_qconfig"])
@pytest.mark.parametrize("which", ["activation", "weight"])
def test_qnnpack_presets_choose_torchs_qparams(name, which):
    t_qc, e_qc = getattr(tq, name), getattr(eq, name)
    if name.startswith("get_"):
        t_qc, e_qc = t_qc("qnnpack"), e_qc("qnnpack")
    t, e = getattr(t_qc, which)(), getattr(e_qc, which)()
    assert type(e).__name__ == type(t).__name__
    for x in _data(1):
        out_e, out_t = e(ember.tensor(x)), t(torch.tensor(x))
        same(out_e, out_t)
    for a, b in zip(e.calculate_qparams(), t.calculate_qparams()):
        same(a, b)


def test_qnnpack_default_mappings_equal_torchs():
    for is_qat in (False, True):
        get = "get_default_qat_qconfig_mapping" if is_qat else "get_default_qconfig_mapping"
        t, e = getattr(tq, get)("qnnpack"), getattr(eq, get)("qnnpack")
        for kind in (torch.nn.ConvTranspose2d, torch.nn.Tanh):
            e_kind = getattr(ember.nn, kind.__name__)
            for which in ("activation", "weight"):
                te = getattr(t.object_type_qconfigs[kind], which)()
                ee = getattr(e.object_type_qconfigs[e_kind], which)()
                assert type(ee).__name__ == type(te).__name__
                assert (ee.quant_min, ee.quant_max) == (te.quant_min, te.quant_max)


def test_float16_qconfigs():
    for name in ("float16_dynamic_qconfig", "float16_static_qconfig"):
        for which in ("activation", "weight"):
            t, e = getattr(getattr(tq, name), which)(), getattr(getattr(eq, name), which)()
            assert type(e).__name__ == type(t).__name__ == "PlaceholderObserver"
            assert e.dtype is ember.float16 and e.is_dynamic == t.is_dynamic


def test_module_class_getters_like_torch():
    for kind in ("Linear", "Conv2d", "ConvTranspose1d", "Embedding"):
        t = tq.get_static_quant_module_class(getattr(torch.nn, kind))
        e = eq.get_static_quant_module_class(getattr(ember.nn, kind))
        assert e.__name__ == t.__name__
    for kind in ("Linear", "LSTM", "GRU"):
        t = tq.get_dynamic_quant_module_class(getattr(torch.nn, kind))
        e = eq.get_dynamic_quant_module_class(getattr(ember.nn, kind))
        assert e.__name__ == t.__name__
    with pytest.raises(AssertionError, match="does not have a corresponding quantized"):
        eq.get_static_quant_module_class(ember.nn.GELU)
    assert eq.get_dynamic_quant_module_class(ember.nn.GELU, {ember.nn.GELU: int}) is int
    names = {c.__name__ for c in eq.get_default_compare_output_module_list()}
    assert {"Sequential", "QuantStub", "LSTM", "Quantize"} <= names
    assert eq.utils.get_combined_dict({1: 1, 2: 2}, {2: 3}) == {1: 1, 2: 3}
    assert eq.quantization_mappings.get_combined_dict is eq.utils.get_combined_dict
