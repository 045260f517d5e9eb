"""Early updates: an elementwise optimizer's step split so that each parameter is updated as
soon as its gradient is ready; on hand-built graphs (where each part goes, when the step stays
whole) and on compiled training steps (the same numbers as eager, gradients freed early)."""

from __future__ import annotations

import tracemalloc

import numpy as np
import pytest
from tests.jit.helpers import training_step
from tests.jit.test_passes import Graphs, rand, run

import ember
import ember.nn.functional as F
from ember import jit
from ember.jit.ir import Effect, Eqn, Source, Var
from ember.jit.passes import early_update
from ember.jit.passes.early_update import update_early


def _step(b, params, grads, lr=0.5):
    """A step effect over (parameters, gradients) whose items step alone, as SGD's; the
    equations before it with no source yet are a backward pass's."""
    n = len(params)
    tensors = {ref.var: ref.tensor for ref in b.g.state}

    def part(ks, first=False):
        def step(*arrays):
            for p, g in zip(arrays[:len(ks)], arrays[len(ks):]):
                p -= lr * g
            return list(arrays)
        return step

    def writes(k):
        return [tensors[params[k]]._data] if params[k] in tensors else []

    for eqn in b.g.eqns:
        eqn.source = eqn.source or Source("f.py", 1, "", "backward of f at ")
    outs = [Var(900 + i, v.shape, v.dtype, "eqn") for i, v in enumerate(params + grads)]
    b.g.eqns.append(Eqn(Effect("SGD.step", part(range(n)), n, (part, writes)),
                        params + grads, {}, outs))
    return outs


def _effects(g):
    return [(i, [v.name for v in e.inputs]) for i, e in enumerate(g.eqns)
            if isinstance(e.prim, Effect)]


@pytest.fixture
def every_gradient_large(monkeypatch):
    monkeypatch.setattr(early_update, "SMALL", 0)  # (no part waits for a larger one)


def test_each_part_follows_its_gradient_and_the_last_read_of_its_parameter(every_gradient_large):
    b = Graphs()
    w1, w2 = ember.ones(3), ember.full((3,), 2.0)
    p1, p2, x = b.state(w1), b.state(w2), b.input(3)
    g2 = b("mul", x, x)                   # 0: w2's gradient, ready first
    g1 = b("exp", x)                      # 1: w1's gradient
    seen = b("reshape", p2, shape=(1, 3))  # 2: a view of w2 ...
    y = b("mul", seen, x)                 # 3: ... read here for the last time
    z = b("add", y, b("mul", p1, x))      # 4: w1 read for the last time; 5: the sum
    _step(b, [p1, p2], [g1, g2])
    g = update_early(b.returns(z))
    assert _effects(g) == [(4, [p2.name, g2.name]), (6, [p1.name, g1.name])]
    xs = rand(3)
    out = run(g, xs)[0]
    np.testing.assert_allclose(out, (2 * xs).reshape(1, 3) + xs, rtol=1e-6)  # the old values
    np.testing.assert_allclose(w1.numpy(), 1 - 0.5 * np.exp(xs), rtol=1e-6)
    np.testing.assert_allclose(w2.numpy(), 2 - 0.5 * xs * xs, rtol=1e-6)


@pytest.mark.parametrize("barrier", ["an effect", "a forward equation"])
def test_no_part_moves_before_an_effect_or_the_forwards_end(barrier, every_gradient_large):
    b = Graphs()
    p1, p2, x = b.state(ember.ones(3)), b.state(ember.ones(3)), b.input(3)
    g1 = b("exp", x)  # 0: ready, but held back by 1
    if barrier == "an effect":
        b.g.eqns.append(Eqn(Effect("log", lambda a: [a]), [x], {},
                            [Var(800, (3,), x.dtype, "eqn")]))
    else:  # (a second task's forward, which may raise: no parameter may have moved)
        b("sin", x)
        b.g.eqns[-1].source = Source("f.py", 2, "", "")
    g2 = b("neg", x)  # 2
    late = b("mul", x, x)
    _step(b, [p1, p2], [g1, g2])
    g = update_early(b.returns(late))
    assert _effects(g)[-2:] == [(2, [p1.name, g1.name]), (4, [p2.name, g2.name])]


def test_a_gradient_made_after_the_peak_steps_where_the_whole_step_stood(
        every_gradient_large):
    b = Graphs()
    p1, p2, s, x = b.state(ember.ones(3)), b.state(ember.ones(3)), b.input(3), b.input(4096)
    g1 = b("exp", s)              # 0: alive at the peak: stepping early frees it before
    b("sum", b("exp", x), dims=(0,), keepdim=False)  # 1, 2: the peak (16 KiB at once)
    g2 = b("neg", s)              # 3: made after it: nothing to gain before the end
    late = b("mul", s, s)         # 4
    _step(b, [p1, p2], [g1, g2])
    g = update_early(b.returns(late))
    assert _effects(g) == [(1, [p1.name, g1.name]), (6, [p2.name, g2.name])]


def test_small_gradients_step_with_the_next_large_one():
    b = Graphs()
    big, small = (early_update.SMALL // 4,), (8,)
    p1, p2, p3 = (b.state(ember.ones(*shape)) for shape in (small, big, small))
    x, y = b.input(*small), b.input(*big)
    g1, g2, g3 = b("exp", x), b("exp", y), b("neg", x)  # ready in this order
    _step(b, [p1, p2, p3], [g1, g2, g3])
    g = update_early(b.returns(x))
    assert _effects(g) == [(2, [p1.name, p2.name, g1.name, g2.name]),
                           (4, [p3.name, g3.name])]  # (the last waits for none)


@pytest.mark.parametrize("case", ["gradient views a parameter", "old value read after",
                                  "parameter not its state"])
def test_the_step_stays_whole_where_splitting_could_change_what_it_reads(case,
                                                                        every_gradient_large):
    b = Graphs()
    p1, p2, x = b.state(ember.ones(3)), b.state(ember.ones(3)), b.input(3)
    g1, g2 = b("exp", x), b("neg", x)
    late = None
    if case == "gradient views a parameter":
        g2 = b("reshape", p2, shape=(3,))
    elif case == "old value read after":
        late = b("reshape", p1, shape=(1, 3))
    else:
        p2 = b("mul", p2, x)
    outs = _step(b, [p1, p2], [g1, g2])
    if late is not None:
        b("add", late, outs[0])
    g = update_early(b.returns(x))
    assert len(_effects(g)) == 1


def _train(opt_cls, kwargs, steps, switches=None, compiled=True):
    ember.manual_seed(0)
    model = ember.nn.Sequential(ember.nn.Linear(6, 32), ember.nn.LayerNorm(32), ember.nn.ReLU(),
                                ember.nn.Linear(32, 32), ember.nn.ReLU(), ember.nn.Linear(32, 3))
    opt = opt_cls(model.parameters(), **kwargs)
    step = training_step(model, opt)
    fn = jit.compile(step, passes=switches) if compiled else step
    rng = np.random.default_rng(1)
    x = ember.from_numpy(rng.standard_normal((8, 6), dtype=np.float32))
    y = ember.from_numpy(rng.integers(0, 3, 8))
    losses = [float(fn(x, y)) for _ in range(steps)]
    state = {k: v.numpy().copy() for k, v in model.state_dict().items()}
    moments = [t.numpy().copy() for s in opt.state.values() for t in s.values()
               if isinstance(t, ember.Tensor)]
    return losses, state, moments, fn


@pytest.mark.parametrize("opt_cls,kwargs", [
    (ember.optim.SGD, {"lr": 0.1, "momentum": 0.9, "nesterov": True, "weight_decay": 1e-2}),
    (ember.optim.AdamW, {"lr": 1e-2}),
    (ember.optim.Adam, {"lr": 1e-2, "maximize": True, "amsgrad": True}),
    (ember.optim.RMSprop, {"lr": 1e-2, "momentum": 0.5}),
    (ember.optim.RMSprop, {"lr": 1e-2, "centered": True, "weight_decay": 1e-2}),
    (ember.optim.SGD, {"lr": 0.1, "weight_decay": 1e-2}),
    (ember.optim.Adagrad, {"lr": 1e-2, "lr_decay": 0.1}),
    (ember.optim.Adadelta, {"lr": 1.0}),
    (ember.optim.Adamax, {"lr": 1e-2, "maximize": True}),
    (ember.optim.NAdam, {"lr": 1e-2, "decoupled_weight_decay": True, "weight_decay": 1e-2}),
])
def test_compiled_steps_updated_early_are_eagers_bit_for_bit(opt_cls, kwargs,
                                                             every_gradient_large):
    eager = _train(opt_cls, kwargs, 4, compiled=False)
    early = _train(opt_cls, kwargs, 4)
    assert len([e for e in early[3].graph.eqns if isinstance(e.prim, Effect)]) > 1
    assert early[0] == eager[0]
    for key in eager[1]:
        np.testing.assert_array_equal(early[1][key], eager[1][key], err_msg=key)
    for a, b in zip(early[2], eager[2], strict=True):  # the optimizer's state too
        np.testing.assert_array_equal(a, b)


def _linear_sgd_step() -> tuple:
    """A compiled SGD step of a linear layer, its optimizer and an input."""
    model = ember.nn.Linear(4, 2)
    opt = ember.optim.SGD(model.parameters(), lr=0.1)

    @jit.compile
    def step(x):
        model(x).sum().backward()
        opt.step()
        opt.zero_grad()

    return step, opt, ember.ones(3, 4)


def test_step_hooks_keep_the_step_whole_and_registering_one_retraces(every_gradient_large):
    step, opt, x = _linear_sgd_step()
    calls = []
    step(x)
    assert len([e for e in step.graph.eqns if isinstance(e.prim, Effect)]) == 2
    opt.register_step_post_hook(lambda *args: calls.append(1))
    step(x)
    step(x)
    assert calls == [1, 1]
    assert jit.explain()[-1].endswith("step hooks of opt: [] -> [test_step_hooks_keep_the_step_"
                                      "whole_and_registering_one_retraces.<locals>.<lambda>]")
    assert len([e for e in step.graph.eqns if isinstance(e.prim, Effect)]) == 1


def test_a_step_over_parameters_with_no_gradient_compiles_and_moves_none():
    # the optimizer holds one layer, the loss uses another: its step updates nothing (the
    # pass raised "min() arg is an empty sequence")
    used, held = ember.nn.Linear(4, 2), ember.nn.Linear(4, 2)
    before = [p.detach().clone() for p in held.parameters()]
    opt = ember.optim.SGD(held.parameters(), lr=0.1)

    @jit.compile
    def step(x):
        loss = used(x).sum()
        loss.backward()
        opt.step()
        opt.zero_grad()
        return loss

    x = ember.ones(3, 4)
    assert step(x).item() == pytest.approx(used(x).sum().item())
    assert all(ember.equal(p, b) for p, b in zip(held.parameters(), before, strict=True))


def _peak(fn, *args):
    fn(*args)
    tracemalloc.start()
    try:
        fn(*args)
        return tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()


def test_a_gradient_is_freed_once_its_parameter_is_updated():
    def build(switches):
        ember.manual_seed(0)
        model = ember.nn.Sequential(ember.nn.Linear(256, 512), ember.nn.Tanh(),
                                    ember.nn.Linear(512, 512), ember.nn.Tanh(),
                                    ember.nn.Linear(512, 256))
        opt = ember.optim.SGD(model.parameters(), lr=0.1)

        def step(x):
            model(x).square().mean().backward()
            opt.step()
            opt.zero_grad()

        return jit.compile(step, passes=switches)

    x = ember.ones(4, 256)
    whole, early = _peak(build({"early_update": False}), x), _peak(build(None), x)
    grads = 4 * (2 * 256 * 512 + 512 * 512)  # the weights' gradients, 2 MiB in all
    assert whole > grads and whole - early > 256 * 512 * 4  # (at least the last layer's)


@pytest.mark.parametrize("case", ["a stale gradient", "a second task", "a read-only weight"])
def test_a_call_that_fails_moves_no_parameter(case, every_gradient_large):
    a, b, head = ember.nn.Linear(8, 8), ember.nn.Linear(8, 8), ember.nn.Linear(8, 3)
    opt = ember.optim.Adam([*a.parameters(), *b.parameters(), *head.parameters()])
    if case == "a stale gradient":  # stepped, though the step's forward never reads it
        a.weight.grad = ember.ones(8, 8)

    @jit.compile
    def step(x, y):
        if case == "a second task":  # its backward comes before the failing forward
            F.cross_entropy(a(x)[:, :3], ember.tensor([0, 1])).backward()
        F.cross_entropy(head(b(a(x) if case == "a read-only weight" else x)), y).backward()
        opt.step()
        if case != "a stale gradient":
            opt.zero_grad()

    x, good, bad = ember.ones(2, 8), ember.tensor([0, 1]), ember.tensor([0, 7])
    step(x, good)
    step(x, good)
    assert len([e for e in step.graph.eqns if isinstance(e.prim, Effect)]) > 1
    if case == "a read-only weight":
        frozen = a.weight.detach().numpy().copy()
        frozen.flags.writeable = False
        a.weight.data = ember.from_numpy(frozen)
    before = [p.detach().numpy().copy() for p in opt.param_groups[0]["params"]]
    error = ember.errors.OpError if case == "a read-only weight" else ember.errors.IndexOutOfRange
    with pytest.raises(error):
        step(x, good if case == "a read-only weight" else bad)  # (class 7 is out of range)
    for p, old in zip(opt.param_groups[0]["params"], before, strict=True):
        np.testing.assert_array_equal(p.detach().numpy(), old)


def _steps(make, calls=3, switches=None):
    """Losses and parameters of ``calls`` calls of the step ``make()`` builds (on a freshly
    seeded model), eagerly and compiled with early updates."""
    out = []
    for compiled in (False, True):
        ember.manual_seed(0)
        step, args, params = make()
        fn = jit.compile(step, passes=switches) if compiled else step
        losses = [float(fn(*args)) for _ in range(calls)]
        out.append((losses, [p.detach().numpy().copy() for p in params]))
    return out


def _same(eager, early):
    assert early[0] == eager[0]
    for a, b in zip(early[1], eager[1], strict=True):
        np.testing.assert_array_equal(a, b)


@pytest.mark.parametrize("as_argument", [False, True])
def test_optimizer_state_read_before_the_step_is_its_old_value(as_argument,
                                                               every_gradient_large):
    def make():
        m = ember.nn.Sequential(ember.nn.Linear(4, 16), ember.nn.Tanh(), ember.nn.Linear(16, 16))
        opt = ember.optim.SGD(m.parameters(), lr=0.1, momentum=0.9)
        x = ember.ones(2, 4)
        m(x).square().mean().backward()
        opt.step()
        opt.zero_grad()
        buf = opt.state[m[2].weight]["momentum_buffer"]

        def step(x, b):
            m(x).square().mean().backward()
            seen = (b if as_argument else buf).sum()  # (logging the momentum, say)
            opt.step()
            opt.zero_grad()
            return seen

        return step, (x, buf), list(m.parameters())

    _same(*_steps(make))


def test_parameters_sharing_memory_step_in_eagers_order(every_gradient_large):
    def make():
        pre = ember.nn.Linear(8, 8)
        enc, dec = ember.nn.Linear(8, 32, bias=False), ember.nn.Linear(32, 8, bias=False)
        dec.weight = ember.nn.Parameter(enc.weight.data.t())  # (enc's memory, transposed)
        opt = ember.optim.SGD([*pre.parameters(), enc.weight, dec.weight], lr=0.1)
        x = ember.from_numpy(np.random.default_rng(0).standard_normal((5, 8), dtype=np.float32))

        def step(x):
            loss = (dec(ember.tanh(enc(ember.tanh(pre(x))))) - x).square().mean()
            loss.backward()
            opt.step()
            opt.zero_grad()
            return loss

        return step, (x,), [pre.weight, enc.weight]

    _same(*_steps(make, 4))


def test_registering_a_global_step_hook_retraces(every_gradient_large):
    step, _, x = _linear_sgd_step()
    calls = []
    step(x)
    handle = ember.optim.optimizer.register_optimizer_step_post_hook(
        lambda *args: calls.append(1))
    try:
        step(x)
        step(x)
    finally:
        handle.remove()
    step(x)
    assert calls == [1, 1]
