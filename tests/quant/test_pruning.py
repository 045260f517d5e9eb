"""ember.ao.pruning against torch.ao.pruning: the same masks for the same weights
(WeightNormSparsifier, NearlyDiagonalSparsifier), the same schedules (LambdaSL, CubicSL),
state dicts, squash_mask, convert; and the docstring examples."""

import doctest
import importlib
import warnings

import numpy as np
import pytest
import torch
import torch.ao.pruning as tp

import ember
import ember.ao.pruning as ep
from tests.quant.helpers import copy_weights


def _models(shapes, seed=0):
    torch.manual_seed(seed)
    t = torch.nn.Sequential(*[torch.nn.Linear(i, o) for o, i in shapes])
    e = ember.nn.Sequential(*[ember.nn.Linear(i, o) for o, i in shapes])
    copy_weights(t, e)
    return t, e


def _same_masks(t_sparsifier, e_sparsifier):
    for tg, eg in zip(t_sparsifier.groups, e_sparsifier.groups):
        tm = tg["module"].parametrizations[tg["tensor_name"]][0].mask
        em = eg["module"].parametrizations[eg["tensor_name"]][0].mask
        assert str(em.dtype).split(".")[-1] == str(tm.dtype).split(".")[-1]
        np.testing.assert_array_equal(em.numpy(), tm.numpy())


@pytest.mark.parametrize("shape, kwargs", [
    ((6, 10), {}),
    ((6, 10), {"sparsity_level": 0.3, "sparse_block_shape": (2, 3)}),
    ((5, 7), {"sparsity_level": 0.7, "sparse_block_shape": (2, 2), "norm": 1}),
    ((8, 8), {"sparsity_level": 0.5, "sparse_block_shape": (1, 4), "zeros_per_block": 2}),
    ((4, 6), {"sparsity_level": 0.25, "sparse_block_shape": (2, 3), "zeros_per_block": 1}),
    ((4, 6), {"sparsity_level": 1.0, "sparse_block_shape": (1, 1)}),
    ((4, 6), {"sparsity_level": 0.99, "sparse_block_shape": (1, 1)}),
    ((4, 6), {"sparsity_level": 0.0}),
    ((4, 8), {"sparsity_level": 1.0, "sparse_block_shape": (1, 4), "zeros_per_block": 2}),
    ((4, 8), {"zeros_per_block": 0}),
])
def test_weight_norm_masks_equal_torch(shape, kwargs):
    divisible = "zeros_per_block" not in kwargs  # (else PyTorch needs whole blocks)
    t, e = _models([shape, (3, shape[0])] if divisible else [shape])
    ts, es = tp.WeightNormSparsifier(**kwargs), ep.WeightNormSparsifier(**kwargs)
    ts.prepare(t, config=None), es.prepare(e, config=None)
    _same_masks(ts, es)
    ts.step(), es.step()
    _same_masks(ts, es)
    x = np.random.default_rng(0).normal(size=(2, shape[1])).astype(np.float32)
    np.testing.assert_allclose(e(ember.tensor(x)).detach().numpy(),
                               t(torch.tensor(x)).detach().numpy(), rtol=1e-6, atol=1e-6)


def test_per_group_config_and_squash_mask_equal_torch():
    t, e = _models([(6, 8), (4, 6)], seed=1)
    config = [{"tensor_fqn": "0.weight", "sparsity_level": 0.8, "sparse_block_shape": (1, 2),
               "zeros_per_block": 2}, {"tensor_fqn": "1.weight"}]
    ts = tp.WeightNormSparsifier(sparsity_level=0.4, sparse_block_shape=(2, 2))
    es = ep.WeightNormSparsifier(sparsity_level=0.4, sparse_block_shape=(2, 2))
    ts.prepare(t, config), es.prepare(e, config)
    ts.step(), es.step()
    _same_masks(ts, es)
    ts.squash_mask(params_to_keep=("sparsity_level",),
                   params_to_keep_per_layer={"1": ("sparse_block_shape",)})
    es.squash_mask(params_to_keep=("sparsity_level",),
                   params_to_keep_per_layer={"1": ("sparse_block_shape",)})
    assert list(e.state_dict()) == list(t.state_dict())
    for tv, ev in zip(t.state_dict().values(), e.state_dict().values()):
        np.testing.assert_array_equal(ev.numpy(), tv.numpy())
    assert e[0].sparse_params == t[0].sparse_params
    assert e[1].sparse_params == t[1].sparse_params


def test_state_dicts_like_torch_and_load_round_trip():
    t, e = _models([(4, 8)], seed=2)
    ts, es = tp.WeightNormSparsifier(sparse_block_shape=(1, 2)), ep.WeightNormSparsifier(
        sparse_block_shape=(1, 2))
    ts.prepare(t, None), es.prepare(e, None)
    ts.step(), es.step()
    assert list(e.state_dict()) == list(t.state_dict())
    tsd, esd = ts.state_dict(), es.state_dict()
    assert esd["groups"] == tsd["groups"]
    assert list(esd["state"]) == list(tsd["state"])
    np.testing.assert_array_equal(esd["state"]["0.weight"]["mask"].numpy(),
                                  tsd["state"]["0.weight"]["mask"].numpy())
    _, fresh = _models([(4, 8)], seed=3)
    loader = ep.WeightNormSparsifier()
    loader.model = fresh
    loader.load_state_dict(es.state_dict())
    np.testing.assert_array_equal(fresh[0].parametrizations.weight[0].mask.numpy(),
                                  tsd["state"]["0.weight"]["mask"].numpy())
    assert loader.groups[0]["module"] is fresh[0]
    again = ep.WeightNormSparsifier()  # (into a model that has its FakeSparsity already)
    again.prepare(fresh, None)
    again.load_state_dict(es.state_dict())
    assert len(fresh[0].parametrizations.weight) == 1
    np.testing.assert_array_equal(fresh[0].parametrizations.weight[0].mask.numpy(),
                                  tsd["state"]["0.weight"]["mask"].numpy())


@pytest.mark.parametrize("shape, nearliness", [((5, 5), 1), ((4, 6), 3), ((6, 4), 5),
                                               ((3, 3), 0)])
def test_nearly_diagonal_masks_equal_torch(shape, nearliness):
    t, e = _models([shape])
    ts, es = tp.NearlyDiagonalSparsifier(nearliness), ep.NearlyDiagonalSparsifier(nearliness)
    ts.prepare(t, None), es.prepare(e, None)
    ts.step(), es.step()
    _same_masks(ts, es)


def _schedules(make):
    t, e = _models([(4, 8), (6, 4)], seed=4)
    ts, es = tp.WeightNormSparsifier(0.9, (1, 2)), ep.WeightNormSparsifier(0.9, (1, 2))
    config = [{"tensor_fqn": "0.weight"}, {"tensor_fqn": "1.weight", "sparsity_level": 0.6}]
    ts.prepare(t, config), es.prepare(e, config)
    tsch, esch = make(tp, ts), make(ep, es)
    for _ in range(8):
        assert esch.get_last_sl() == tsch.get_last_sl()
        ts.step(), es.step()
        _same_masks(ts, es)
        tsch.step(), esch.step()
    return tsch, esch


def test_lambda_schedule_equals_torch():
    levels = [lambda epoch: epoch / 6, lambda epoch: 0.9 ** epoch]  # (falling: ties at zero)
    tsch, esch = _schedules(lambda m, s: m.LambdaSL(s, levels))
    assert esch.state_dict().keys() == tsch.state_dict().keys()


def test_cubic_schedule_equals_torch():
    _schedules(lambda m, s: m.CubicSL(s, init_sl=[0.1, 0.0], init_t=2, delta_t=1, total_t=5,
                                      initially_zero=[True, False]))


def test_scheduler_warnings_and_errors():
    _, e = _models([(2, 2)])
    es = ep.WeightNormSparsifier()
    es.prepare(e, None)
    sch = ep.LambdaSL(es, lambda epoch: 1.0)
    with pytest.warns(UserWarning, match="before `sparsifier.step\\(\\)`"):
        sch.step()
    with pytest.warns(UserWarning, match="get_last_sl"):
        sch.get_sl()
    with pytest.raises(TypeError, match="BaseSparsifier"):
        ep.LambdaSL(object(), lambda epoch: 1.0)
    with pytest.raises(ValueError, match="Expected 1 lr_lambdas"):
        ep.LambdaSL(es, [lambda epoch: 1.0] * 2)
    with pytest.raises(ValueError, match="Expected variable of length 1"):
        ep.CubicSL(es, init_t=[0, 1])


class _Dense(ember.nn.Module):
    @classmethod
    def from_dense(cls, mod):
        new = cls()
        new.weight = mod.weight.detach()
        return new


def test_convert_swaps_masked_modules_by_mapping():
    _, e = _models([(2, 3), (2, 2)])
    es = ep.NearlyDiagonalSparsifier()
    es.prepare(e, [{"tensor_fqn": "0.weight"}])
    es.step()
    calls = []
    e[0].register_forward_hook(lambda *args: calls.append(1))
    converted = es.convert(e, mapping={ember.nn.Linear: _Dense})
    assert type(converted[0]) is _Dense and type(converted[1]) is ember.nn.Linear
    np.testing.assert_array_equal(converted[0].weight.numpy(),
                                  e[0].weight.detach().numpy() * np.eye(2, 3))
    assert converted[0]._forward_hooks
    with pytest.raises(NotImplementedError, match="mapping"):
        es.convert(e)


def test_errors_are_clear():
    _, e = _models([(4, 8)])
    with pytest.raises(NotImplementedError, match="L-3"):
        ep.WeightNormSparsifier(norm=3)
    es = ep.WeightNormSparsifier(sparse_block_shape=(1, 2), zeros_per_block=3)
    es.prepare(e, None)
    with pytest.raises(ValueError, match="cannot be more than"):
        es.step()
    with pytest.raises(TypeError, match="should be dicts"):
        ep.WeightNormSparsifier().prepare(e, [e[0]])
    with pytest.raises(ValueError, match="tensor_fqn is a required"):
        ep.WeightNormSparsifier().prepare(e, [{"sparsity_level": 0.5}])
    with pytest.raises(ValueError, match="no tensor '0.wieght'"):
        ep.WeightNormSparsifier().prepare(e, [{"tensor_fqn": "0.wieght"}])
    conv = ember.nn.Sequential(ember.nn.Conv2d(1, 2, 3))
    cs = ep.WeightNormSparsifier(sparsity_level=0.5)
    cs.prepare(conv, [{"tensor_fqn": "0.weight"}])
    with pytest.raises(ember.errors.ShapeError, match="must be 2-D"):
        cs.step()
    nd = ep.NearlyDiagonalSparsifier(2)
    nd.prepare(_models([(4, 8)])[1], None)
    with pytest.raises(ValueError, match="odd number"):
        nd.step()
    nd = ep.NearlyDiagonalSparsifier(1)
    nd.prepare(conv, [{"tensor_fqn": "0.weight"}])
    with pytest.raises(ember.errors.ShapeError, match="NearlyDiagonalSparsifier: .* must be 2-D"):
        nd.step()


def test_selection_among_ties_is_torch_topk():
    rng = np.random.default_rng(0)
    for n in (5, 40, 200, 700):
        for k in (1, 2, n // 3, n - 1):
            values = rng.integers(0, 3, size=n).astype(np.float32)
            values[rng.random(n) < 0.05] = np.nan
            expected = torch.topk(torch.tensor(values), k, largest=False).indices
            assert set(ep.selection.torch_smallest(values, k).tolist()) == set(
                expected.tolist()), (n, k)
    rows = rng.integers(0, 2, size=(50, 8)).astype(np.float32)
    expected = torch.topk(torch.tensor(rows), 3, dim=1, largest=False).indices.numpy()
    np.testing.assert_array_equal(np.sort(ep.selection.torch_smallest_per_row(rows, 3)),
                                  np.sort(expected))


def test_tied_weights_masks_equal_torch():
    t, e = _models([(8, 8)], seed=6)
    with torch.no_grad():  # (few distinct magnitudes: ties everywhere)
        t[0].weight.copy_(torch.round(t[0].weight * 4) / 4)
    copy_weights(t, e)
    for kwargs in ({"sparsity_level": 0.5, "sparse_block_shape": (1, 1)},
                   {"sparsity_level": 0.3, "sparse_block_shape": (1, 4), "zeros_per_block": 2}):
        ts, es = tp.WeightNormSparsifier(**kwargs), ep.WeightNormSparsifier(**kwargs)
        ts.prepare(t, None), es.prepare(e, None)
        ts.step(), es.step()
        _same_masks(ts, es)
        ts.squash_mask(), es.squash_mask()


@pytest.mark.parametrize("name", ["fake_sparsity", "base_sparsifier", "weight_norm_sparsifier",
                                  "nearly_diagonal_sparsifier", "scheduler", "selection"])
def test_docstring_examples_run(name):
    module = importlib.import_module(f"ember.ao.pruning.{name}")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        result = doctest.testmod(module, extraglobs={"ember": ember, "nn": ember.nn, "np": np,
                                                     **vars(ep)},
                                 optionflags=doctest.NORMALIZE_WHITESPACE | doctest.ELLIPSIS)
    assert result.failed == 0


@pytest.mark.parametrize("with_mapping", [False, True])
def test_sparsified_model_quantizes_as_torch(with_mapping):
    # a parametrized (masked) Linear is still a Linear to prepare/convert, as PyTorch's
    import torch.ao.quantization as tq

    import ember.ao.quantization as eq

    def build(nn, stubs, pruning, lib):
        m = nn.Sequential(stubs.QuantStub(), nn.Linear(6, 4), nn.ReLU(), stubs.DeQuantStub())
        sparsifier = pruning.WeightNormSparsifier(sparsity_level=0.5, sparse_block_shape=(1, 2))
        sparsifier.prepare(m, config=None)
        return m.eval(), sparsifier

    torch.manual_seed(3)
    (t, ts), (e, es) = build(torch.nn, tq, tp, torch), build(ember.nn, eq, ep, ember)
    copy_weights(t, e)
    ts.step(), es.step()
    t.qconfig = tq.default_qconfig
    if with_mapping:
        ep_ = eq.prepare(e, qconfig_mapping=eq.QConfigMapping().set_object_type(
            ember.nn.Linear, eq.default_qconfig).set_global(eq.default_qconfig))
    else:
        e.qconfig = eq.default_qconfig
        ep_ = eq.prepare(e)
    tp_ = tq.prepare(t)
    x = np.random.default_rng(3).normal(size=(8, 6)).astype(np.float32)
    tp_(torch.tensor(x)), ep_(ember.tensor(x))
    tc, ec = tq.convert(tp_), eq.convert(ep_)
    assert [type(m).__name__ for m in ec] == [type(m).__name__ for m in tc]
    np.testing.assert_array_equal(ec[1].weight().int_repr().numpy(),
                                  tc[1].weight().int_repr().numpy())
    np.testing.assert_array_equal(ec(ember.tensor(x)).numpy(), tc(torch.tensor(x)).numpy())


def test_prepare_qat_keeps_a_sparsified_layers_mask_as_torch():
    import torch.ao.quantization as tq

    import ember.ao.quantization as eq

    def build(nn, stubs, pruning):
        m = nn.Sequential(stubs.QuantStub(), nn.Linear(4, 4), stubs.DeQuantStub())
        sparsifier = pruning.WeightNormSparsifier(sparsity_level=0.5, sparse_block_shape=(1, 2))
        sparsifier.prepare(m, config=None)
        return m, sparsifier

    torch.manual_seed(4)
    (t, ts), (e, es) = build(torch.nn, tq, tp), build(ember.nn, eq, ep)
    copy_weights(t, e)
    ts.step(), es.step()
    t.qconfig, e.qconfig = tq.get_default_qat_qconfig("x86"), eq.get_default_qat_qconfig("x86")
    original, mask = e[1].parametrizations.weight.original, e[1].parametrizations.weight[0].mask
    tq_, eq_ = tq.prepare_qat(t.train()), eq.prepare_qat(e.train(), inplace=True)
    assert type(eq_[1]).__name__ == type(tq_[1]).__name__ == "ParametrizedLinear"
    assert eq_[1].parametrizations.weight.original is original  # (the optimizer's parameter)
    with ember.no_grad():
        original.fill_(1.0)  # training moves the original; the mask still applies
    np.testing.assert_array_equal(eq_[1].weight.detach().numpy(), mask.numpy())
    x = np.random.default_rng(4).normal(size=(3, 4)).astype(np.float32)
    with torch.no_grad():
        tq_[1].parametrizations.weight.original.fill_(1.0)
    np.testing.assert_allclose(eq_(ember.tensor(x)).detach().numpy(),
                               tq_(torch.tensor(x)).detach().numpy(), atol=1e-6)


def test_add_quant_dequant_wraps_a_sparsified_leaf_as_torch():
    import ember.ao.quantization as eq

    m = ember.nn.Sequential(ember.nn.Linear(2, 2))
    ep.WeightNormSparsifier(sparse_block_shape=(1, 2)).prepare(m, None)
    m[0].qconfig = eq.default_qconfig
    assert type(eq.add_quant_dequant(m)[0]).__name__ == "QuantWrapper"
