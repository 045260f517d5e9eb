"""Every learning-rate scheduler against PyTorch: the lr (and cycled momentum) of each group
step by step (float equality), and a state-dict round trip (through JSON) mid-run."""

from __future__ import annotations

import json
import math
import warnings

import numpy as np
import pytest
import torch

import ember
from ember.optim import lr_scheduler as ELR


def make_opts(name="SGD", **kwargs):
    """The same two-group optimizer in both frameworks (steps are no-ops: no gradients)."""
    kwargs = kwargs or dict(momentum=0.9)
    arrays = [np.ones(2), np.ones(3)]
    ep = [ember.tensor(a, requires_grad=True) for a in arrays]
    tp = [torch.tensor(a, requires_grad=True) for a in arrays]
    eo = getattr(ember.optim, name)([{"params": ep[:1]}, {"params": ep[1:], "lr": 0.01}],
                                    lr=0.1, **kwargs)
    to = getattr(torch.optim, name)([{"params": tp[:1]}, {"params": tp[1:], "lr": 0.01}],
                                    lr=0.1, **kwargs)
    return eo, to


def scaled(e):
    return 0.95 ** e


class Warm:
    """A callable object: LambdaLR saves its __dict__."""

    def __init__(self):
        self.scale = 0.5

    def __call__(self, e):
        return self.scale * min(1.0, (e + 1) / 4)


SCHEDULES = {
    "step": lambda L, o: L.StepLR(o, step_size=3, gamma=0.5),
    "multistep": lambda L, o: L.MultiStepLR(o, milestones=[2, 5, 5, 9], gamma=0.3),
    "exponential": lambda L, o: L.ExponentialLR(o, gamma=0.9),
    "cosine": lambda L, o: L.CosineAnnealingLR(o, T_max=7, eta_min=0.001),
    "cosine-default": lambda L, o: L.CosineAnnealingLR(o, T_max=10),
    "warm-restarts": lambda L, o: L.CosineAnnealingWarmRestarts(o, T_0=3, T_mult=2,
                                                                eta_min=0.001),
    "warm-restarts-1": lambda L, o: L.CosineAnnealingWarmRestarts(o, T_0=4),
    "one-cycle": lambda L, o: L.OneCycleLR(o, max_lr=[0.5, 0.05], total_steps=30),
    "one-cycle-3": lambda L, o: L.OneCycleLR(o, max_lr=0.3, epochs=6, steps_per_epoch=5,
                                             three_phase=True, anneal_strategy="linear",
                                             pct_start=0.25, div_factor=10.0),
    "one-cycle-flat": lambda L, o: L.OneCycleLR(o, max_lr=0.3, total_steps=40,
                                                cycle_momentum=False),
    "linear": lambda L, o: L.LinearLR(o, start_factor=0.25, total_iters=6),
    "linear-down": lambda L, o: L.LinearLR(o, start_factor=1.0, end_factor=0.1, total_iters=8),
    "constant": lambda L, o: L.ConstantLR(o, factor=0.5, total_iters=4),
    "polynomial": lambda L, o: L.PolynomialLR(o, total_iters=10, power=2.0),
    "lambda": lambda L, o: L.LambdaLR(o, lr_lambda=scaled),
    "lambda-each": lambda L, o: L.LambdaLR(o, lr_lambda=[scaled, Warm()]),
    "multiplicative": lambda L, o: L.MultiplicativeLR(o, lr_lambda=lambda e: 0.9),
    "sequential": lambda L, o: L.SequentialLR(
        o, [L.LinearLR(o, start_factor=0.1, total_iters=5), L.ExponentialLR(o, gamma=0.9)],
        milestones=[5]),
    "sequential-3": lambda L, o: L.SequentialLR(
        o, [L.ConstantLR(o, factor=0.2, total_iters=3), L.CosineAnnealingLR(o, T_max=8),
            L.StepLR(o, step_size=2, gamma=0.7)], milestones=[4, 12]),
    "sequential-multiplicative": lambda L, o: L.SequentialLR(  # lr_lambda(0) at the milestone
        o, [L.ExponentialLR(o, gamma=0.8), L.MultiplicativeLR(o, lambda e: 0.9 - 0.01 * e)],
        milestones=[3]),
    "sequential-from-0": lambda L, o: L.SequentialLR(
        o, [L.ExponentialLR(o, gamma=0.8), L.LinearLR(o, start_factor=0.5, total_iters=3),
            L.CosineAnnealingLR(o, T_max=5, eta_min=0.01)], milestones=[0, 6]),
    "chained": lambda L, o: L.ChainedScheduler(
        [L.ConstantLR(o, factor=0.1, total_iters=2), L.ExponentialLR(o, gamma=0.9)]),
}
ADAM = {"one-cycle", "one-cycle-3"}  # also run with Adam: the cycled momentum is beta1


def cases():
    for key in SCHEDULES:
        yield key, "SGD"
        if key in ADAM:
            yield key, "Adam"


def momenta(opt):
    return [g["betas"][0] if "betas" in g else g.get("momentum") for g in opt.param_groups]


def step_both(es, ts, eo, to, steps):
    for _ in range(steps):
        eo.step()
        to.step()
        es.step()
        ts.step()
        assert es.get_last_lr() == ts.get_last_lr()  # bit for bit
        assert [g["lr"] for g in eo.param_groups] == [g["lr"] for g in to.param_groups]
        assert momenta(eo) == momenta(to)


@pytest.mark.parametrize(("key", "opt"), list(cases()))
def test_lrs_match_torch(key, opt):
    eo, to = make_opts(opt, **({} if opt == "SGD" else dict(betas=(0.9, 0.99))))
    es, ts = SCHEDULES[key](ELR, eo), SCHEDULES[key](torch.optim.lr_scheduler, to)
    assert es.get_last_lr() == ts.get_last_lr()
    step_both(es, ts, eo, to, 30)


@pytest.mark.parametrize(("key", "opt"), list(cases()))
def test_state_dict_round_trip(key, opt):
    kwargs = {} if opt == "SGD" else dict(betas=(0.9, 0.99))
    eo, to = make_opts(opt, **kwargs)
    es, ts = SCHEDULES[key](ELR, eo), SCHEDULES[key](torch.optim.lr_scheduler, to)
    step_both(es, ts, eo, to, 10)
    saved = json.loads(json.dumps({"opt": eo.state_dict(), "sched": es.state_dict()}))
    eo2, _ = make_opts(opt, **kwargs)
    es2 = SCHEDULES[key](ELR, eo2)
    eo2.load_state_dict(saved["opt"])
    es2.load_state_dict(saved["sched"])
    step_both(es2, ts, eo2, to, 20)


def _train_with(key, compiled, calls=12):
    """A training step that steps the scheduler ``SCHEDULES[key]`` after the optimizer, run
    ``calls`` times: each call's loss, lrs, ``get_last_lr()`` and momenta, and the weights."""
    ember.manual_seed(0)
    a, b = ember.nn.Linear(3, 2), ember.nn.Linear(2, 1)
    opt = ember.optim.SGD([{"params": a.parameters()}, {"params": b.parameters(), "lr": 0.01}],
                          lr=0.1, momentum=0.9)
    sched = SCHEDULES[key](ELR, opt)

    def step(x):
        loss = b(a(x)).pow(2).mean()
        loss.backward()
        opt.step()
        opt.zero_grad()
        sched.step()
        return loss

    if compiled:
        step = ember.jit.compile(step)
    x = ember.ones(4, 3)
    seen = []
    for _ in range(calls):
        loss = step(x).item()
        seen.append((loss, [g["lr"] for g in opt.param_groups], sched.get_last_lr(),
                     momenta(opt)))
    return seen, [p.detach().numpy().copy() for p in (*a.parameters(), *b.parameters())]


@pytest.mark.parametrize("key", list(SCHEDULES))
def test_stepping_inside_a_compiled_step_matches_eager(key):
    (eager, e_weights), (jit, j_weights) = _train_with(key, False), _train_with(key, True)
    for i, ((e_loss, *e_rest), (j_loss, *j_rest)) in enumerate(zip(eager, jit, strict=True)):
        assert j_rest == e_rest, f"call {i}: (lrs, get_last_lr, momenta)"
        assert j_loss == pytest.approx(e_loss, rel=1e-5), f"call {i}: loss"
    for e, j in zip(e_weights, j_weights, strict=True):
        np.testing.assert_allclose(j, e, rtol=1e-5, atol=1e-7)


class Halving(ELR.LRScheduler):
    """A user's scheduler that overrides step() (with its own counter)."""

    def __init__(self, optimizer):
        self.halvings = 0
        super().__init__(optimizer)

    def get_lr(self):
        return [0.5 * lr for lr in self._group_lrs()]

    def step(self):
        if self.last_epoch >= 0:
            self.halvings += 1
        super().step()


@pytest.mark.filterwarnings("ignore:Detected call of `lr_scheduler.step\\(\\)` before")
def test_a_users_step_override_is_stepped_on_every_compiled_call():
    eo, _ = make_opts()
    sched = Halving(eo)
    step = ember.jit.compile(lambda x: (x * 2, sched.step())[0])
    for _ in range(4):
        step(ember.ones(2))
    assert sched.halvings == 4 and sched.last_epoch == 4
    assert sched.get_last_lr() == [g["lr"] for g in eo.param_groups] == [0.1 / 32, 0.01 / 32]


def test_plateau_inside_a_compiled_step_is_refused():
    eo, _ = make_opts()
    sched = ELR.ReduceLROnPlateau(eo)

    @ember.jit.compile
    def step(x):
        loss = (x * 2).sum()
        sched.step(loss)
        return loss

    with pytest.raises(ember.jit.TraceError, match=r"ReduceLROnPlateau.step\(...\) with an "
                                                   "argument"):
        step(ember.ones(2))
    assert sched.last_epoch == 0  # (the failed trace is rolled back)

def test_lambda_object_state_is_saved():
    eo, _ = make_opts()
    warm = Warm()
    sched = ELR.LambdaLR(eo, lr_lambda=[scaled, warm])
    state = sched.state_dict()
    assert state["lr_lambdas"] == [None, {"scale": 0.5}]
    warm.scale = 2.0
    sched.load_state_dict(state)
    assert warm.scale == 0.5


def test_step_with_epoch_uses_the_closed_form():
    eo, to = make_opts()
    for key in ("step", "multistep", "exponential", "cosine", "linear", "constant",
                "polynomial"):
        es, ts = SCHEDULES[key](ELR, eo), SCHEDULES[key](torch.optim.lr_scheduler, to)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            for epoch in (3, 7, 2, 12):
                es.step(epoch)
                ts.step(epoch)
                assert es.get_last_lr() == ts.get_last_lr()


def test_linear_closed_form_is_bit_exact():
    """``step(epoch)`` rounds as PyTorch does: ``span * epoch / total_iters``."""
    eo, to = make_opts()
    es = ELR.LinearLR(eo, start_factor=0.2, end_factor=0.9, total_iters=13)
    ts = torch.optim.lr_scheduler.LinearLR(to, start_factor=0.2, end_factor=0.9, total_iters=13)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for epoch in range(1, 16):
            es.step(epoch)
            ts.step(epoch)
            assert es.get_last_lr() == ts.get_last_lr(), epoch


def test_warm_restarts_fractional_epochs():
    eo, to = make_opts()
    es = ELR.CosineAnnealingWarmRestarts(eo, T_0=3, T_mult=2)
    ts = torch.optim.lr_scheduler.CosineAnnealingWarmRestarts(to, T_0=3, T_mult=2)
    for i in range(40):
        es.step(i / 4)
        ts.step(i / 4)
        assert es.get_last_lr() == ts.get_last_lr()


PLATEAU = [
    dict(),
    dict(mode="max", factor=0.5, patience=2, threshold=0.1, threshold_mode="abs", cooldown=2),
    dict(patience=1, cooldown=1, min_lr=[0.02, 0.001], factor=0.3),
    dict(patience=0, min_lr=0.005, eps=1e-3),
]


@pytest.mark.parametrize("kwargs", PLATEAU)
def test_reduce_on_plateau(kwargs):
    eo, to = make_opts()
    es = ELR.ReduceLROnPlateau(eo, **kwargs)
    ts = torch.optim.lr_scheduler.ReduceLROnPlateau(to, **kwargs)
    metrics = [1.0, 0.9, 0.95, 0.95, 0.94, 0.96, 0.97, 0.5, 0.5, 0.5, 0.6] * 3
    for i, m in enumerate(metrics):
        if i == 15:  # round trip mid-run
            state = json.loads(json.dumps(es.state_dict()))
            es = ELR.ReduceLROnPlateau(eo, **kwargs)
            es.load_state_dict(state)
        es.step(ember.tensor(m, dtype=ember.float64) if i % 2 else m)
        ts.step(m)
        assert es.get_last_lr() == ts.get_last_lr()
        assert es.num_bad_epochs == ts.num_bad_epochs and es.best == ts.best


def test_warns_when_stepped_before_the_optimizer():
    eo, _ = make_opts()
    sched = ELR.StepLR(eo, step_size=2)
    with pytest.warns(UserWarning, match="before `optimizer.step\\(\\)`"):
        sched.step()



def step_order_warnings(lib, first_sched_before_step):
    """How many step-order warnings: the optimizer stepped, then a scheduler made (after
    another, or as the first), then the scheduler stepped before the next optimizer step."""
    opt = lib.optim.SGD([lib.zeros(1, requires_grad=True)], lr=0.1)
    if first_sched_before_step:
        lib.optim.lr_scheduler.ExponentialLR(opt, 0.9)
    opt.step()
    sched = lib.optim.lr_scheduler.StepLR(opt, step_size=2)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        sched.step()
    return sum("before `optimizer.step()`" in str(w.message) for w in caught)


@pytest.mark.parametrize("first_sched_before_step", [False, True])
def test_step_order_counts_optimizer_steps_since_the_first_scheduler_as_torch(
        first_sched_before_step):
    """torch counts the optimizer's steps from when a first scheduler wraps its step: one made
    before any scheduler existed does not count, and the scheduler's first step warns."""
    counts = [step_order_warnings(lib, first_sched_before_step) for lib in (torch, ember)]
    assert counts[0] == counts[1] == (0 if first_sched_before_step else 1)


def test_a_step_overridden_after_the_scheduler_is_made_warns_as_torch():
    messages = []
    for lib in (torch, ember):
        opt = lib.optim.SGD([lib.zeros(1, requires_grad=True)], lr=0.1)
        sched = lib.optim.lr_scheduler.StepLR(opt, step_size=2)
        opt.step = lambda: None
        opt.step()
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            sched.step()
        messages.append([str(w.message)[:55] for w in caught])
    assert messages[0] == messages[1] == ["Seems like `optimizer.step()` has been overridden after"]

@pytest.mark.parametrize("key", ["step", "cosine", "warm-restarts", "one-cycle", "lambda"])
def test_get_lr_outside_step_warns_as_torch(key):
    eo, to = make_opts()
    es, ts = SCHEDULES[key](ELR, eo), SCHEDULES[key](torch.optim.lr_scheduler, to)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        eo.step()
        es.step()
    assert not caught  # (not from step)
    with pytest.warns(UserWarning, match=r"please use `get_last_lr\(\)`"):
        es.get_lr()
    assert set(es.state_dict()) == set(ts.state_dict())


def test_resuming_needs_initial_lr():
    eo, _ = make_opts()
    with pytest.raises(KeyError, match="initial_lr.*when resuming scheduler with last_epoch=5"):
        ELR.StepLR(eo, step_size=2, last_epoch=5)


GROUP_ADDED = {
    "lambda": lambda o: ELR.LambdaLR(o, lambda e: 0.9 ** e),
    "multiplicative": lambda o: ELR.MultiplicativeLR(o, lambda e: 0.9),
    "cyclic": lambda o: ELR.CyclicLR(o, 0.01, 0.1, step_size_up=3),
    "cosine": lambda o: ELR.CosineAnnealingLR(o, T_max=2),
}


@pytest.mark.parametrize("key", list(GROUP_ADDED))
def test_a_group_added_after_the_scheduler_is_a_clear_error(key):
    eo, _ = make_opts()
    sched = GROUP_ADDED[key](eo)
    eo.add_param_group({"params": [ember.zeros(1, requires_grad=True)], "lr": 0.2})
    with pytest.raises(ember.errors.ArgumentError, match="has 3 param groups but the scheduler "
                                                          "was built for 2"):
        for _ in range(4):
            sched.step()


RESUMABLE = {
    "exponential": lambda L, o, last: L.ExponentialLR(o, gamma=0.9, last_epoch=last),
    "cosine": lambda L, o, last: L.CosineAnnealingLR(o, T_max=7, eta_min=0.001, last_epoch=last),
    "linear": lambda L, o, last: L.LinearLR(o, start_factor=0.2, end_factor=0.9, total_iters=6,
                                            last_epoch=last),
    "polynomial": lambda L, o, last: L.PolynomialLR(o, total_iters=8, power=2.0,
                                                    last_epoch=last),
    "multiplicative": lambda L, o, last: L.MultiplicativeLR(o, lambda e: 0.95, last_epoch=last),
    "step": lambda L, o, last: L.StepLR(o, step_size=3, gamma=0.5, last_epoch=last),
}


@pytest.mark.parametrize("key", list(RESUMABLE))
def test_resuming_with_last_epoch_keeps_the_loaded_lr(key):
    """Built with ``last_epoch`` after loading the optimizer, the scheduler's first step does
    not move the loaded lr (PyTorch's ``_is_initial``); then it goes on as PyTorch's."""
    eo, to = make_opts()
    es = RESUMABLE[key](ELR, eo, -1)
    ts = RESUMABLE[key](torch.optim.lr_scheduler, to, -1)
    step_both(es, ts, eo, to, 4)
    eo2, to2 = make_opts()
    eo2.load_state_dict(eo.state_dict())
    to2.load_state_dict(to.state_dict())
    es2 = RESUMABLE[key](ELR, eo2, es.last_epoch)
    ts2 = RESUMABLE[key](torch.optim.lr_scheduler, to2, ts.last_epoch)
    assert es2.get_last_lr() == ts2.get_last_lr() == es.get_last_lr()
    step_both(es2, ts2, eo2, to2, 8)


@pytest.mark.parametrize("t_mult", [1, 2, 3])
@pytest.mark.parametrize("last_epoch", [2, 3, 7, 20])
def test_warm_restarts_resumed_past_a_restart_match_torch(t_mult, last_epoch):
    """Built with ``last_epoch`` beyond ``T_0``, the first step wraps ``T_cur`` by PyTorch's
    modulo (``T_cur % T_i``, then ``T_i *= T_mult`` once), not by one subtraction."""
    eo, to = make_opts()
    for opt in (eo, to):
        for group in opt.param_groups:
            group["initial_lr"] = group["lr"]
    es = ELR.CosineAnnealingWarmRestarts(eo, T_0=3, T_mult=t_mult, last_epoch=last_epoch)
    ts = torch.optim.lr_scheduler.CosineAnnealingWarmRestarts(to, T_0=3, T_mult=t_mult,
                                                              last_epoch=last_epoch)
    assert es.get_last_lr() == ts.get_last_lr()
    assert (es.T_cur, es.T_i) == (ts.T_cur, ts.T_i)
    step_both(es, ts, eo, to, 12)


def test_warm_restarts_resumed_at_epoch_7():
    opt = ember.optim.SGD([ember.zeros(1, requires_grad=True)], lr=0.1)
    opt.param_groups[0]["initial_lr"] = 0.1
    sched = ELR.CosineAnnealingWarmRestarts(opt, T_0=3, last_epoch=7)
    assert sched.get_last_lr() == pytest.approx([0.025])


def test_one_cycle_past_the_end():
    eo, _ = make_opts()
    sched = ELR.OneCycleLR(eo, max_lr=0.1, total_steps=3)
    for _ in range(3):
        eo.step()
        sched.step()
    with pytest.raises(ValueError, match="Tried to step 4 times"):
        sched.step()


@pytest.mark.parametrize(("call", "error", "match"), [
    (lambda o: ELR.StepLR(object(), step_size=1), TypeError, "is not an Optimizer"),
    (lambda o: ELR.LinearLR(o, start_factor=0), ValueError, "Starting multiplicative factor"),
    (lambda o: ELR.ConstantLR(o, factor=2.0), ValueError, "between 0 and 1"),
    (lambda o: ELR.LambdaLR(o, [scaled]), ValueError, "Expected 2 lr_lambdas, but got 1"),
    (lambda o: ELR.CosineAnnealingWarmRestarts(o, T_0=0), ValueError, "positive integer T_0"),
    (lambda o: ELR.OneCycleLR(o, max_lr=0.1), ValueError, "total_steps OR"),
    (lambda o: ELR.OneCycleLR(o, max_lr=[0.1], total_steps=5), ValueError,
     "expected 2 values for max_lr"),
    (lambda o: ELR.OneCycleLR(o, max_lr=0.1, total_steps=5, anneal_strategy="x"), ValueError,
     "anneal_strategy"),
    (lambda o: ELR.ReduceLROnPlateau(o, factor=1.0), ValueError, "Factor should be < 1.0"),
    (lambda o: ELR.SequentialLR(o, [ELR.StepLR(o, 2)], milestones=[3]), ValueError,
     "one more than the number of milestone"),
    (lambda o: ELR.SequentialLR(o, [ELR.ReduceLROnPlateau(o)], milestones=[]), ValueError,
     "ReduceLROnPlateau"),
])
def test_errors(call, error, match):
    eo, _ = make_opts()
    with pytest.raises(error, match=match):
        call(eo)


@pytest.mark.parametrize("make", [
    lambda L, o: L.ChainedScheduler([]),
    lambda L, o: L.ChainedScheduler([], optimizer=o),
    lambda L, o: L.SequentialLR(o, [], milestones=[]),
])
def test_no_schedulers_raise_torchs_value_error(make):
    eo, to = make_opts()
    with pytest.raises(ValueError) as expected:
        make(torch.optim.lr_scheduler, to)
    with pytest.raises(ValueError) as got:
        make(ELR, eo)
    assert str(got.value) == str(expected.value)


def test_one_cycle_needs_momentum():
    eo = ember.optim.Adagrad([ember.zeros(2, requires_grad=True)])
    with pytest.raises(ValueError, match="momentum or beta1"):
        ELR.OneCycleLR(eo, max_lr=0.1, total_steps=10)
    assert math.isclose(ELR.OneCycleLR(eo, max_lr=0.1, total_steps=10,
                                       cycle_momentum=False).get_last_lr()[0], 0.004)


TENSOR_LR_SCHEDULES = [
    ("OneCycleLR", dict(max_lr=0.1, total_steps=20)),
    ("CyclicLR", dict(base_lr=0.01, max_lr=0.1, step_size_up=3)),
    ("ReduceLROnPlateau", dict(patience=1)),
    ("CosineAnnealingLR", dict(T_max=5)),
    ("StepLR", dict(step_size=3)),
]


@pytest.mark.parametrize(("name", "kwargs"), TENSOR_LR_SCHEDULES, ids=lambda v: str(v)[:20])
def test_tensor_lr_is_filled_in_place_as_torch(name, kwargs):
    """A float32 tensor lr stays the group's (same object, float32-rounded values) as PyTorch's
    schedulers fill it; OneCycleLR/CyclicLR/ReduceLROnPlateau replaced it by a float, and
    CosineAnnealingLR's initial_lr aliased it (stuck at 0 after T_max)."""
    seqs = []
    for lib in (torch, ember):
        lr = lib.tensor(0.1)
        opt = lib.optim.SGD([lib.ones(2, requires_grad=True)], lr=lr, momentum=0.9)
        sched = getattr(lib.optim.lr_scheduler, name)(opt, **kwargs)
        seq = []
        for _ in range(15):
            opt.step()
            sched.step(1.0) if name == "ReduceLROnPlateau" else sched.step()
            assert opt.param_groups[0]["lr"] is lr
            assert sched.get_last_lr()[0] is not lr  # (a copy, as PyTorch's)
            seq.append(float(lr))
        seqs.append(seq)
    assert seqs[0] == seqs[1]


@pytest.mark.parametrize(("name", "kwargs"), [("StepLR", dict(step_size=0)),
                                              ("CosineAnnealingLR", dict(T_max=0))])
def test_a_zero_period_is_named(name, kwargs):
    # (PyTorch: a bare "integer modulo by zero" at the first step)
    opt = ember.optim.SGD([ember.zeros(1, requires_grad=True)], lr=0.1)
    with pytest.raises(ember.errors.DivisionByZero,
                       match=f"{name}: {next(iter(kwargs))}=0; .* positive") as got:
        getattr(ELR, name)(opt, **kwargs)
    assert isinstance(got.value, ZeroDivisionError)  # (`except ZeroDivisionError` catches it)


@pytest.mark.parametrize("key", ["step", "cosine", "warm-restarts", "one-cycle", "lambda"])
def test_state_dict_counters_match_torch(key):
    """torch's CosineAnnealingWarmRestarts.step never counts ``_step_count`` (it stays 0)."""
    eo, to = make_opts()
    es, ts = SCHEDULES[key](ELR, eo), SCHEDULES[key](torch.optim.lr_scheduler, to)
    for _ in range(3):
        eo.step(); es.step(); to.step(); ts.step()  # noqa: E702
    counters = ("_step_count", "last_epoch", "_is_initial", "_get_lr_called_within_step")
    assert ({k: es.state_dict().get(k) for k in counters}
            == {k: ts.state_dict().get(k) for k in counters})


def test_sequential_recursive_undo_matches_torch():
    """SequentialLR.recursive_undo (public in torch) takes an epoch off every inner scheduler,
    through nested composites, and leaves the composites' own last_epoch."""
    seen = []
    for lib in (ELR, torch.optim.lr_scheduler):
        opt = (ember if lib is ELR else torch).optim.SGD(
            [(ember if lib is ELR else torch).zeros(1, requires_grad=True)], lr=0.1)
        inner = [lib.ConstantLR(opt, factor=0.5), lib.ExponentialLR(opt, gamma=0.5),
                 lib.StepLR(opt, 2)]
        seq = lib.SequentialLR(opt, [inner[0], lib.ChainedScheduler(inner[1:])], milestones=[2])
        seq.recursive_undo()
        seq.recursive_undo(inner[2])
        seen.append([s.last_epoch for s in [*inner, seq]])
    assert seen[0] == seen[1]
