"""``optim.swap_in_optimizer_params_and_state`` against PyTorch: the step inside the block acts
on the swap-in parameters and state (in-place state updates land in the given dict), and the
optimizer's own parameters, options and state come back on exit."""

from __future__ import annotations

import numpy as np
import pytest
import torch

import ember


def _run(lib, name, kw):
    w = lib.tensor([1.0, -2.0, 0.5], requires_grad=True)
    b = lib.tensor([0.3], requires_grad=True)
    opt = getattr(lib.optim, name)([{"params": [w]}, {"params": [b], "lr": 0.05}], **kw)
    w.grad, b.grad = lib.ones(3), lib.full((1,), -1.0)
    opt.step()
    saved = opt.state_dict()
    saved = {"state": {k: {n: v.clone() if isinstance(v, lib.Tensor) else v
                           for n, v in s.items()} for k, s in saved["state"].items()},
             "param_groups": [dict(g, lr=g["lr"] * 2) for g in saved["param_groups"]]}
    ow = lib.zeros(3, requires_grad=True)
    ob = lib.zeros(1, requires_grad=True)
    ow.grad, ob.grad = lib.tensor([1.0, 2.0, 3.0]), lib.tensor([0.5])
    own_groups = opt.param_groups[0]["params"]
    with lib.optim.swap_in_optimizer_params_and_state(opt, {"w": ow, "b": ob}, saved):
        opt.step()
        inside = [g["lr"] for g in opt.param_groups]
    after = (opt.param_groups[0]["params"] is own_groups, [g["lr"] for g in opt.param_groups])
    opt.step()
    values = [t.detach().numpy().copy() for t in (w, b, ow, ob)]
    state = [v.numpy().copy() for s in saved["state"].values() for v in s.values()
             if isinstance(v, lib.Tensor)]
    return values, state, inside, after


@pytest.mark.parametrize("name,kw", [("SGD", dict(lr=0.1, momentum=0.9)),
                                     ("Adam", dict(lr=0.1, amsgrad=True)),
                                     ("RMSprop", dict(lr=0.01, centered=True))])
def test_swap_in_matches_torch(name, kw):
    ev, es, ein, eafter = _run(ember, name, kw)
    tv, ts, tin, tafter = _run(torch, name, kw)
    for e, t in zip(ev + es, tv + ts, strict=True):
        np.testing.assert_allclose(e, t, rtol=1e-6)
    assert ein == tin
    assert eafter == tafter


def test_swap_in_refuses_what_torch_refuses():
    for lib in (ember, torch):
        w = lib.ones(2, requires_grad=True)
        opt = lib.optim.SGD([w], lr=0.1, momentum=0.9)
        with pytest.raises(RuntimeError, match="initialized"):
            with lib.optim.swap_in_optimizer_params_and_state(opt, {"w": w}, opt.state_dict()):
                pass
        w.grad = lib.ones(2)
        opt.step()
        sd = opt.state_dict()
        bad = {"state": sd["state"], "param_groups": [dict(sd["param_groups"][0], extra=1)]}
        with pytest.raises(RuntimeError, match="extra"):
            with lib.optim.swap_in_optimizer_params_and_state(opt, {"w": w}, bad):
                pass
        with pytest.raises(RuntimeError, match=r"\[7\]"):
            with lib.optim.swap_in_optimizer_params_and_state(
                    opt, {"w": w}, {"state": {7: {}}, "param_groups": sd["param_groups"]}):
                pass


@pytest.mark.parametrize("groups", [2, 1])
def test_an_id_listed_twice_is_refused(groups):
    """PyTorch 2.13 hands one state to both parameters: its step fails on a shape mismatch
    ("output with shape [1] doesn't match the broadcast shape [2]") or, for equal shapes,
    updates the shared momentum buffer twice. Ember refuses the layout up front."""
    w, b = ember.ones(1, requires_grad=True), ember.ones(groups, requires_grad=True)
    opt = ember.optim.SGD([{"params": [w]}, {"params": [b]}] if groups == 2 else [w, b],
                          lr=0.1, momentum=0.9)
    w.grad, b.grad = ember.ones_like(w), ember.ones_like(b)
    opt.step()
    sd = opt.state_dict()
    saved = {"state": {0: {"momentum_buffer": ember.ones(1)}},
             "param_groups": [dict(g, params=[0] * len(g["params"])) for g in sd["param_groups"]]}
    swap_in = {"w": ember.zeros(1, requires_grad=True),
               "b": ember.zeros(groups, requires_grad=True)}
    with pytest.raises(ValueError, match=f"param id 0 is listed twice .*group {groups - 1}"):
        with ember.optim.swap_in_optimizer_params_and_state(opt, swap_in, saved):
            pass
    assert opt.param_groups[-1]["params"][-1] is b


def test_an_optimizer_built_with_a_parameter_twice_is_named_in_the_hint():
    # (its own state_dict saves params [0, 0]: the hint sent the user to edit the dict)
    w = ember.ones(2, requires_grad=True)
    with pytest.warns(UserWarning):
        opt = ember.optim.SGD([w, w], lr=0.1, momentum=0.9)
    w.grad = ember.ones(2)
    opt.step()
    assert opt.state_dict()["param_groups"][0]["params"] == [0, 0]
    with pytest.raises(ValueError, match="lists? one parameter twice.*without the duplicate"):
        with ember.optim.swap_in_optimizer_params_and_state(
                opt, {"a": ember.zeros(2), "b": ember.zeros(2)}, opt.state_dict()):
            pass


def _sgd_and_swap_in():
    w = ember.tensor([1.0, 2.0], requires_grad=True)
    opt = ember.optim.SGD([w], lr=0.1, momentum=0.9)
    w.grad = ember.ones(2)
    opt.step()
    saved = {"state": {0: {"momentum_buffer": ember.ones(2)}},
             "param_groups": opt.state_dict()["param_groups"]}
    return w, opt, saved, ember.zeros(2, requires_grad=True)


def _step(opt, o, g):
    o.grad = g
    opt.step()
    return o.detach() * 1


@pytest.mark.parametrize("compiled", [False, True])
def test_a_compiled_step_inside_the_block_steps_as_eager(compiled):
    w, opt, saved, o = _sgd_and_swap_in()
    step = ember.jit.compile(_step) if compiled else _step
    with ember.optim.swap_in_optimizer_params_and_state(opt, {"o": o}, saved):
        for i in range(4):
            step(opt, o, ember.full((2,), float(i)))
    np.testing.assert_allclose(w.detach().numpy(), [0.9, 1.9])
    np.testing.assert_allclose(o.detach().numpy(), [-1.26051, -1.26051], rtol=1e-6)
    np.testing.assert_allclose(saved["state"][0]["momentum_buffer"].numpy(), [6.2661, 6.2661],
                               rtol=1e-6)


def test_entering_the_block_inside_a_compiled_function_is_refused():
    """A graph replays the step on the optimizer's own parameters (the ``with`` block's Python
    does not run at replay), so tracing the block is refused with the way out."""
    w, opt, saved, o = _sgd_and_swap_in()

    def f(g):
        with ember.optim.swap_in_optimizer_params_and_state(opt, {"o": o}, saved):
            return _step(opt, o, g)

    with pytest.raises(RuntimeError, match="enter the block outside the traced function"):
        ember.jit.compile(f)(ember.ones(2))
    for trace in (lambda: ember.jit.trace(f, (ember.ones(2),)),  # (wording: not only compile)
                  lambda: ember.cond(ember.tensor(True), f, f, (ember.ones(2),))):
        with pytest.raises(RuntimeError, match="while a function is being traced"):
            trace()
    np.testing.assert_allclose(w.detach().numpy(), [0.9, 1.9])
    assert opt.param_groups[0]["params"] == [w]


def test_an_exception_inside_the_block_restores_the_optimizer_as_torch():
    for lib in (ember, torch):
        w = lib.tensor([1.0, 2.0], requires_grad=True)
        opt = lib.optim.SGD([w], lr=0.1, momentum=0.9)
        w.grad = lib.ones(2)
        opt.step()
        own_state, own_params = opt.state, opt.param_groups[0]["params"]
        saved = opt.state_dict()
        saved = {"state": {0: {"momentum_buffer": lib.ones(2)}},
                 "param_groups": [dict(saved["param_groups"][0], lr=0.5)]}
        o = lib.zeros(2, requires_grad=True)
        o.grad = lib.ones(2)
        with pytest.raises(KeyError):
            with lib.optim.swap_in_optimizer_params_and_state(opt, {"o": o}, saved):
                opt.step()
                opt.state[o]["extra"] = lib.ones(1)
                raise KeyError("inside")
        assert opt.state is own_state and opt.param_groups[0]["params"] is own_params
        assert opt.param_groups[0]["lr"] == 0.1 and sorted(saved["state"][0]) == ["momentum_buffer"]
        np.testing.assert_allclose(o.detach().numpy(), [-0.95, -0.95], rtol=1e-6)
        np.testing.assert_allclose(w.detach().numpy(), [0.9, 1.9], rtol=1e-6)
