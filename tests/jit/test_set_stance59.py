"""``ember.compiler.set_stance``: torch.compiler.set_stance's stances as a call, a ``with``
block and a decorator (sweep59e)."""

from __future__ import annotations

import pytest

import ember
from ember.errors import ArgumentError
from ember.jit import TraceError


def _counting():
    calls = []

    def f(x):
        calls.append(1)  # (Python runs when eager or when tracing)
        return x * 2

    return ember.compile(f), calls


def test_force_eager_as_call_block_and_decorator():
    g, calls = _counting()
    g(ember.ones(2))
    g(ember.ones(2))
    assert len(calls) == 1
    with ember.compiler.set_stance("force_eager"):
        assert g(ember.ones(2)).tolist() == [2.0, 2.0]
    assert len(calls) == 2
    g(ember.ones(2))
    assert len(calls) == 2  # (compiled again after the block)

    @ember.compiler.set_stance("force_eager")
    def eager_twice(x):
        return g(g(x))

    g(ember.ones(2))
    assert len(calls) == 2  # (decorating did not change the stance)
    assert eager_twice(ember.ones(2)).tolist() == [4.0, 4.0] and len(calls) == 4
    ember.compiler.set_stance("force_eager")
    try:
        g(ember.ones(2))
        assert len(calls) == 5
    finally:
        ember.compiler.set_stance("default")
    g(ember.ones(2))
    assert len(calls) == 5


def test_recompile_stances():
    g, calls = _counting()
    with ember.compiler.set_stance("fail_on_recompile"):
        with pytest.raises(TraceError, match="fail_on_recompile"):
            g(ember.ones(2))
    g(ember.ones(2))
    with ember.compiler.set_stance("fail_on_recompile"):
        assert g(ember.ones(2)).tolist() == [2.0, 2.0]  # (a graph fits)
        with pytest.raises(TraceError, match=r"shape \(2,\) -> \(3,\)"):
            g(ember.ones(3))
    with ember.compiler.set_stance("eager_on_recompile"):
        n = len(calls)
        assert g(ember.ones(3)).tolist() == [2.0] * 3 and g(ember.ones(3)) is not None
        assert len(calls) == n + 2 and len(g.entries) == 1  # (ran the plain function)
        assert "ran eagerly" in ember.jit.explain()[-1]
        g(ember.ones(2))
        assert len(calls) == n + 2  # (the graph kept still runs)
    assert ember._dynamo.set_stance is ember.compiler.set_stance


def test_bad_stances():
    with pytest.raises(ArgumentError, match="unknown stance 'eager'"):
        ember.compiler.set_stance("eager")
    with pytest.raises(ArgumentError, match="non-default stance cannot have force_backend"):
        ember.compiler.set_stance("force_eager", force_backend="eager")  # (torch raises too)
    with pytest.raises(ArgumentError, match="force_backend='nope' is not a backend"):
        ember.compiler.set_stance("default", force_backend="nope")

    @ember.compile
    def inside(x):
        ember.compiler.set_stance("force_eager")
        return x

    with pytest.raises(TraceError, match="inside a compiled function"):
        inside(ember.ones(1))
    assert ember.jit.switches.JIT.enabled


def test_force_backend_with_the_default_stance_as_torch():
    g, calls = _counting()
    with ember.compiler.set_stance("default", force_backend="eager"):
        assert g(ember.ones(2)).tolist() == [2.0, 2.0] and g(ember.ones(2)) is not None
    assert len(calls) == 1  # (compiled)


@pytest.mark.parametrize("stance", ["eager_then_compile", "aot_eager_then_compile"])
def test_eager_then_compile_stances_as_torch(stance):
    g, calls = _counting()
    g(ember.ones(2))  # (a graph for this signature: it runs)
    with ember.compiler.set_stance(stance):
        for _ in range(3):
            assert g(ember.ones(2)).tolist() == [2.0, 2.0]
        assert len(calls) == 1
        for _ in range(3):  # a new signature: eager once, then compiled (torch's order)
            assert g(ember.ones(3)).tolist() == [2.0] * 3
        assert len(calls) == 3 and len(g.entries) == 2
    torch = pytest.importorskip("torch")
    with torch.compiler.set_stance(stance):  # (torch takes both stances)
        pass


def test_fail_on_recompile_after_a_training_step_is_warmed_up_twice():
    lin = ember.nn.Linear(3, 2)
    opt = ember.optim.Adam(lin.parameters(), lr=0.1)

    @ember.compile
    def step(x):
        opt.zero_grad()
        loss = lin(x).pow(2).sum()
        loss.backward()
        opt.step()
        return loss

    step(ember.ones(4, 3))
    with ember.compiler.set_stance("fail_on_recompile"):  # (the hint says what is true)
        with pytest.raises(TraceError, match="two calls for a training step"):
            step(ember.ones(4, 3))
    step(ember.ones(4, 3))
    with ember.compiler.set_stance("fail_on_recompile"):
        for _ in range(3):
            step(ember.ones(4, 3))
