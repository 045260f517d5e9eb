"""``linearize(f, x)`` runs ``f`` once for its value and once recorded in forward mode, as
torch.func's; each ``jvp_fn`` call replays the recorded ``jvp`` rules (before, it ran ``f``
again: its side effects and random draws repeated per call)."""

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
    assert e[:2] == t[:2] == (2, 2)  # (f ran at linearize only: before, once more per call)
    assert e[2] == pytest.approx(t[2], rel=1e-12)
    for a, b in zip(e[3], t[3]):
        assert a == pytest.approx(b, rel=1e-12, abs=1e-14)


def test_a_random_draw_in_f_is_not_drawn_again_per_call():
    ember.manual_seed(0)
    _, jvp_fn = ember.func.linearize(lambda x: x * ember.rand(3, dtype=ember.float64),
                                     ember.ones(3, dtype=ember.float64))
    t = ember.ones(3, dtype=ember.float64)
    assert jvp_fn(t).tolist() == jvp_fn(t).tolist()


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
    assert len(calls) == 3
