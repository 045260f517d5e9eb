"""A compiled module or function called under autocast (or wrapped by autocast's decorator)
sees what a plain compiled call sees: a module's training flag, a replaced parameter, a new
hook; and the whole autocast state (cache_enabled too) picks its graph."""

import functools

import numpy as np
import pytest

import ember


def _arr(t):
    return t.detach().float().numpy()


def _bn_model():
    ember.manual_seed(0)
    return ember.nn.Sequential(ember.nn.Linear(4, 8), ember.nn.BatchNorm1d(8),
                               ember.nn.Linear(8, 3))


def _compiled_forms(model):
    """(name, callable, whether the caller enters autocast) for each way of combining them."""
    return [("under autocast", ember.jit.compile(model), True),
            ("autocast over compile", ember.autocast("cpu")(ember.jit.compile(model)), False),
            ("compile over autocast", ember.jit.compile(ember.autocast("cpu")(model)), False),
            ("compile over autocast, under autocast",
             ember.jit.compile(ember.autocast("cpu")(model)), True)]


def _call(fn, outer, x):
    if outer:
        with ember.autocast("cpu"):
            return fn(x)
    return fn(x)


def _replace_weight(model):
    model[0].weight = ember.nn.Parameter(ember.randn(8, 4))


@pytest.mark.parametrize("change", [ember.nn.Module.eval, _replace_weight],
                         ids=["train then eval", "replaced weight"])
@pytest.mark.parametrize("form", range(4))
def test_a_change_to_the_module_under_autocast_is_seen(form, change):
    # the graph traced first (train mode: batch statistics; the old weight) was reused
    model = _bn_model()
    x = ember.randn(6, 4)
    name, fn, outer = _compiled_forms(model)[form]
    _call(fn, outer, x)
    change(model)
    with ember.autocast("cpu"):
        want = model(x)
    np.testing.assert_allclose(_arr(_call(fn, outer, x)), _arr(want), rtol=1e-6, err_msg=name)


@pytest.mark.parametrize("form", range(4))
def test_a_new_forward_hook_under_autocast_runs(form):
    ember.manual_seed(0)
    model = ember.nn.Linear(4, 3)
    x = ember.randn(6, 4)
    name, fn, outer = _compiled_forms(model)[form]
    _call(fn, outer, x)
    model.register_forward_hook(lambda m, i, o: o * 0 + 1)
    assert (_arr(_call(fn, outer, x)) == 1).all(), name


def test_a_partial_over_a_module_under_autocast_sees_eval():
    # (what a partial holds is followed as in a plain compiled call)
    model = _bn_model()
    x = ember.randn(6, 4)
    fn = ember.jit.compile(functools.partial(lambda m, t: m(t), model))
    with ember.autocast("cpu"):
        fn(x)
    model.eval()
    with ember.autocast("cpu"):
        got, want = fn(x), model(x)
    np.testing.assert_allclose(_arr(got), _arr(want), rtol=1e-6)


def test_a_function_reaching_an_autocast_wrapped_module_sees_eval():
    model = _bn_model()
    wrapped = ember.autocast("cpu")(model)
    x = ember.randn(6, 4)
    fn = ember.jit.compile(lambda t: wrapped(t))
    fn(x)
    model.eval()
    with ember.autocast("cpu"):
        want = model(x)
    np.testing.assert_allclose(_arr(fn(x)), _arr(want), rtol=1e-6)


def test_cache_enabled_is_part_of_the_autocast_state_a_graph_is_traced_for():
    def h(t, w):
        return (t @ w) * (2.0 if ember.is_autocast_cache_enabled() else 3.0)

    fast = ember.jit.compile(h)
    x, w = ember.randn(3, 4), ember.randn(4, 2)
    for cache in (True, False, True):
        with ember.autocast("cpu", cache_enabled=cache):
            got, want = fast(x, w), h(x, w)
            np.testing.assert_array_equal(_arr(got), _arr(want))
            assert ember.is_autocast_cache_enabled() is cache
    assert len(fast.within) == 2


SCALE = 2.0


def test_a_users_wraps_wrapper_of_a_module_is_the_users_code():
    # functools.wraps copied the module's __module__ (ember.nn...): the wrapper was taken for
    # library code, so the global it reads was not watched
    global SCALE
    model = ember.nn.Linear(4, 3)

    @functools.wraps(model)
    def run(t):
        return model(t) * SCALE

    fn = ember.jit.compile(run)
    x = ember.randn(2, 4)
    fn(x)
    SCALE = 5.0
    try:
        np.testing.assert_allclose(_arr(fn(x)), _arr(run(x)), rtol=1e-6)
    finally:
        SCALE = 2.0
