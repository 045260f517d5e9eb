"""Module backward hooks around a compiled call: they run in Python at every backward, in
eager's order, with eager's arguments, and the gradients they return replace eager's — the
call runs the plain function (as torch.compile graph-breaks at such a module); with
``fullgraph=True`` that is an error naming the hook."""

from __future__ import annotations

import numpy as np
import pytest

import ember
from ember import jit, nn
from ember.jit import TraceError
from ember.nn import register_module_full_backward_hook

CALLS = 3  # the trace, then two cached calls


def _model():
    ember.manual_seed(0)
    return nn.Sequential(nn.Linear(3, 4), nn.Tanh(), nn.Linear(4, 2))


def _shapes(grads):
    return tuple(None if g is None else (tuple(g.shape), round(float(g.sum()), 6))
                 for g in grads)


def _hook_all(model, log):
    """A pre-hook that scales grad_output and a full hook that replaces grad_input, on the
    last layer, and a global full hook that logs every module."""
    def pre(mod, go):
        log.append(("pre", type(mod).__name__, _shapes(go)))
        return (go[0] * 2,)

    def full(mod, gi, go):
        log.append(("full", type(mod).__name__, _shapes(gi), _shapes(go)))
        return (gi[0] * 3,)

    return [model[2].register_full_backward_pre_hook(pre),
            model[2].register_full_backward_hook(full),
            register_module_full_backward_hook(
                lambda mod, gi, go: log.append(("global", type(mod).__name__, _shapes(gi))))]


def _run(call, x, log):
    log.clear()
    x = x.detach().requires_grad_()
    out = call(x)
    (out * ember.arange(2.0)).sum().backward()
    return list(log), x.grad.numpy().copy()


def test_compiled_calls_run_module_backward_hooks_once_per_backward_as_eager():
    model, log = _model(), []
    handles = _hook_all(model, log)
    try:
        fast = jit.compile(model)
        x = ember.randn(5, 3)
        eager_log, eager_grad = _run(model, x, log)
        eager_weight_grad = model[0].weight.grad.numpy().copy()
        kinds = [e[0] for e in eager_log]  # (the global hook: Sequential and its 3 layers)
        assert kinds.count("pre") == kinds.count("full") == 1 and kinds.count("global") == 4
        for _ in range(CALLS):
            model.zero_grad()
            got_log, got_grad = _run(fast, x, log)
            assert got_log == eager_log
            np.testing.assert_allclose(got_grad, eager_grad, rtol=1e-6)
            np.testing.assert_allclose(model[0].weight.grad.numpy(), eager_weight_grad,
                                       rtol=1e-6)
        assert "backward hooks" in jit.explain()[-1] and "pre at " in jit.explain()[-1]
    finally:
        for h in handles:
            h.remove()


def test_removing_the_hooks_compiles_the_call_again():
    model, log = _model(), []
    handles = _hook_all(model, log)
    fast = jit.compile(model)
    x = ember.randn(5, 3)
    _run(fast, x, log)
    for h in handles:
        h.remove()
    eager_log, eager_grad = _run(model, x, log)
    for _ in range(CALLS):
        got_log, got_grad = _run(fast, x, log)
        assert got_log == eager_log == []
        np.testing.assert_allclose(got_grad, eager_grad, rtol=1e-6)
    assert fast.last.joint is not None and fast.last.eager is None  # (compiled again)


def test_without_grad_the_hooks_do_not_matter():
    model, log = _model(), []
    handles = _hook_all(model, log)
    try:
        fast = jit.compile(model)
        with ember.no_grad():
            for _ in range(CALLS):
                np.testing.assert_allclose(fast(ember.ones(2, 3)).numpy(),
                                           model(ember.ones(2, 3)).numpy(), rtol=1e-6)
        assert fast.last.eager is None and log == []
    finally:
        for h in handles:
            h.remove()


def test_fullgraph_refuses_a_module_backward_hook_naming_it():
    model = _model()

    def clip(mod, go):
        return (go[0].clamp(-1, 1),)
    model[2].register_full_backward_pre_hook(clip)
    fast = ember.compile(model, fullgraph=True)
    with pytest.raises(TraceError, match=r"module 2 \(Linear\).*clip"):
        fast(ember.randn(5, 3, requires_grad=True))
