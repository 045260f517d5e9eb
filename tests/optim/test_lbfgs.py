"""LBFGS against torch.optim.LBFGS: float64 trajectories, closure-call counts and history
sizes step by step, with and without the strong-Wolfe line search; state dicts continue a run."""

from __future__ import annotations

import numpy as np
import pytest
import torch

import ember
from tests.optim.helpers import assert_params_close, loss, pair

CASES = [
    dict(),
    dict(line_search_fn="strong_wolfe"),
    dict(lr=0.5, max_iter=5, history_size=3),
    dict(lr=0.8, max_iter=7, history_size=2, line_search_fn="strong_wolfe"),
    dict(max_iter=1),
    dict(max_eval=6, line_search_fn="strong_wolfe"),
    dict(tolerance_grad=1e-2, tolerance_change=1e-3),
    dict(lr=0.1, max_iter=3, max_eval=2),
]


def closure(lib, opt, params):
    def evaluate():
        opt.zero_grad()
        value = loss(lib, params)
        value.backward()
        return value
    return evaluate


def step_both(eo, to, ep, tp, steps):
    for _ in range(steps):
        el = eo.step(closure(ember, eo, ep))
        tl = to.step(closure(torch, to, tp))
        np.testing.assert_allclose(el.item(), tl.item(), rtol=1e-6)
        assert_params_close(ep, tp)
        es, ts = eo.state[ep[0]], to.state[tp[0]]
        assert (es["func_evals"], es["n_iter"]) == (ts["func_evals"], ts["n_iter"])
        assert len(es["old_dirs"]) == len(ts["old_dirs"])
        np.testing.assert_allclose(es["d"].numpy(), ts["d"].numpy(), rtol=1e-6, atol=1e-12)


@pytest.mark.parametrize("kwargs", CASES, ids=[str(k) for k in CASES])
def test_trajectory_matches_torch(kwargs):
    ep, tp = pair()
    step_both(ember.optim.LBFGS(ep, **kwargs), torch.optim.LBFGS(tp, **kwargs), ep, tp, 4)


@pytest.mark.parametrize("kwargs", CASES[:4], ids=[str(k) for k in CASES[:4]])
def test_state_dict_round_trip_mid_run(kwargs):
    ep, tp = pair()
    eo, to = ember.optim.LBFGS(ep, **kwargs), torch.optim.LBFGS(tp, **kwargs)
    step_both(eo, to, ep, tp, 2)
    ep2 = [ember.tensor(p.detach().numpy().copy(), requires_grad=True) for p in ep]
    eo2 = ember.optim.LBFGS(ep2, **dict(kwargs, lr=123.0))  # the loaded group replaces lr
    eo2.load_state_dict(eo.state_dict())
    assert eo2.param_groups[0]["lr"] == eo.param_groups[0]["lr"]
    step_both(eo2, to, ep2, tp, 3)


@pytest.mark.parametrize("convert", ["numpy", "ember"])
@pytest.mark.parametrize("kwargs", CASES[:4], ids=[str(k) for k in CASES[:4]])
def test_a_torch_state_dict_continues_as_in_torch(kwargs, convert):
    """PyTorch's state (``ro`` a list of 0-d tensors, ``H_diag`` a tensor, ``t`` a number),
    converted tensor by tensor or given as is, continues in Ember as it does in PyTorch."""
    tp = pair()[1]
    to = torch.optim.LBFGS(tp, **kwargs)
    for _ in range(2):
        to.step(closure(torch, to, tp))
    saved = to.state_dict()
    assert isinstance(saved["state"][0]["H_diag"], torch.Tensor)
    if convert == "ember":
        def to_ember(v):
            if isinstance(v, list):
                return [to_ember(x) for x in v]
            return ember.tensor(v.numpy()) if isinstance(v, torch.Tensor) else v
        saved = {"param_groups": saved["param_groups"],
                 "state": {0: {k: to_ember(v) for k, v in saved["state"][0].items()}}}
    ep = [ember.tensor(p.detach().numpy().copy(), requires_grad=True) for p in tp]
    eo = ember.optim.LBFGS(ep, **kwargs)
    eo.load_state_dict(saved)
    step_both(eo, to, ep, tp, 2)


@pytest.mark.parametrize("kwargs", CASES[:2], ids=[str(k) for k in CASES[:2]])
def test_complex_parameters_step_as_their_real_pairs_as_in_torch(kwargs):
    rng = np.random.default_rng(0)
    w0, x, y = (rng.standard_normal(s) + 1j * rng.standard_normal(s) for s in [(2, 3), (4, 3),
                                                                                (4, 2)])
    results = []
    for lib in (torch, ember):
        w, real = lib.tensor(w0, requires_grad=True), lib.tensor([0.5], requires_grad=True)
        opt = lib.optim.LBFGS([w, real], max_iter=4, **kwargs)

        def evaluate(lib=lib, w=w, real=real, opt=opt):
            opt.zero_grad()
            value = (lib.tensor(x) @ w.T * real - lib.tensor(y)).abs().pow(2).mean()
            value.backward()
            return value
        for _ in range(2):
            opt.step(evaluate)
        results.append((w.detach().numpy(), real.detach().numpy()))
    for e, t in zip(results[1], results[0]):
        np.testing.assert_allclose(e, t, rtol=1e-6, atol=1e-10)


def test_parameters_without_gradients_and_an_optimum():
    ep, tp = pair()
    eo, to = ember.optim.LBFGS(ep), torch.optim.LBFGS(tp)
    for _ in range(2):  # ep[0] gets no gradient: its flat-gradient slice is zero
        eo.step(closure(ember, eo, ep[1:]))
        to.step(closure(torch, to, tp[1:]))
        assert_params_close(ep, tp)
    w = ember.zeros(3, requires_grad=True)
    opt = ember.optim.LBFGS([w])
    value = opt.step(closure(ember, opt, [w * 0]))  # zero gradient: returns at once
    assert value.item() == 0.0 and opt.state[w]["n_iter"] == 0


@pytest.mark.parametrize(("call", "error", "match"), [
    (lambda p: ember.optim.LBFGS([{"params": p[:1]}, {"params": p[1:]}]), ValueError,
     "parameter groups"),
    (lambda p: ember.optim.LBFGS(p, line_search_fn="armijo"), ValueError, "strong_wolfe"),
    (lambda p: ember.optim.LBFGS(p, lr=-1.0), ValueError, "Invalid learning rate"),
    (lambda p: ember.optim.LBFGS(p).step(None), TypeError, "needs a closure"),
    # (PyTorch 2.13 takes 0 and raises IndexError: pop from empty list at the second iteration)
    (lambda p: ember.optim.LBFGS(p, history_size=0), ValueError, "history_size must be"),
    (lambda p: ember.optim.LBFGS(p, history_size=2.0), ValueError, "history_size must be"),
])
def test_errors(call, error, match):
    ep, _ = pair()
    with pytest.raises(error, match=match):
        call(ep)


@pytest.mark.parametrize("dtype", ["float64", "float32", "float16"])
@pytest.mark.parametrize("kwargs", CASES[:2], ids=[str(k) for k in CASES[:2]])
def test_state_numbers_are_tensors_of_the_parameters_dtype_as_in_torch(kwargs, dtype):
    """``ro`` and ``H_diag`` are 0-d tensors of the parameters' dtype (their float32 arithmetic
    float32, as PyTorch's 0-d tensors); ``t`` the group's ``lr`` as given (an int 1 here)."""
    kinds = []
    for lib in (torch, ember):
        w = lib.tensor(np.linspace(-1.0, 2.0, 6)).to(getattr(lib, dtype)).requires_grad_()
        opt = lib.optim.LBFGS([w], max_iter=5, **kwargs)
        for _ in range(2):
            opt.step(closure(lib, opt, [w]))
        state = opt.state[w]
        kinds.append([(type(v).__name__ if not isinstance(v, lib.Tensor) else
                       ("tensor", str(v.dtype).split(".")[-1], tuple(v.shape)))
                      for v in [state["t"], state["H_diag"], state["ro"][0]]])
    assert kinds[1] == kinds[0]


def _linspace_run(lib, dtype, steps, **kwargs):
    """float16/32 LBFGS on ``sum((w - 1)^2 * [1..6]) + 0.3 sum(sin 3w)`` from linspace(-1, 2)."""
    w = lib.tensor(np.linspace(-1.0, 2.0, 6)).to(getattr(lib, dtype)).requires_grad_()
    opt = lib.optim.LBFGS([w], **kwargs)

    def evaluate():
        opt.zero_grad()
        value = (((w - 1.0) ** 2 * lib.arange(1, 7, dtype=w.dtype)).sum()
                 + lib.sin(3 * w).sum() * 0.3)
        value.backward()
        return value
    trace = []
    for _ in range(steps):
        opt.step(evaluate)
        state = opt.state[w]
        trace.append((w.detach().float().numpy().tolist(), float(state["H_diag"]),
                      [float(r) for r in state["ro"]], state["func_evals"]))
    return w, opt, trace


def test_float16_arithmetic_is_torchs_bit_for_bit():
    """The float16 scalars (ys, ro, H_diag, gtd) are float16 as PyTorch's 0-d tensors: three
    steps of four iterations (history 3) equal torch's params, H_diag, ro and closure counts
    exactly (float64 scalars, before 7d40eb1b, differed at every step)."""
    traces = [_linspace_run(lib, "float16", 3, max_iter=4, history_size=3)[2]
              for lib in (torch, ember)]
    assert traces[1] == traces[0]


@pytest.mark.parametrize("lr_dtype", ["float64", "float32", "int64"])
def test_tensor_lr_keeps_its_dtype_and_is_the_state_t_as_in_torch(lr_dtype):
    """A 0-d tensor ``lr`` is used as PyTorch's 0-d tensor: the first step length
    ``min(1, 1/|g|_1) * lr`` promotes with it (float64 for a float64 lr on float32 parameters)
    and the step is PyTorch's ``add_`` (``t`` rounded to float32, one fused rounding): the
    first step equals torch's bit for bit. ``state['t']`` is a 0-d tensor of that dtype, and
    after a later iteration the group's lr tensor itself."""
    runs = []
    for lib in (torch, ember):
        lr = lib.tensor(1 if lr_dtype == "int64" else 0.27, dtype=getattr(lib, lr_dtype))
        w, opt, _ = _linspace_run(lib, "float32", 1, lr=lr, max_iter=1)
        t = opt.state[w]["t"]
        runs.append([w.detach().numpy().tolist(), str(t.dtype).split(".")[-1], t.shape, float(t)])
        w, opt, _ = _linspace_run(lib, "float32", 2, lr=lr, max_iter=3)
        t = opt.state[w]["t"]
        runs[-1] += [str(t.dtype).split(".")[-1], t is opt.param_groups[0]["lr"]]
    assert runs[1] == runs[0]


@pytest.mark.parametrize("kwargs", CASES[:2], ids=[str(k) for k in CASES[:2]])
def test_state_keeps_the_two_loop_coefficients_al_as_torch(kwargs):
    """PyTorch's state holds ``al`` (history_size entries: the last two-loop's coefficients,
    None past the pairs stored); state dicts carry the same keys and values."""
    states = []
    for lib in (torch, ember):
        w = lib.tensor(np.linspace(-1.0, 2.0, 6), requires_grad=True)
        opt = lib.optim.LBFGS([w], max_iter=3, history_size=8, **kwargs)
        for _ in range(2):
            opt.step(closure(lib, opt, [w]))
        states.append(opt.state_dict()["state"][0])
    assert sorted(states[0]) == sorted(states[1])
    assert [a is None for a in states[0]["al"]] == [a is None for a in states[1]["al"]]
    np.testing.assert_allclose([float(a) for a in states[1]["al"] if a is not None],
                               [float(a) for a in states[0]["al"] if a is not None], rtol=1e-9)


def _resized_history_run(lib, sizes, edit=None):
    """Two steps of history_size ``sizes[0]``, then ``edit(state)`` and three of ``sizes[1]``."""
    w = lib.tensor(np.linspace(-1.0, 2.0, 6), requires_grad=True)
    opt = lib.optim.LBFGS([w], max_iter=4, history_size=sizes[0])
    for _ in range(2):
        opt.step(closure(lib, opt, [w]))
    opt.param_groups[0]["history_size"] = sizes[1]
    if edit is not None:
        edit(opt.state[w])
    for _ in range(3):
        opt.step(closure(lib, opt, [w]))
    return w.detach().numpy().copy(), opt.state[w]


def test_history_size_raised_after_steps_steps_as_torch_with_al_padded():
    """A history_size raised between steps (or a saved ``al`` shorter than it): PyTorch 2.13
    raises IndexError unless ``al`` is padded by hand; Ember pads it and steps the same."""
    expected, _ = _resized_history_run(torch, (2, 5), lambda state: state["al"].extend([None] * 3))
    values, _ = _resized_history_run(ember, (2, 5))
    np.testing.assert_allclose(values, expected, rtol=1e-9)


def test_history_size_lowered_after_steps_drops_the_oldest_pairs():
    """PyTorch 2.13 raises IndexError (its two-loop runs over more pairs than ``al`` holds);
    Ember keeps the newest ``history_size`` pairs: the same steps as an LBFGS whose history
    was cut to them by hand."""
    def cut(state):
        assert len(state["old_dirs"]) > 2
        for key in ("old_dirs", "old_stps", "ro"):
            state[key] = state[key][-2:]

    expected, _ = _resized_history_run(ember, (5, 2), cut)
    values, state = _resized_history_run(ember, (5, 2))
    assert len(state["old_dirs"]) == 2
    np.testing.assert_array_equal(values, expected)
