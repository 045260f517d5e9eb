"""ember.optim.swa_utils against torch.optim.swa_utils: averaged weights and buffers after
several training steps (SWA, EMA, avg_fn and multi_avg_fn, use_buffers), update_bn over a
DataLoader, SWALR's lrs step by step and through a state dict, and the argument errors."""

from __future__ import annotations

import json

import numpy as np
import pytest
import torch
from torch.optim import swa_utils as TS

import ember
from ember.optim import swa_utils as ES


def models():
    """The same Linear-BatchNorm-Linear model in both frameworks, float64."""
    ember.manual_seed(0)
    em = ember.nn.Sequential(ember.nn.Linear(3, 4), ember.nn.BatchNorm1d(4), ember.nn.ReLU(),
                             ember.nn.Linear(4, 2)).double()
    tm = torch.nn.Sequential(torch.nn.Linear(3, 4), torch.nn.BatchNorm1d(4), torch.nn.ReLU(),
                             torch.nn.Linear(4, 2)).double()
    tm.load_state_dict({k: torch.tensor(v.detach().numpy()) for k, v in em.state_dict().items()})
    return em, tm


def train_step(lib, model, opt, x):
    opt.zero_grad()
    model(x).pow(2).mean().backward()
    opt.step()


def assert_same_state(em, tm):
    es, ts = em.state_dict(), tm.state_dict()
    assert es.keys() == ts.keys()
    for k, v in ts.items():
        np.testing.assert_allclose(es[k].detach().numpy(), v.numpy(), rtol=1e-12, atol=1e-15,
                                   err_msg=k)


AVERAGES = {
    "swa": lambda S: {},
    "swa-buffers": lambda S: dict(use_buffers=True),
    "ema-avg_fn": lambda S: dict(avg_fn=S.get_ema_avg_fn(0.8)),
    "swa-avg_fn-buffers": lambda S: dict(avg_fn=S.get_swa_avg_fn(), use_buffers=True),
    "ema-multi": lambda S: dict(multi_avg_fn=S.get_ema_multi_avg_fn(0.7), use_buffers=True),
    "swa-multi": lambda S: dict(multi_avg_fn=S.get_swa_multi_avg_fn()),
}


@pytest.mark.parametrize("key", list(AVERAGES))
def test_averaged_model_matches_torch(key):
    em, tm = models()
    ea, ta = ES.AveragedModel(em, **AVERAGES[key](ES)), TS.AveragedModel(tm, **AVERAGES[key](TS))
    eo = ember.optim.SGD(em.parameters(), lr=0.1, momentum=0.9)
    to = torch.optim.SGD(tm.parameters(), lr=0.1, momentum=0.9)
    x = np.random.default_rng(0).standard_normal((6, 8, 3))
    for i in range(6):
        train_step(ember, em, eo, ember.tensor(x[i]))
        train_step(torch, tm, to, torch.tensor(x[i]))
        ea.update_parameters(em)
        ta.update_parameters(tm)
        assert_same_state(ea, ta)
    assert ea.n_averaged.dtype is ember.int64 and int(ea.n_averaged) == 6
    ea.eval()
    ta.eval()
    np.testing.assert_allclose(ea(ember.tensor(x[0])).detach().numpy(),
                               ta(torch.tensor(x[0])).detach().numpy(), rtol=1e-12)


def test_swa_multi_avg_fn_refuses_integer_buffers_like_torch():
    em, _ = models()
    ea = ES.AveragedModel(em, multi_avg_fn=ES.get_swa_multi_avg_fn(), use_buffers=True)
    ea.update_parameters(em)
    with pytest.raises(RuntimeError, match="num_batches_tracked|int64"):
        ea.update_parameters(em)


def test_averaged_model_copies_and_leaves_the_model_alone():
    em, _ = models()
    ea = ES.AveragedModel(em)
    assert ea.module is not em and ea.module[0].weight is not em[0].weight
    before = em[0].weight.detach().numpy().copy()
    ea.update_parameters(em)
    with ember.no_grad():
        ea.module[0].weight.mul_(2)
    np.testing.assert_array_equal(em[0].weight.detach().numpy(), before)


@pytest.mark.parametrize("batches", ["tensors", "pairs"])
def test_update_bn_over_a_dataloader_matches_torch(batches):
    em, tm = models()
    x = np.random.default_rng(1).standard_normal((20, 3)) * 2 + 1
    y = np.zeros(20)
    if batches == "tensors":
        el = ember.utils.data.DataLoader(ember.tensor(x), batch_size=6)
        tl = torch.utils.data.DataLoader(torch.tensor(x), batch_size=6)
    else:
        el = ember.utils.data.DataLoader(
            ember.utils.data.TensorDataset(ember.tensor(x), ember.tensor(y)), batch_size=6)
        tl = torch.utils.data.DataLoader(
            torch.utils.data.TensorDataset(torch.tensor(x), torch.tensor(y)), batch_size=6)
    em.eval()
    tm.eval()
    ES.update_bn(el, em)
    TS.update_bn(tl, tm)
    assert_same_state(em, tm)
    assert not em.training and em[1].momentum == 0.1
    assert int(em[1].num_batches_tracked) == 4


def test_update_bn_without_batchnorm_does_nothing():
    model = ember.nn.Linear(2, 2)
    ES.update_bn(iter(()), model)  # no batch is drawn either
    ES.update_bn([ember.ones(2, 2)], model)


SCHEDULES = {
    "cos": dict(swa_lr=0.05, anneal_epochs=4),
    "linear": dict(swa_lr=[0.05, 0.002], anneal_epochs=3, anneal_strategy="linear"),
    "no-anneal": dict(swa_lr=0.02, anneal_epochs=0),
    "default": dict(swa_lr=0.01),
}


def optimizers():
    ep, tp = ember.zeros(2, requires_grad=True), torch.zeros(2, requires_grad=True)
    eo = ember.optim.SGD([{"params": [ep]}, {"params": [ember.ones(1, requires_grad=True)],
                                            "lr": 0.03}], lr=0.5)
    to = torch.optim.SGD([{"params": [tp]}, {"params": [torch.ones(1, requires_grad=True)],
                                            "lr": 0.03}], lr=0.5)
    return eo, to


def step_both(es, ts, eo, to, steps):
    for _ in range(steps):
        eo.step()
        to.step()
        es.step()
        ts.step()
        np.testing.assert_allclose(es.get_last_lr(), ts.get_last_lr(), rtol=1e-12, atol=0)


@pytest.mark.parametrize("key", list(SCHEDULES))
def test_swalr_matches_torch(key):
    eo, to = optimizers()
    es, ts = ES.SWALR(eo, **SCHEDULES[key]), TS.SWALR(to, **SCHEDULES[key])
    np.testing.assert_allclose(es.get_last_lr(), ts.get_last_lr(), rtol=1e-12)
    step_both(es, ts, eo, to, 14)


def test_swalr_state_dict_round_trip():
    eo, to = optimizers()
    es, ts = ES.SWALR(eo, **SCHEDULES["linear"]), TS.SWALR(to, **SCHEDULES["linear"])
    step_both(es, ts, eo, to, 2)
    saved = json.loads(json.dumps({"opt": eo.state_dict(), "sched": es.state_dict()}))
    assert saved["sched"].keys() <= ts.state_dict().keys()
    eo2, _ = optimizers()
    es2 = ES.SWALR(eo2, swa_lr=0.5, anneal_strategy="cos")  # the loaded state replaces these
    eo2.load_state_dict(saved["opt"])
    es2.load_state_dict(saved["sched"])
    step_both(es2, ts, eo2, to, 5)


@pytest.mark.parametrize(("make", "error", "match"), [
    (lambda m, o: ES.get_ema_avg_fn(1.5), ValueError, "Invalid decay value 1.5"),
    (lambda m, o: ES.get_ema_multi_avg_fn(-0.1), ValueError, "Invalid decay value -0.1"),
    (lambda m, o: ES.AveragedModel(m, avg_fn=ES.get_swa_avg_fn(),
                                   multi_avg_fn=ES.get_swa_multi_avg_fn()),
     AssertionError, "Only one of avg_fn and multi_avg_fn"),
    (lambda m, o: ES.SWALR(o, 0.1, anneal_strategy="step"), ValueError, "must be one of"),
    (lambda m, o: ES.SWALR(o, 0.1, anneal_epochs=-1), ValueError, "equal or greater than 0"),
    (lambda m, o: ES.SWALR(o, 0.1, anneal_epochs=2.5), ValueError, "equal or greater than 0"),
    (lambda m, o: ES.SWALR(o, [0.1, 0.2, 0.3]), ValueError, "expected 2 values for swa_lr"),
])
def test_bad_arguments_raise_like_torch(make, error, match):
    with pytest.raises(error, match=match):
        make(ember.nn.Linear(1, 1), optimizers()[0])


def test_optim_does_not_import_nn_and_the_averaged_model_is_under_torchs_path():
    """AveragedModel is an nn.Module, so it lives above both layers (ember.utils), which puts
    it and update_bn at torch's path ember.optim.swa_utils."""
    import pathlib
    import re

    folder = pathlib.Path(ember.optim.__file__).parent
    upward = re.compile(r"^\s*(from|import)\s+ember\.nn\b", re.MULTILINE)
    for path in folder.rglob("*.py"):
        assert not upward.search(path.read_text()), path.name
    from ember.optim.swa_utils import AveragedModel, update_bn
    assert ES.AveragedModel is AveragedModel and ES.update_bn is update_bn
    assert {"AveragedModel", "update_bn", "SWALR"} <= set(ES.__all__)
