"""``linearize(f, x)``'s ``jvp_fn`` is the JVP at x's value when linearize ran, as
torch.func's: an in-place change of x afterwards moved Ember's point (jvp_fn re-ran f on the
live x). Its errors name linearize's jvp_fn and, as torch's, refuse a tangent of another
dtype."""

import pytest
import torch
import torch.func

import ember
import ember.func

X = [0.5, 1.0, -0.3]


def _f(a):
    return a.sin() * a.sum()


def test_the_point_stays_where_linearize_ran_as_torch_func():
    outs = []
    for lib, func in ((ember, ember.func), (torch, torch.func)):
        x = lib.tensor(X, dtype=lib.float64)
        _, jvp_fn = func.linearize(_f, x)
        t = lib.tensor([1.0, -2.0, 0.5], dtype=lib.float64)
        first = jvp_fn(t).tolist()  # (torch traces f here, at its first call)
        with lib.no_grad():
            x.add_(1.0)
        outs.append(first + jvp_fn(t).tolist() +
                    func.vmap(jvp_fn)(lib.eye(3, dtype=lib.float64)).flatten().tolist())
    assert outs[0] == pytest.approx(outs[1], rel=1e-12)


def test_a_change_before_the_first_call_does_not_move_the_point():
    # (torch.func traces f at jvp_fn's first call, so there it takes x's value then, not
    # the one its `out` was computed at; Ember keeps the point linearize was given)
    x = ember.tensor(X, dtype=ember.float64)
    out, jvp_fn = ember.func.linearize(_f, x)
    with ember.no_grad():
        x.add_(1.0)
    t = ember.tensor([1.0, -2.0, 0.5], dtype=ember.float64)
    p = ember.tensor(X, dtype=ember.float64)
    assert jvp_fn(t).tolist() == pytest.approx((p.cos() * t * p.sum() + p.sin() * t.sum())
                                               .tolist(), rel=1e-12)


def test_the_gradient_through_jvp_fn():
    # (torch 2.13's grad through linearize's jvp_fn gives denormal garbage; the analytic
    # d/dp sum_i [cos(p_i) S + 3 sin(p_i)] = -sin(p_j) S + sum_i cos(p_i) + 3 cos(p_j))
    x = ember.tensor(X, dtype=ember.float64)
    g = ember.func.grad(lambda p: ember.func.linearize(_f, p)[1](
        ember.ones(3, dtype=ember.float64)).sum())(x)
    expected = -x.sin() * x.sum() + x.cos().sum() + 3 * x.cos()
    assert g.tolist() == pytest.approx(expected.tolist(), rel=1e-12)


@pytest.mark.parametrize("tangents, error, match", [
    ((ember.ones(3),), ember.errors.DTypeError, "dtype ember.float32 but its primal"),
    ((ember.ones(2, dtype=ember.float64),), ember.errors.ShapeError, "shape \\(2,\\)"),
    ((ember.ones(3, dtype=ember.float64),) * 2, ember.errors.GradError, "structure")])
def test_bad_tangents_are_refused_by_name(tangents, error, match):
    _, jvp_fn = ember.func.linearize(_f, ember.tensor(X, dtype=ember.float64))
    with pytest.raises(error, match=f"linearize's jvp_fn: .*{match}"):
        jvp_fn(*tangents)
    _, tjvp_fn = torch.func.linearize(_f, torch.tensor(X, dtype=torch.float64))
    with pytest.raises(RuntimeError):
        tjvp_fn(*(torch.from_numpy(t.numpy()) for t in tangents))


def test_a_func_changing_its_input_in_place_is_linearized_at_the_given_point():
    # (the copy was taken after func had doubled x, and each jvp_fn call doubled it again:
    # [-0.832, -1.307] then [-1.307, -0.291]; torch.func drifts too, and from its first call)
    x = ember.tensor([0.5, 1.0], dtype=ember.float64)
    out, jvp_fn = ember.func.linearize(lambda y: y.mul_(2).sin(), x)
    t = ember.tensor([1.0, -2.0], dtype=ember.float64)
    expected = (2 * ember.tensor([1.0, 2.0], dtype=ember.float64).cos() * t).tolist()
    assert jvp_fn(t).tolist() == pytest.approx(expected, rel=1e-12)
    assert jvp_fn(t).tolist() == pytest.approx(expected, rel=1e-12)
    assert x.tolist() == [1.0, 2.0]  # (func ran on x once, as eagerly)
    assert out.tolist() == x.sin().tolist()


def test_a_func_changing_its_input_only_on_a_later_call_is_refused():
    calls = []

    def f(y):  # (an in-place write: jvp_fn runs f again on each call, not a replay)
        calls.append(1)
        z = (y.mul_(2) if len(calls) == 3 else y) * 1
        return z.add_(1).sin()
    _, jvp_fn = ember.func.linearize(f, ember.tensor(X, dtype=ember.float64))
    jvp_fn(ember.ones(3, dtype=ember.float64))
    for _ in range(2):  # (the point moved: every call after is refused)
        with pytest.raises(ember.errors.GradError, match="changed its input in place"):
            jvp_fn(ember.ones(3, dtype=ember.float64))


def test_jvp_fn_checks_the_tangents_once(monkeypatch):
    # (jvp_fn checked them, then called jvp, which checked them again: ~5 us a call)
    import ember.func.linearization as forward
    checks = []
    checked = forward._checked
    monkeypatch.setattr(forward, "_checked", lambda *a, **k: checks.append(1) or checked(*a, **k))
    _, jvp_fn = ember.func.linearize(_f, ember.tensor(X, dtype=ember.float64))
    jvp_fn(ember.ones(3, dtype=ember.float64))
    assert len(checks) == 1
