"""A training step whose parameters are views of one flat vector (``vector_to_parameters``,
or parameters made over slices of it) and which reads that vector before and after
``opt.step()`` compiles, and gives eager's values exactly over several calls: the loss, the
vector's reads, the parameters, the vector and the optimizer's state. An in-place write of
the user's to a parameter or to the vector in the step runs eagerly, one between calls is
seen, and pointing the parameters at another vector traces again."""

import numpy as np
import pytest

import ember
from ember import nn


def _model(kind, build):
    ember.manual_seed(0)
    m = nn.Sequential(nn.Linear(5, 8), nn.ReLU(), nn.Linear(8, 3))
    ps = list(m.parameters())
    flat = nn.utils.parameters_to_vector(ps).detach().clone()
    if build == "vector_to_parameters":
        nn.utils.vector_to_parameters(flat, ps)
    else:  # (each parameter's data set to a slice of the vector by hand, as fused optimizers do)
        at = 0
        for p in ps:
            p.data = flat[at:at + p.numel()].view(p.shape)
            at += p.numel()
    opt = ember.optim.SGD(ps, lr=0.1, momentum=0.9) if kind == "sgd" else \
        ember.optim.AdamW(ps, lr=0.01, weight_decay=0.1)
    return m, ps, flat, opt


def _step(m, ps, flat, opt, write=None):
    def step(x, y):
        opt.zero_grad()
        before = flat.norm()
        if write == "param before":
            with ember.no_grad():
                ps[1].add_(0.5)
        if write == "vector before":
            flat.mul_(0.5)
        loss = ((m(x) - y) ** 2).mean()
        loss.backward()
        nn.utils.clip_grad_norm_(ps, 1.0)
        opt.step()
        if write == "param after":
            with ember.no_grad():
                ps[0].mul_(0.5)
        if write == "vector after":
            flat.add_(0.25)
        return loss, before, flat.norm(), flat.sum()
    return step


def _state(opt, ps):
    return [np.asarray(v.numpy() if isinstance(v, ember.Tensor) else v)
            for p in ps for v in opt.state[p].values()]


def _runs(kind, build="vector_to_parameters", write=None, between=None, calls=4):
    x, y = ember.randn(16, 5), ember.randn(16, 3)
    runs, g = [], None
    for compiled in (False, True):
        m, ps, flat, opt = _model(kind, build)
        g = ember.jit.compile(_step(m, ps, flat, opt, write)) if compiled else \
            _step(m, ps, flat, opt, write)
        seen = []
        for i in range(calls):
            if between is not None:
                between(i, flat, ps)
            out = [t.detach().numpy().copy() for t in g(x, y)]
            seen.append(out + [flat.numpy().copy(), *(p.detach().numpy().copy() for p in ps)]
                        + _state(opt, ps))
        runs.append(seen)
    for eager, comp in zip(*runs):
        assert len(eager) == len(comp)
        for a, b in zip(eager, comp):
            np.testing.assert_array_equal(a, b)
    return g


@pytest.mark.parametrize("build", ["vector_to_parameters", "slices"])
@pytest.mark.parametrize("kind", ["sgd", "adamw"])
def test_a_step_reading_the_flat_vector_compiles_and_matches_eager(kind, build):
    g = _runs(kind, build)
    assert g.last.eager is None and g.traces == 2  # (the first call has no .grad yet)


@pytest.mark.parametrize("write", ["param before", "param after", "vector before",
                                   "vector after"])
def test_an_in_place_write_to_a_parameter_or_the_vector_runs_eagerly(write):
    g = _runs("sgd", write=write)
    assert "shares its memory" in g.last.eager


def test_a_write_to_the_vector_between_calls_is_seen():
    def between(i, flat, ps):
        with ember.no_grad():
            flat.mul_(0.9)
            ps[2].add_(0.1)
    g = _runs("adamw", between=between)
    assert g.last.eager is None


def test_parameters_pointed_at_another_vector_trace_again():
    def between(i, flat, ps):
        if i == 2:
            nn.utils.vector_to_parameters(flat.clone(), ps)  # (flat is no longer theirs)
    g = _runs("sgd", between=between)
    assert g.traces == 3 and g.last.eager is None


def test_the_vector_returned_or_viewed_before_the_step_is_as_eager():
    m, ps, flat, opt = _model("sgd", "vector_to_parameters")
    x = ember.randn(4, 5)

    def step():
        head = flat[:4]
        old = head.sum()
        opt.zero_grad()
        m(x).sum().backward()
        opt.step()
        return old, flat, head * 1.0

    results = []
    for compiled in (False, True):
        m, ps, flat, opt = _model("sgd", "vector_to_parameters")
        f = ember.jit.compile(step) if compiled else step
        results.append([[t.detach().numpy().copy() for t in f()] for _ in range(3)])
    for a, b in zip(*results):
        for u, v in zip(a, b):
            np.testing.assert_array_equal(u, v)


def test_a_vector_reached_but_not_read_keeps_a_clamped_step_compiled():
    class Trainer:  # (holds the vector its parameters view; the step never reads it)
        def __init__(self):
            self.m, self.ps, self.flat, self.opt = _model("sgd", "vector_to_parameters")

        def step(self, x):
            self.opt.zero_grad()
            self.m(x).pow(2).mean().backward()
            self.opt.step()
            with ember.no_grad():
                self.ps[0].clamp_(-0.2, 0.2)  # (a write besides the step's)

    x, runs = ember.randn(4, 5), []
    for compiled in (False, True):
        t = Trainer()
        step = ember.jit.compile(t.step) if compiled else t.step
        for _ in range(3):
            step(x)
        runs.append(t.flat.numpy().copy())
    np.testing.assert_array_equal(*runs)
    assert step.last.eager is None


def test_python_reading_the_vector_runs_eagerly():
    def make():
        m, ps, flat, opt = _model("sgd", "vector_to_parameters")
        x = ember.randn(4, 5)

        def step():
            before = flat.tolist()
            opt.zero_grad()
            m(x).pow(2).mean().backward()
            opt.step()
            return before, flat.tolist()
        return step

    g = ember.jit.compile(make())
    assert [g() for _ in range(3)] == [f() for f in [make()] for _ in range(3)]
    assert "Python reads the value of flat" in g.last.eager
