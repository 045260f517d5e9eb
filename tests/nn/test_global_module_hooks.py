"""ember.nn.register_module_forward_pre_hook / register_module_forward_hook run for every
module, before its own hooks, as torch.nn.modules.module's do."""

import pytest
import torch

import ember


def _order(nn, lib, register_pre, register_post):
    calls = []
    model = nn.Sequential(nn.Identity())
    model[0].register_forward_pre_hook(lambda m, a: calls.append("own pre"))
    model[0].register_forward_hook(lambda m, a, o: calls.append("own post"))
    handles = [register_pre(lambda m, a: calls.append(f"global pre {type(m).__name__}")),
               register_post(lambda m, a, k, o: calls.append(f"global post {sorted(k)}"),
                             with_kwargs=True)]
    model(lib.ones(1))
    for h in handles:
        h.remove()
    model(lib.ones(1))
    return calls


def test_order_and_removal_match_torch():
    ours = _order(ember.nn, ember, ember.nn.register_module_forward_pre_hook,
                  ember.nn.register_module_forward_hook)
    mm = torch.nn.modules.module
    theirs = _order(torch.nn, torch, mm.register_module_forward_pre_hook,
                    mm.register_module_forward_hook)
    assert ours == theirs
    assert ours[:3] == ["global pre Sequential", "global pre Identity", "own pre"]


def test_results_replace_arguments_and_outputs():
    pre = ember.nn.register_module_forward_pre_hook(lambda m, args: (args[0] + 1,))
    post = ember.nn.register_module_forward_hook(lambda m, args, out: out * 10)
    try:
        assert ember.nn.Identity()(ember.zeros(1)).tolist() == [10.0]
    finally:
        pre.remove()
        post.remove()
    assert ember.nn.Identity()(ember.zeros(1)).tolist() == [0.0]


def test_always_call_runs_when_forward_raises():
    class Failing(ember.nn.Module):
        def forward(self, x):
            raise ValueError("no")

    seen = []
    h = ember.nn.register_module_forward_hook(lambda m, a, out: seen.append(out),
                                              always_call=True)
    try:
        with pytest.raises(ValueError, match="no"):
            Failing()(ember.ones(1))
    finally:
        h.remove()
    assert seen == [None]


def test_compiled_module_runs_global_hooks_registered_after_compiling():
    model = ember.nn.Linear(2, 2)
    compiled = ember.jit.compile(model)
    x = ember.ones(1, 2)
    plain = compiled(x)
    compiled(x)
    with ember.nn.register_module_forward_hook(lambda m, a, out: out * 2):
        assert ember.allclose(compiled(x), plain * 2)
        assert ember.allclose(compiled(x), plain * 2)  # (the graph retraced with the hook)
    with ember.nn.register_module_forward_pre_hook(lambda m, args: (args[0] * 0,)):
        assert ember.allclose(compiled(x), model.bias)
    assert ember.allclose(compiled(x), plain)


def test_a_module_call_checks_only_its_own_hooks_while_no_global_hook_is_set():
    fast = ember.nn.Module.__call__
    calls = []

    def remove_itself(m, args):
        calls.append(type(m).__name__)
        handle.remove()

    handle = ember.nn.register_module_forward_pre_hook(remove_itself)
    assert ember.nn.Module.__call__ is not fast
    model = ember.nn.Sequential(ember.nn.Identity())
    model(ember.ones(1))
    model(ember.ones(1))
    assert calls == ["Sequential"] and ember.nn.Module.__call__ is fast
    handle.remove()  # (a second removal does nothing)
    assert ember.nn.Module.__call__ is fast


def _always_call_cases(lib, register):
    calls = []

    class Failing(lib.nn.Module):
        def forward(self, x):
            raise ValueError("forward failed")

    def outcome(model):
        try:
            model(lib.ones(1))
        except Exception as exc:  # noqa: BLE001
            calls.append(type(exc).__name__)

    identity = lib.nn.Identity()
    identity.register_forward_pre_hook(lambda m, a: 1 / 0)  # raises before forward
    with register(lambda m, a, out: calls.append(("always", out)), always_call=True):
        outcome(identity)
    with register(lambda m, a, out: [][1], always_call=True), \
            pytest.warns(UserWarning, match="always_call"):
        outcome(Failing())  # (the hook's IndexError is a warning; forward's error raises)
    with register(lambda m, a, out: {}["x"]), \
            register(lambda m, a, out: calls.append(("always after", out)), always_call=True):
        outcome(lib.nn.Identity())  # (a hook raising after forward: the output so far)
    return [(c[0], c[1].tolist()) if isinstance(c, tuple) and c[1] is not None else c
            for c in calls]


def test_always_call_hooks_run_whatever_raises_as_torch():
    ours = _always_call_cases(ember, ember.nn.register_module_forward_hook)
    theirs = _always_call_cases(torch, torch.nn.modules.module.register_module_forward_hook)
    assert ours == theirs == [("always", None), "ZeroDivisionError", "ValueError",
                              ("always after", [1.0]), "KeyError"]


def _backward_order(lib):
    from importlib import import_module

    hooks = import_module(f"{lib.__name__}.nn.modules.module")
    seen = []
    handles = [hooks.register_module_full_backward_hook(
                   lambda m, gi, go: seen.append(("bw", type(m).__name__, len(gi), len(go)))),
               hooks.register_module_full_backward_pre_hook(
                   lambda m, go: seen.append(("pre", type(m).__name__, len(go))))]
    model = lib.nn.Sequential(lib.nn.Linear(2, 2), lib.nn.ReLU())
    model[0].register_full_backward_hook(lambda m, gi, go: seen.append(("own", "Linear")))
    try:
        model(lib.ones(1, 2, requires_grad=True)).sum().backward()
    finally:
        for h in handles:
            h.remove()
    return seen


def test_global_backward_hooks_run_as_torchs():
    assert _backward_order(ember) == _backward_order(torch)
    assert ember.nn.Linear.__call__ is ember.nn.Module._call_fast  # (all removed again)


def _registrations(lib):
    from importlib import import_module

    hooks = import_module(f"{lib.__name__}.nn.modules.module")
    seen = []
    handles = [getattr(hooks, f"register_module_{kind}_registration_hook")(
        lambda m, n, v, kind=kind: seen.append((kind, type(m).__name__, n)))
        for kind in ("parameter", "buffer", "module")]
    try:
        linear = lib.nn.Linear(2, 2)
        linear.extra = lib.nn.Parameter(lib.ones(1))
        seq = lib.nn.Sequential(lib.nn.BatchNorm1d(2))
        seq.act = lib.nn.ReLU()
        seq.register_buffer("step", lib.zeros(()))
        seq.step = lib.ones(())  # assigning to a buffer or a child registers it again
        seq.act = None
    finally:
        for h in handles:
            h.remove()
    return seen


def test_registration_hooks_see_what_torchs_see():
    assert _registrations(ember) == _registrations(torch)


def test_a_registration_hook_may_replace_the_value():
    h = ember.nn.register_module_buffer_registration_hook(lambda m, n, b: b + 1)
    try:
        bn = ember.nn.BatchNorm1d(2)
    finally:
        h.remove()
    assert bn.running_mean.tolist() == [1.0, 1.0]


def test_a_compiled_module_retraces_when_a_global_backward_hook_comes():
    seen = []
    compiled = ember.compile(ember.nn.Linear(2, 1))
    compiled(ember.ones(1, 2, requires_grad=True)).sum().backward()
    h = ember.nn.register_module_full_backward_hook(lambda m, gi, go: seen.append(1))
    try:
        compiled(ember.ones(1, 2, requires_grad=True)).sum().backward()
    finally:
        h.remove()
    assert seen
