"""``get_rng_state``/``set_rng_state`` (and ``fork_rng``) inside a compiled function read and
restore the generator's state at each call, as eager code does (sweep59e)."""

from __future__ import annotations

import numpy as np
import pytest

import ember


def _peek(x):
    state = ember.get_rng_state()
    a = ember.rand(3)
    ember.set_rng_state(state)
    return x + a - ember.rand(3), ember.rand(2)


def _forked(x):
    with ember.random.fork_rng():
        a = ember.rand(3)
    return x + a - ember.rand(3), ember.rand(2)


def _generator(x):
    g = GEN
    state = g.get_state()
    a = ember.randn(3, generator=g)
    g.set_state(state)
    return a - ember.randn(3, generator=g), state


def _forked_under_autocast(x):
    with ember.autocast("cpu"):  # (autocast's handler sits above the trace's)
        return _forked(x)


def _forked_under_vmap(x):
    return ember.func.vmap(lambda r: _forked(r)[0], randomness="same")(x[None]), ember.rand(2)


def _seeded_under_autocast(x):
    with ember.autocast("cpu"):
        ember.manual_seed(3)
    return x + ember.rand(3), ember.rand(2)


GEN = ember.Generator().manual_seed(5)


@pytest.mark.parametrize("fn", [_peek, _forked, _generator, _forked_under_autocast,
                                _forked_under_vmap, _seeded_under_autocast])
def test_state_read_and_restored_at_each_call(fn):
    runs = []
    for f in (fn, ember.compile(fn)):
        ember.manual_seed(0)
        GEN.manual_seed(5)
        runs.append([[t.numpy().copy() for t in f(ember.zeros(3))] + [ember.rand(1).numpy()]
                     for _ in range(3)])
    for eager, compiled in zip(*runs):
        for e, c in zip(eager, compiled):
            np.testing.assert_allclose(c, e, atol=1e-6)


def test_code_run_below_a_handler_sees_no_state_hook_above_it():
    """``run_below`` lowers the current handler: a hook of the handler above it (a tracer's
    ``generator_state``) is not used, as ``on_detach`` is not (mend59e2)."""
    from ember.ops.primitive import pop_handler, push_handler, run_below

    class Upper:
        def __call__(self, prim, inputs, params):  # pragma: no cover (no op is run)
            raise AssertionError(prim)

        def generator_state(self, read):
            raise AssertionError("the hook of the handler above was used")

    def lower(prim, inputs, params):  # pragma: no cover (no op is run)
        raise AssertionError(prim)

    upper = Upper()
    push_handler(lower)
    push_handler(upper)
    try:
        state = run_below(upper, ember.get_rng_state)
    finally:
        pop_handler(upper)
        pop_handler(lower)
    np.testing.assert_array_equal(state.numpy(), ember.get_rng_state().numpy())
