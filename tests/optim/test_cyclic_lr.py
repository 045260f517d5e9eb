"""CyclicLR against PyTorch: lrs and cycled momenta (SGD's momentum, Adam's beta1) step by step
for every mode and a custom scale_fn, state-dict round trips through JSON, and bad arguments."""

from __future__ import annotations

import json

import pytest
import torch

import ember
from ember.optim import lr_scheduler as ELR
from tests.optim.test_lr_scheduler import make_opts, step_both


class Halving:
    """A callable scale_fn object: its __dict__ goes into the state dict."""

    def __init__(self):
        self.base = 0.5

    def __call__(self, x):
        return self.base ** x


CASES = {
    "triangular": dict(base_lr=0.01, max_lr=0.1, step_size_up=4),
    "triangular2": dict(base_lr=[0.01, 0.001], max_lr=[0.1, 0.05], step_size_up=3,
                        step_size_down=5, mode="triangular2"),
    "exp_range": dict(base_lr=0.01, max_lr=0.2, step_size_up=2, mode="exp_range", gamma=0.9),
    "scale_fn-cycle": dict(base_lr=0.01, max_lr=0.1, step_size_up=3, scale_fn=Halving()),
    "scale_fn-iterations": dict(base_lr=0.01, max_lr=0.1, step_size_up=3,
                                scale_fn=lambda x: 1 / (1 + 0.1 * x), scale_mode="iterations"),
    "momenta": dict(base_lr=0.01, max_lr=0.1, step_size_up=2, base_momentum=[0.7, 0.75],
                    max_momentum=0.85),
    "no-momentum": dict(base_lr=0.01, max_lr=0.1, step_size_up=5, cycle_momentum=False),
}


def build(lib, opt, key):
    return lib.CyclicLR(opt, **CASES[key])


@pytest.mark.parametrize("name", ["SGD", "Adam"])
@pytest.mark.parametrize("key", list(CASES))
def test_lrs_and_momenta_match_torch(key, name):
    eo, to = make_opts(name, **(dict(betas=(0.9, 0.99)) if name == "Adam" else {}))
    es, ts = build(ELR, eo, key), build(torch.optim.lr_scheduler, to, key)
    assert es.get_last_lr() == ts.get_last_lr()
    step_both(es, ts, eo, to, 20)


@pytest.mark.parametrize("key", ["triangular2", "exp_range", "scale_fn-cycle"])
def test_state_dict_round_trip(key):
    eo, to = make_opts("SGD", momentum=0.9)
    es, ts = build(ELR, eo, key), build(torch.optim.lr_scheduler, to, key)
    step_both(es, ts, eo, to, 7)
    saved = json.loads(json.dumps({"opt": eo.state_dict(), "sched": es.state_dict()}))
    assert {"max_lrs", "total_size", "step_ratio", "mode", "gamma", "scale_mode",
            "base_momentums", "max_momentums", "_scale_fn_custom", "last_epoch",
            "base_lrs"} <= saved["sched"].keys() <= ts.state_dict().keys()
    if key == "scale_fn-cycle":
        es._scale_fn_custom.base = 0.25  # changed after saving: the load brings 0.5 back
    eo2, _ = make_opts("SGD", momentum=0.9)
    es2 = build(ELR, eo2, key)
    eo2.load_state_dict(saved["opt"])
    es2.load_state_dict(saved["sched"])
    step_both(es2, ts, eo2, to, 10)


def test_resumes_from_last_epoch():
    eo, to = make_opts("SGD", momentum=0.9)
    es = ELR.CyclicLR(eo, 0.01, 0.1, step_size_up=3)
    ts = torch.optim.lr_scheduler.CyclicLR(to, 0.01, 0.1, step_size_up=3)
    step_both(es, ts, eo, to, 4)
    es2 = ELR.CyclicLR(eo, 0.01, 0.1, step_size_up=3, last_epoch=es.last_epoch)
    ts2 = torch.optim.lr_scheduler.CyclicLR(to, 0.01, 0.1, step_size_up=3,
                                            last_epoch=ts.last_epoch)
    assert es2.get_last_lr() == ts2.get_last_lr()
    step_both(es2, ts2, eo, to, 5)


@pytest.mark.parametrize(("make", "error", "match"), [
    (lambda o: ELR.CyclicLR(o, 0.01, 0.1, mode="square"), ValueError, "mode is invalid"),
    (lambda o: ELR.CyclicLR(o, [0.01], 0.1), ValueError, "expected 2 values for base_lr"),
    (lambda o: ELR.CyclicLR(o, 0.01, 0.1, max_momentum=[0.9] * 3), ValueError,
     "expected 2 values for max_momentum"),
    (lambda o: ELR.CyclicLR(ember.optim.Adagrad(o.param_groups[0]["params"]), 0.01, 0.1),
     ValueError, "must support momentum or beta1"),
    (lambda o: ELR.CyclicLR(object(), 0.01, 0.1), TypeError, "is not an Optimizer"),
    # torch: a bare "float division by zero" (x / step_ratio at the start of every cycle)
    (lambda o: ELR.CyclicLR(o, 0.01, 0.1, step_size_up=0, step_size_down=3),
     ember.errors.DivisionByZero,
     r"CyclicLR: step_size_up=0; .* must be positive"),
    (lambda o: ELR.CyclicLR(o, 0.01, 0.1, step_size_up=0, step_size_down=0),
     ember.errors.DivisionByZero,
     r"step_size_up=0"),
])
def test_bad_arguments_raise_like_torch(make, error, match):
    eo, _ = make_opts("SGD", momentum=0.9)
    with pytest.raises(error, match=match):
        make(eo)


def test_compiled_training_step_follows_the_cycle():
    model = ember.nn.Linear(3, 1)
    opt = ember.optim.SGD(model.parameters(), lr=0.1, momentum=0.9)
    sched = ELR.CyclicLR(opt, 0.01, 0.1, step_size_up=2)

    @ember.jit.compile
    def step(x):
        opt.zero_grad()
        model(x).pow(2).mean().backward()
        opt.step()
        sched.step()

    lrs = []
    for _ in range(5):
        step(ember.ones(2, 3))
        lrs.append(round(opt.param_groups[0]["lr"], 6))
    assert lrs == [0.055, 0.1, 0.055, 0.01, 0.055]
