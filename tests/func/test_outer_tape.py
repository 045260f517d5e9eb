"""Results of the reverse-mode transforms stay on the ordinary tape, as torch.func's do: under
``vmap`` (``vmap(grad(f))(x)`` with ``x.requires_grad``), for ``vjp``, ``jacrev`` and
``hessian`` too, and ``vjp_fn(c)`` is differentiable in a cotangent ``c`` that requires grad.
A tape outside ``vmap`` sees ``detach()`` and in-place ops inside the mapped function."""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
import pytest
import torch

import ember

X = np.array([[1.0, 2.0], [3.0, -4.0], [0.5, 0.25]])


def _f(r):
    return (r ** 3).sum() + (r[0] * r[1]).sin()


def _g(r):
    return r.sin() * r.sum()


def _mul_in_place(r):
    b = r.clone()
    b.mul_(r)  # (the batched mul saves b's batch, which the write then changes)
    return b


def _detached(r):
    return r.detach() * r


def _detach_in_place(r):
    b = r * 2
    b.detach_()
    return b * r


def _detached_in_place(r):
    b = r.detach().clone()
    b.mul_(r)
    return b


CASES: dict[str, Callable] = {
    "vmap_grad": lambda F, L, x: F.vmap(F.grad(_f))(x),
    "vmap_grad_of_non_leaf": lambda F, L, x: F.vmap(F.grad(_f))(x * 2),
    "vmap_grad_in_dims_1": lambda F, L, x: F.vmap(F.grad(_f), in_dims=1)(x.T.contiguous()),
    "vmap_vmap_grad": lambda F, L, x: F.vmap(F.vmap(F.grad(lambda s: s ** 3)))(x),
    "vmap_grad_and_value": lambda F, L, x: F.vmap(F.grad_and_value(_f))(x)[1],
    "vmap_vjp": lambda F, L, x: F.vmap(lambda r: F.vjp(_f, r)[1](L.ones(()))[0])(x),
    "vmap_jacrev": lambda F, L, x: F.vmap(F.jacrev(_g))(x),
    "vmap_hessian": lambda F, L, x: F.vmap(F.hessian(_f))(x),
    "vmap_grad_unbatched_arg": lambda F, L, x: F.vmap(
        F.grad(lambda a, r: (a * r ** 2).sum(), argnums=1), in_dims=(None, 0))(x[0], x),
    "grad_vmap_grad": lambda F, L, x: F.grad(lambda z: F.vmap(F.grad(_f))(z).pow(2).sum())(x),
    "vmap_mul_in_place": lambda F, L, x: F.vmap(_mul_in_place)(x),
    "vmap_vmap_mul_in_place": lambda F, L, x: F.vmap(F.vmap(_mul_in_place))(x),
    "vmap_detach": lambda F, L, x: F.vmap(_detached)(x),
    "vmap_vmap_detach": lambda F, L, x: F.vmap(F.vmap(_detached), in_dims=1)(x),
    "vmap_detach_in_place": lambda F, L, x: F.vmap(_detached_in_place)(x),
    "grad_vmap_detach": lambda F, L, x: F.grad(lambda z: F.vmap(_detached)(z).pow(2).sum())(x),
    "jacrev": lambda F, L, x: F.jacrev(_g)(x[1]),
    "hessian": lambda F, L, x: F.hessian(_f)(x[0]),
}


def _run(lib, case: str) -> tuple:
    x = lib.tensor(X.copy(), requires_grad=True)
    y = CASES[case](lib.func, lib, x)
    weights = lib.tensor(np.linspace(0.5, 2.0, y.numel()).reshape(tuple(y.shape)))
    (y * weights).sum().backward()
    return y, x.grad


@pytest.mark.parametrize("case", sorted(CASES))
def test_results_stay_on_the_outer_tape_like_torch_func(case: str) -> None:
    (ey, eg), (ty, tg) = _run(ember, case), _run(torch, case)
    assert ey.requires_grad and ty.requires_grad
    np.testing.assert_allclose(ey.detach().numpy(), ty.detach().numpy(), rtol=1e-9, atol=1e-9)
    np.testing.assert_allclose(eg.numpy(), tg.numpy(), rtol=1e-9, atol=1e-9)


@pytest.mark.parametrize("lib", [ember, torch])
def test_no_outer_tape_gives_plain_results(lib) -> None:
    grad_of = lib.func.vmap(lib.func.grad(_f))
    assert not grad_of(lib.tensor(X.copy())).requires_grad
    with lib.no_grad():
        assert not grad_of(lib.tensor(X.copy(), requires_grad=True)).requires_grad


def _cotangent_grads(lib) -> tuple:
    x = lib.tensor([0.5, 1.0, -2.0], requires_grad=True)
    c = lib.tensor([1.0, -1.0, 2.0], requires_grad=True)
    _, vjp_fn = lib.func.vjp(lambda r: r.sin() * r.sum(), x)
    (r,) = vjp_fn(c * 3)
    assert r.requires_grad
    (r * r).sum().backward()
    # a grad over the cotangent of a vjp_fn made outside it: the result is plain
    _, fn = lib.func.vjp(lib.sin, lib.zeros(3))
    g = lib.func.grad(lambda u: (fn(u)[0] ** 2).sum())(lib.ones(3))
    assert not g.requires_grad
    assert not fn(lib.ones(3))[0].requires_grad
    return r, c.grad, x.grad, g


def test_vjp_fn_is_differentiable_in_its_cotangent_like_torch_func() -> None:
    for mine, ref in zip(_cotangent_grads(ember), _cotangent_grads(torch)):
        np.testing.assert_allclose(mine.detach().numpy(), ref.detach().numpy(), rtol=1e-6,
                                   atol=1e-6)


def test_detach_inside_vmap_stops_an_outer_jvp_like_torch_func() -> None:
    x = X.copy()
    got = ember.func.jvp(ember.func.vmap(_detached), (ember.tensor(x),),
                         (ember.ones(3, 2),))[1]
    want = torch.func.jvp(torch.func.vmap(_detached), (torch.tensor(x),),
                          (torch.ones(3, 2, dtype=torch.float64),))[1]
    np.testing.assert_allclose(got.numpy(), want.numpy(), rtol=1e-12)


def test_detach_in_place_inside_vmap_stops_an_outer_grad_as_a_loop_does() -> None:
    # (torch.func refuses detach_ there: its batched tensors are views)
    got = ember.func.grad(lambda z: ember.func.vmap(_detach_in_place)(z).sum())(ember.tensor(X))
    x = torch.tensor(X, requires_grad=True)
    sum(_detach_in_place(r).sum() for r in x).backward()
    np.testing.assert_allclose(got.numpy(), x.grad.numpy(), rtol=1e-12)


def _data_assign(make_b: Callable, make_value: Callable) -> Callable:
    def f(r):
        b = make_b(r)
        b.data = make_value(r)
        return b * r
    return f


@pytest.mark.parametrize("lib", [ember, torch])
def test_data_assignment_with_a_batched_tensor_inside_vmap_is_refused_like_torch_func(lib):
    # (it swapped one sample's memory past the batch: grad gave 36 r**3, a loop 24 r**3)
    x, w = lib.tensor(X.copy()), lib.tensor(X[0].copy())
    for make_b, make_value in [(lambda r: r.clone(), lambda r: r * 3),
                               (lambda r: w.clone(), lambda r: r * 3),
                               (lambda r: r.clone(), lambda r: w * 3)]:
        mapped = lib.func.vmap(_data_assign(make_b, make_value))
        for run in (mapped, lib.func.grad(lambda z, m=mapped: m(z).pow(2).sum())):
            with pytest.raises(RuntimeError, match="`.data`" if lib is torch else
                               r"vmap: `\.data =` with a batched tensor"):
                run(x)
    # neither batched: allowed
    got = lib.func.vmap(_data_assign(lambda r: w.clone(), lambda r: w * 3))(x)
    np.testing.assert_allclose(got.numpy(), 3 * X[0] * X)


def test_data_assignment_in_vmap_refuses_with_a_grad_error_and_the_copy_hint_works():
    with pytest.raises(ember.errors.GradError, match=r"b\.copy_\(value\)"):
        ember.func.vmap(_data_assign(lambda r: r.clone(), lambda r: r * 3))(ember.tensor(X))

    def copied(lib):
        def f(r):
            b = r.clone()
            b.copy_(r * 3)
            return b * r
        return lib.func.grad(lambda z: lib.func.vmap(f)(z).pow(2).sum())(lib.tensor(X.copy()))
    np.testing.assert_allclose(copied(ember).numpy(), copied(torch).numpy(), rtol=1e-12)


def test_data_read_inside_vmap_stops_an_outer_grad_as_a_loop_does():
    # (.data is detach(): the outer tape stops there too, as in a torch loop)
    def f(r):
        return r.data * r

    got = ember.func.grad(lambda z: ember.func.vmap(f)(z).pow(2).sum())(ember.tensor(X))
    x = torch.tensor(X, requires_grad=True)
    torch.stack([f(r) for r in x]).pow(2).sum().backward()
    np.testing.assert_allclose(got.numpy(), x.grad.numpy(), rtol=1e-12)


def _scaled_in_place(w, then_sin: bool):
    def f(r):
        b = r.clone()
        b.mul_(w)  # (the batched mul saves b's batch for w's gradient; the next write moves it)
        if then_sin:
            b.sin_()
        else:
            b.mul_(w)
        return b * r
    return f


@pytest.mark.parametrize("then_sin", [False, True])
@pytest.mark.parametrize("nested", [False, True])
def test_in_place_ops_inside_vmap_with_a_gradient_from_a_captured_tensor(then_sin, nested):
    # the outer gradient comes from w, captured unbatched: the batched ops saved b's batch,
    # which the next write changed ('modified in place after mul saved it'); review46e
    x = np.stack([X, 2 * X]) if nested else X

    def run(lib, kind):
        def loss(w):
            mapped = lib.func.vmap(_scaled_in_place(w, then_sin))
            return (lib.func.vmap(mapped) if nested else mapped)(lib.tensor(x)).pow(2).sum()
        w = lib.tensor(X[0].copy())
        if kind == "grad":
            return lib.func.grad(loss)(w)
        return lib.func.jvp(loss, (w,), (lib.ones_like(w),))[1]

    for kind in ("grad", "jvp"):
        np.testing.assert_allclose(run(ember, kind).numpy(), run(torch, kind).numpy(),
                                   rtol=1e-10, atol=1e-12)
    w = ember.tensor(X[0].copy(), requires_grad=True)
    assert ember.autograd.gradcheck(
        lambda w: ember.func.vmap(_scaled_in_place(w, then_sin))(ember.tensor(X)).pow(2).sum(),
        (w,))


def test_in_place_copy_a_per_sample_grad_saves_keeps_the_outer_gradient():
    # sin_ saves its input: under vmap(grad) that copy was detached below, so an outer grad
    # through the per-sample gradients missed it (with the captured w of the test above)
    def run(lib):
        def per_sample(w):
            return lib.func.vmap(lib.func.grad(
                lambda r: _scaled_in_place(w, True)(r).pow(2).sum()))(lib.tensor(X))
        return lib.func.grad(lambda w: per_sample(w).pow(2).sum())(lib.tensor(X[0].copy()))

    np.testing.assert_allclose(run(ember).numpy(), run(torch).numpy(), rtol=1e-10)


def test_in_place_write_through_a_view_made_before_its_base_was_written():
    # the view v is stale when sin_ runs (b.mul_(3) wrote its base since): its own physical
    # tensor took the stale history, and the gradient lost the factor 3 (review46g)
    def f(r):
        b = r.clone()
        v = b[1:]
        b.mul_(3)
        v.sin_()
        return b

    def run(lib):
        x = lib.tensor(X.copy(), requires_grad=True)
        lib.func.vmap(f)(x).sum().backward()
        return x.grad

    np.testing.assert_allclose(run(ember).numpy(), run(torch).numpy(), rtol=1e-12)


def _vjp_fns():
    xn = np.random.default_rng(3).standard_normal(3)
    return [lib.func.vjp(lambda x: x.sin() * x, lib.tensor(xn))[1] for lib in (torch, ember)]


@pytest.mark.parametrize("depth", [1, 2])
def test_vjp_fn_under_vmap_is_differentiable_in_its_cotangents(depth):
    # the logical cotangents need no grad; their physical batch does (was: zeros)
    cn = np.random.default_rng(4).standard_normal((2, 5, 3)[2 - depth:])
    got = []
    for lib, vjp_fn in zip((torch, ember), _vjp_fns()):
        mapped = vjp_fn
        for _ in range(depth):
            mapped = lib.func.vmap(mapped)
        loss = lambda c, m=mapped: m(c)[0].pow(2).sum()  # noqa: E731
        g = lib.func.grad(loss)(lib.tensor(cn)).numpy()
        c = lib.tensor(cn, requires_grad=True)
        loss(c).backward()  # (last: a backward() frees the graph vjp_fn pulls through)
        got.append((g, c.grad.numpy()))
    for e, t in zip(got[1], got[0]):
        np.testing.assert_allclose(e, t, rtol=1e-12)


def test_vjp_fn_is_differentiated_twice():
    # grad(..., inputs) keeps the saved values of the nodes it does not run, as torch's
    # (was: the vjp's forward graph freed by the first grad)
    cn = np.random.default_rng(4).standard_normal(3)
    for lib, vjp_fn in zip((torch, ember), _vjp_fns()):
        loss = lambda c, f=vjp_fn: f(c)[0].pow(2).sum()  # noqa: E731
        a, b = (lib.func.grad(loss)(lib.tensor(cn)).numpy() for _ in range(2))
        np.testing.assert_array_equal(a, b)
    x, c = ember.ones(3, requires_grad=True), ember.ones(3, requires_grad=True)
    y = x.sin()
    ember.autograd.grad((y * c).sum(), c)
    np.testing.assert_allclose(ember.autograd.grad(y.sum(), x)[0].numpy(), np.cos(np.ones(3)))



def _vjp_twice(lib, x_grad, c_grad, through):
    x = lib.tensor([1.0, 2.0], dtype=lib.float64, requires_grad=x_grad)
    out, vjp_fn = lib.func.vjp(lambda t: (t * t).sin(), x)
    c = lib.ones(2, dtype=lib.float64, requires_grad=c_grad)
    (g,) = vjp_fn(c)
    (g if through == "g" else out).sum().backward()
    grads = [t.clone() for t in (x.grad, c.grad) if t is not None]
    (again,) = vjp_fn(lib.full((2,), 2.0, dtype=lib.float64))
    if not x_grad:  # (else the outer graph is freed: torch's second backward raises)
        vjp_fn(c)[0].sum().backward()
        grads.append(c.grad)
    return [t.detach().numpy() for t in (again, *grads)]


@pytest.mark.parametrize("x_grad, c_grad, through", [
    (True, True, "g"), (False, True, "g"), (True, False, "out"), (True, True, "out")])
def test_vjp_fn_runs_again_after_a_plain_backward(x_grad, c_grad, through):
    # (torch's vjp level has a graph of its own, which the outer backward does not free)
    want = _vjp_twice(torch, x_grad, c_grad, through)
    got = _vjp_twice(ember, x_grad, c_grad, through)
    assert len(got) == len(want)
    for a, b in zip(got, want):
        np.testing.assert_allclose(a, b)
