"""``linearize(f, x)`` runs ``f`` once, recorded in forward mode (torch.func's twice); each
``jvp_fn`` call replays the recorded ``jvp`` rules (before, it ran ``f`` again), except where
``f`` draws random numbers (as torch.func's, each call draws again), writes in place or calls a
custom Function: there ``f`` runs again per call and the recording is not kept."""

import gc
import weakref

import pytest
import torch
import torch.func

import ember
import ember.func

X = [0.5, 1.0, -0.3]


def _run(lib, func, f):
    calls = []

    def counted(x, w):
        calls.append(1)
        return f(lib, x, w)
    x = lib.tensor(X, dtype=lib.float64)
    w = lib.tensor([[1.0, 2.0, 0.0], [0.5, -1.0, 3.0]], dtype=lib.float64)
    out, jvp_fn = func.linearize(counted, x, w)
    at_linearize = len(calls)
    t = (lib.tensor([1.0, -2.0, 0.5], dtype=lib.float64), lib.ones(2, 3, dtype=lib.float64))
    values = [jvp_fn(*t), jvp_fn(t[0] * 3, t[1] * 0),
              func.vmap(jvp_fn, in_dims=(0, None))(lib.eye(3, dtype=lib.float64), t[1])]
    return at_linearize, len(calls), out.flatten().tolist(), [v.flatten().tolist() for v in values]


@pytest.mark.parametrize("f", [
    lambda lib, x, w: (w @ x.sin()).exp() * x[:2].sum(),
    lambda lib, x, w: lib.nn.functional.softmax(w.t().reshape(2, 3) * x, dim=-1)[1],
    lambda lib, x, w: lib.where(x > 0, x * x, x.tanh()).unsqueeze(0) + w.max(dim=0).values,
], ids=["matmul", "softmax-views", "where-max"])
def test_jvp_fn_replays_without_running_f_as_torch_func(f):
    e, t = _run(ember, ember.func, f), _run(torch, torch.func, f)
    assert t[:2] == (2, 2) and e[:2] == (1, 1)  # (at linearize only: before, once per call)
    assert e[2] == pytest.approx(t[2], rel=1e-12)
    for a, b in zip(e[3], t[3]):
        assert a == pytest.approx(b, rel=1e-12, abs=1e-14)


@pytest.mark.parametrize("f", [
    lambda lib, x: x * lib.rand(3, dtype=lib.float64),
    lambda lib, x: lib.nn.functional.dropout(x * 2, 0.5),
    lambda lib, x: x * lib.randn_like(x),
], ids=["rand", "dropout", "randn_like"])
def test_a_random_draw_in_f_is_drawn_again_per_call_as_torch_func(f):
    # (Ember replayed the draw of the recording: both calls gave the same tangent)
    for lib in (ember, torch):
        lib.manual_seed(0)
        x = lib.ones(3, dtype=lib.float64)
        _, jvp_fn = lib.func.linearize(lambda a, lib=lib: f(lib, a), x)
        t = lib.ones(3, dtype=lib.float64)
        firsts = [jvp_fn(t).tolist() for _ in range(4)]
        assert any(a != firsts[0] for a in firsts[1:]), lib.__name__


def test_the_replay_is_differentiable_in_the_tangents_and_the_point():
    x = ember.tensor(X, dtype=ember.float64, requires_grad=True)
    t = ember.tensor([1.0, -2.0, 0.5], dtype=ember.float64, requires_grad=True)
    _, jvp_fn = ember.func.linearize(lambda a: (a.sin() * a).sum(), x)
    jvp_fn(t).backward()
    assert t.grad.tolist() == pytest.approx((x.sin() + x * x.cos()).tolist(), rel=1e-12)
    assert x.grad.tolist() == pytest.approx(
        ((2 * x.cos() - x * x.sin()) * t).tolist(), rel=1e-12)
    assert ember.autograd.gradcheck(lambda d: ember.func.linearize(
        lambda a: a.exp() * a, x.detach())[1](d), (t.detach().requires_grad_(),))


def test_a_func_with_an_in_place_write_still_runs_again_and_is_right():
    calls = []

    def f(a):
        calls.append(1)
        return (a * 2).add_(1).sin()
    x = ember.tensor(X, dtype=ember.float64)
    _, jvp_fn = ember.func.linearize(f, x)
    t = ember.ones(3, dtype=ember.float64)
    assert jvp_fn(t).tolist() == pytest.approx((2 * (2 * x + 1).cos()).tolist(), rel=1e-12)
    assert len(calls) == 2  # (as torch.func's; it ran three times: value, recording, call)


def test_a_recording_that_is_not_replayed_is_not_kept():
    kept = []

    def f(a):
        b = a.exp()
        kept.append(weakref.ref(b))
        return (b * 2).add_(1)
    _, jvp_fn = ember.func.linearize(f, ember.tensor(X, dtype=ember.float64))
    gc.collect()
    assert all(r() is None for r in kept)  # (the recording held every intermediate of f)
    t = ember.ones(3, dtype=ember.float64)
    assert jvp_fn(t).tolist() == pytest.approx((2 * ember.tensor(X).double().exp()).tolist())


def test_an_output_changed_in_place_after_linearize_does_not_change_jvp_fn():
    x = ember.tensor(X, dtype=ember.float64)
    out, jvp_fn = ember.func.linearize(ember.exp, x)
    out.add_(1)  # (exp's rule reads its output: the replay would see the change)
    assert jvp_fn(ember.ones(3, dtype=ember.float64)).tolist() == pytest.approx(
        x.exp().tolist(), rel=1e-12)


def test_an_input_returned_is_the_primal_itself_as_torch_func():
    # (f ran once, on aliases of the primals: linearize(identity, x)[0] was an alias of x)
    for lib in (ember, torch):
        x = lib.ones(2, dtype=lib.float64)
        out, jvp_fn = lib.func.linearize(lambda a, b: (a, b * 2), x, x)
        assert out[0] is x
        assert jvp_fn(x, x)[0].tolist() == [1.0, 1.0]


@pytest.mark.parametrize("f", [lambda a: a, lambda a: a[0:2], lambda a: (a.view(3, 1), a * 2),
                               lambda a: a.t()], ids=["identity", "slice", "view", "t"])
def test_jvp_fn_results_never_share_the_callers_tangent_memory_as_torch_func(f):
    for lib in (ember, torch):
        x = lib.ones(3, dtype=lib.float64)
        t = lib.full((3,), 2.0, dtype=lib.float64)
        _, jvp_fn = lib.func.linearize(f, x)
        out = jvp_fn(t)
        for o in out if isinstance(out, tuple) else (out,):
            o.mul_(5)  # (a result aliasing t would change the caller's tangent)
        assert t.tolist() == [2.0, 2.0, 2.0], lib.__name__
    _, jvp_fn = ember.func.linearize(lambda a: a, ember.ones(3, dtype=ember.float64))
    assert ember.func.vmap(jvp_fn)(ember.ones(2, 3, dtype=ember.float64)).shape == (2, 3)
