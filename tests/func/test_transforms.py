"""ember.func transforms against torch.func on the same functions, and their semantics:
argnums, pytrees, has_aux, composition, levels, errors."""

from __future__ import annotations

import importlib

import numpy as np
import pytest
import torch
import torch.func as tf

import ember
import ember.func as ef

prim_module = importlib.import_module("ember.ops.primitive")


def _pair(*shape: int, seed: int = 0) -> tuple[ember.Tensor, torch.Tensor]:
    a = np.random.default_rng(seed + sum(shape)).standard_normal(shape)
    return ember.from_numpy(a.copy()), torch.from_numpy(a.copy())


def close(mine, ref, tol: float = 1e-10) -> None:
    """Same structure and values (pytrees of ember vs torch tensors)."""
    if isinstance(ref, torch.Tensor):
        assert isinstance(mine, ember.Tensor), type(mine)
        assert tuple(mine.shape) == tuple(ref.shape), (mine.shape, ref.shape)
        np.testing.assert_allclose(np.asarray(mine.detach()._data), ref.detach().numpy(),
                                   rtol=tol, atol=tol)
    elif isinstance(ref, dict):
        assert isinstance(mine, dict) and list(mine) == list(ref), (mine, ref)
        for k in ref:
            close(mine[k], ref[k], tol)
    elif isinstance(ref, (tuple, list)):
        assert type(mine) is type(ref) and len(mine) == len(ref), (type(mine), type(ref))
        for m, r in zip(mine, ref):
            close(m, r, tol)
    else:
        assert mine == ref


def f2(lib):
    return lambda x, y: (lib.sin(x) * y.exp() + x * x * y).sum()


# -- grad ------------------------------------------------------------------------------------
@pytest.mark.parametrize("argnums", [0, 1, (0, 1), (1,), -1, True, (False, True)])
def test_grad_argnums(argnums) -> None:
    (ex, tx), (ey, ty) = _pair(3, 2), _pair(3, 2, seed=1)
    close(ef.grad(f2(ember), argnums)(ex, ey), tf.grad(f2(torch), argnums)(tx, ty))


def test_grad_pytree_input_and_has_aux() -> None:
    (ew, tw), (eb, tb) = _pair(3, 4), _pair(4)
    (ex, tx) = _pair(2, 3, seed=5)

    def loss(lib):
        def f(params, x):
            h = x @ params["w"] + params["b"][0]
            return (h ** 2).mean(), {"h": h}
        return f

    eg, eaux = ef.grad(loss(ember), has_aux=True)({"w": ew, "b": [eb]}, ex)
    tg, taux = tf.grad(loss(torch), has_aux=True)({"w": tw, "b": [tb]}, tx)
    close(eg, tg)
    close(eaux, taux)
    assert not eaux["h"].requires_grad and not eg["w"].requires_grad


def test_value_and_grad_orders() -> None:
    (ex, tx), (ey, ty) = _pair(4), _pair(4, seed=2)
    tg, tv = tf.grad_and_value(f2(torch))(tx, ty)
    eg, ev = ef.grad_and_value(f2(ember))(ex, ey)
    close((eg, ev), (tg, tv))
    ev2, eg2 = ef.value_and_grad(f2(ember))(ex, ey)
    close((ev2, eg2), (tv, tg))
    (v, aux), g = ef.value_and_grad(lambda x: ((x * x).sum(), x + 1), has_aux=True)(ex)
    close((v, aux, g), ((tx * tx).sum(), tx + 1, 2 * tx))


def test_grad_of_grad_and_third_order() -> None:
    ex, tx = _pair(5)

    def f(lib):
        return lambda x: (lib.tanh(x) * x ** 3).sum()

    def g2(mod, lib):
        return mod.grad(lambda x: mod.grad(f(lib))(x).sum())

    close(g2(ef, ember)(ex), g2(tf, torch)(tx))
    close(ef.grad(lambda x: g2(ef, ember)(x).sum())(ex),
          tf.grad(lambda x: g2(tf, torch)(x).sum())(tx))


def test_grad_respects_closures_and_outer_tape() -> None:
    ex, tx = _pair(3)
    ew = ember.tensor([1.0, 2.0, 3.0], dtype=ember.float64, requires_grad=True)
    tw = torch.tensor([1.0, 2.0, 3.0], dtype=torch.float64, requires_grad=True)
    eg = ef.grad(lambda x: (x * x * ew).sum())(ex)
    tg = tf.grad(lambda x: (x * x * tw).sum())(tx)
    close(eg, tg)
    assert eg.requires_grad  # differentiable with respect to the closed-over weight
    eg.sum().backward()
    tg.sum().backward()
    close(ew.grad, tw.grad)


def test_grad_ignores_outer_no_grad_and_allows_inplace_on_inputs() -> None:
    ex, tx = _pair(3)

    def f(x):
        x = x * 1
        x.mul_(2)
        return (x * x).sum()

    with ember.no_grad():
        close(ef.grad(f)(ex), tf.grad(f)(tx))

    def g(x):
        x.add_(1.0)  # in place on the function's own input (PyTorch refuses this one)
        return (x * x).sum()

    x0 = ex.clone()
    close(ef.grad(g)(x0), 2 * (tx + 1))
    close(x0, tx + 1)  # the write reached the caller's tensor, as an in-place op does


@pytest.mark.parametrize("how", ["mul_", "setitem", "embedding_max_norm"])
def test_grad_through_an_input_written_under_no_grad(how: str) -> None:
    # the write is invisible to autograd, so the gradient still reaches the input (it was
    # all zeros: Embedding(max_norm) under functional_call trained nothing)
    w = np.random.default_rng(0).standard_normal((5, 3)) * 2
    idx = [[1, 2, 2], [4, 1, 0]]

    def make(lib, F):
        def f(x):
            if how == "embedding_max_norm":
                return (F.embedding(lib.tensor(idx), x, max_norm=1.0) ** 3).sum()
            with lib.no_grad():
                if how == "mul_":
                    x.mul_(0.5)
                else:
                    x[lib.tensor([0, 3])] = x[lib.tensor([0, 3])] * 0.2
            return (x * x * x).sum()
        return f

    ex, tx = ember.tensor(w), torch.tensor(w)
    close(ef.grad(make(ember, ember.nn.functional))(ex),
          tf.grad(make(torch, torch.nn.functional))(tx))
    close(ex, tx)  # the write (the renorm) reached the caller's tensor in both


def test_grad_unused_input_is_zero() -> None:
    (ex, tx), (ey, ty) = _pair(2), _pair(3)
    close(ef.grad(lambda x, y: (x * 2).sum(), argnums=(0, 1))(ex, ey),
          tf.grad(lambda x, y: (x * 2).sum(), argnums=(0, 1))(tx, ty))
    close(ef.grad(lambda x: ember.ones(()).double())(ex),
          tf.grad(lambda x: torch.ones(()).double())(tx))


def test_grad_errors() -> None:
    x = ember.randn(3)
    with pytest.raises(ember.GradError, match="scalar"):
        ef.grad(lambda x: x * 2)(x)
    with pytest.raises(ember.DTypeError, match="int64"):
        ef.grad(lambda x: x.sum())(ember.arange(3))
    with pytest.raises(ValueError, match="out of range"):
        ef.grad(lambda x: x.sum(), argnums=2)(x)
    with pytest.raises(ember.GradError, match="pair"):
        ef.grad(lambda x: x.sum(), has_aux=True)(x)
    with pytest.raises(TypeError, match="str"):
        ef.grad(lambda x: x.sum())("nope")
    for bad in (0.5, [0], (0, "1")):  # (torch: "argnums must be int or Tuple[int, ...]")
        with pytest.raises(ember.errors.ArgumentTypeError, match="argnums must be an int or"):
            ef.grad(lambda x, y: (x * y).sum(), argnums=bad)(x, x)


# -- vjp -------------------------------------------------------------------------------------
def test_vjp_pytree_output_many_calls_and_aux() -> None:
    (ex, tx), (ey, ty) = _pair(2, 3), _pair(3, seed=3)

    def f(lib):
        return lambda x, y: ({"a": x * y, "b": (lib.cos(x).sum(1),)}, x.sum())

    eo, efn, eaux = ef.vjp(f(ember), ex, ey, has_aux=True)
    to, tfn, taux = tf.vjp(f(torch), tx, ty, has_aux=True)
    close((eo, eaux), (to, taux))
    for seed in range(2):
        (eu, tu), (ev, tv) = _pair(2, 3, seed=10 + seed), _pair(2, seed=20 + seed)
        close(efn({"a": eu, "b": (ev,)}), tfn({"a": tu, "b": (tv,)}))
    with pytest.raises(ember.ShapeError, match="cotangent 0 has shape"):
        efn({"a": ember.ones(3), "b": (ember.ones(2),)})
    with pytest.raises(ember.GradError, match="structure"):
        efn((ember.ones(2, 3),))


def test_vjp_none_cotangent_of_an_integer_output_says_it_is_ignored() -> None:
    # (torch refuses integer outputs at vjp; Ember ignores their cotangents, and says so)
    x = ember.ones(3, dtype=ember.float64)
    _, fn = ef.vjp(lambda x: (x.sin(), x.long()), x)
    with pytest.raises(ember.GradError, match="output 1 is int64.*zeros_like"):
        fn((ember.ones(3, dtype=ember.float64), None))
    (g,) = fn((ember.ones(3, dtype=ember.float64), ember.zeros(3, dtype=ember.int64)))
    np.testing.assert_allclose(g.numpy(), np.cos(np.ones(3)))


def test_vjp_cotangent_of_a_wrong_type_is_named_with_its_article() -> None:
    _, fn = ef.vjp(lambda x: x.sin(), ember.ones(3, dtype=ember.float64))
    with pytest.raises(ember.GradError, match="cotangent 0 is an int, expected a tensor"):
        fn(1)
    with pytest.raises(ember.GradError, match="cotangent 0 is a float, expected a tensor"):
        fn(1.0)


# -- jvp -------------------------------------------------------------------------------------
def test_jvp_against_torch_pytrees_and_aux() -> None:
    (ex, tx), (ey, ty) = _pair(2, 3), _pair(3, seed=3)
    (eu, tu), (ev, tv) = _pair(2, 3, seed=4), _pair(3, seed=5)

    def f(lib):
        return lambda p: ({"a": lib.tanh(p["x"]) * p["y"], "s": (p["x"] ** 2).sum()}, p["y"] * 2)

    eo, ed, eaux = ef.jvp(f(ember), ({"x": ex, "y": ey},), ({"x": eu, "y": ev},), has_aux=True)
    to, td, taux = tf.jvp(f(torch), ({"x": tx, "y": ty},), ({"x": tu, "y": tv},), has_aux=True)
    close((eo, ed, eaux), (to, td, taux))


def test_jvp_records_nothing(monkeypatch) -> None:
    """True forward mode: no tape node is recorded and nothing is saved for backward."""
    recorded = []
    real = prim_module._record
    monkeypatch.setattr(prim_module, "_record", lambda *a: recorded.append(a) or real(*a))
    x, v = ember.randn(4, 3), ember.randn(4, 3)
    w = ember.randn(3, 5)
    out, tangent = ef.jvp(lambda x: ember.softmax(ember.tanh(x @ w).exp(), -1).sum(0), (x,),
                          (v,))
    assert recorded == [] and out._node is None and tangent._node is None
    net = ember.nn.Sequential(ember.nn.Linear(3, 4), ember.nn.GELU(), ember.nn.Linear(4, 2))
    with ember.no_grad():  # parameters require grad; no_grad keeps even them off the tape
        ef.jvp(net, (x,), (v,))
    assert recorded == []
    ef.grad(lambda x: (x * x).sum())(x)
    assert recorded  # the patch does see recording


def test_jvp_nested_levels_do_not_mix() -> None:
    """d/dx [x * d/dy (x + y)] at any x is 1; mixing the levels' tangents gives 2."""
    x = ember.tensor(3.0, dtype=ember.float64)

    def inner(x):
        return ef.jvp(lambda y: x + y, (x,), (ember.ones_like(x),))[1]

    _, d = ef.jvp(lambda x: x * inner(x), (x,), (ember.ones_like(x),))
    assert float(d) == 1.0
    # second derivative by jvp of jvp, against torch
    ex, tx = _pair(4)
    ev, tv = _pair(4, seed=9)

    def second(mod, lib):
        f = lambda x: lib.sin(x) * x  # noqa: E731
        return lambda x: mod.jvp(lambda x: mod.jvp(f, (x,), (ev if mod is ef else tv,))[1],
                                 (x,), (ev if mod is ef else tv,))
    close(second(ef, ember)(ex), second(tf, torch)(tx))


def test_jvp_of_closure_over_primal() -> None:
    """Only the primal passed in carries the tangent, not the same tensor closed over."""
    ex, tx = _pair(3)
    close(ef.jvp(lambda y: y * ex, (ex,), (ember.ones_like(ex),)),
          tf.jvp(lambda y: y * tx, (tx,), (torch.ones_like(tx),)))


def test_jvp_errors() -> None:
    x = ember.randn(3)
    with pytest.raises(TypeError, match="tuples"):
        ef.jvp(ember.sin, x, ember.ones(3))
    with pytest.raises(ember.ShapeError, match="tangent 0 has shape"):
        ef.jvp(ember.sin, (x,), (ember.ones(2),))
    with pytest.raises(ember.GradError, match="structure"):
        ef.jvp(ember.sin, (x,), ((ember.ones(3),),))


def test_linearize() -> None:
    ex, tx = _pair(3)
    eo, efn = ef.linearize(lambda x: x.sin() * x, ex)
    to, tfn = tf.linearize(lambda x: x.sin() * x, tx)
    close((eo, efn(ember.ones(3, dtype=ember.float64))), (to, tfn(torch.ones(3).double())))


# -- Jacobians and Hessians ------------------------------------------------------------------
def _jf(lib):
    return lambda x, y: {"p": lib.sin(x) @ y, "s": (x * x).sum(), "e": (y.exp(),)}


@pytest.mark.parametrize("name", ["jacrev", "jacfwd"])
@pytest.mark.parametrize("argnums", [0, (0, 1)])
def test_jacobians_against_torch(name, argnums) -> None:
    (ex, tx), (ey, ty) = _pair(2, 3), _pair(3, 2, seed=1)
    close(getattr(ef, name)(_jf(ember), argnums)(ex, ey),
          getattr(tf, name)(_jf(torch), argnums)(tx, ty))


@pytest.mark.parametrize("name", ["jacrev", "jacfwd"])
def test_jacobian_pytree_input_zero_d_empty_and_aux(name) -> None:
    (ea, ta), (eb, tb) = _pair(), _pair(0, 2)
    (ec, tc) = _pair(2, 2)

    def f(lib):
        return lambda d: ((d["a"] * d["c"], d["b"].sum() + d["a"]), d["c"].sum())

    mine = getattr(ef, name)(f(ember), has_aux=True)({"a": ea, "b": eb, "c": ec})
    ref = getattr(tf, name)(f(torch), has_aux=True)({"a": ta, "b": tb, "c": tc})
    close(mine, ref)


def test_hessian_and_compositions() -> None:
    (ex, tx), (ey, ty) = _pair(3), _pair(3, seed=1)

    def f(lib):
        return lambda x, y: (lib.tanh(x) * y * x + x.exp() * y * y).sum()

    close(ef.hessian(f(ember))(ex, ey), tf.hessian(f(torch))(tx, ty))
    close(ef.hessian(f(ember), argnums=(0, 1))(ex, ey),
          tf.hessian(f(torch), argnums=(0, 1))(tx, ty))
    rr = ef.jacrev(ef.jacrev(f(ember)))(ex, ey)
    close(rr, tf.hessian(f(torch))(tx, ty))
    ff = ef.jacfwd(ef.jacfwd(f(ember)))(ex, ey)
    close(ff, tf.hessian(f(torch))(tx, ty))
    # the Jacobian of a vector function's gradient-like map, mixing modes
    close(ef.jacfwd(ef.grad(f(ember), argnums=1))(ex, ey),
          tf.jacfwd(tf.grad(f(torch), argnums=1))(tx, ty))


def test_hvp_forward_over_reverse() -> None:
    (ex, tx), (ey, ty) = _pair(4), _pair(4, seed=2)
    (eu, tu), (ev, tv) = _pair(4, seed=3), _pair(4, seed=4)

    def f(lib):
        return lambda x, y: (lib.sigmoid(x * y) * x.exp() + lib.softmax(x, 0) * y).sum()

    value, hv = ef.hvp(f(ember), (ex, ey), (eu, ev))
    tvalue, thv = torch.autograd.functional.hvp(f(torch), (tx, ty), (tu, tv))
    close((value, hv), (tvalue, thv))
    assert not value.requires_grad and not hv[0].requires_grad


# -- custom Functions in forward mode ---------------------------------------------------------
class Cube(ember.autograd.Function):
    @staticmethod
    def forward(ctx, x, scale):
        ctx.save_for_backward(x)
        ctx.save_for_forward(x)
        ctx.scale = scale
        return x * x * x * scale

    @staticmethod
    def backward(ctx, g):
        (x,) = ctx.saved_tensors
        return 3 * x * x * ctx.scale * g, None

    @staticmethod
    def jvp(ctx, dx, dscale):
        assert dscale is None
        (x,) = ctx.saved_tensors
        return 3 * x * x * ctx.scale * dx


class NoJvp(ember.autograd.Function):
    @staticmethod
    def forward(ctx, x):
        return x * 2

    @staticmethod
    def backward(ctx, g):
        return g * 2


def test_custom_function_jvp_is_used() -> None:
    ex, tx = _pair(3)
    eo, ed = ef.jvp(lambda x: Cube.apply(x, 2.0).sin(), (ex,), (ember.ones_like(ex),))
    to, td = tf.jvp(lambda x: (x ** 3 * 2.0).sin(), (tx,), (torch.ones_like(tx),))
    close((eo, ed), (to, td))
    close(ef.hessian(lambda x: Cube.apply(x, 2.0).sum())(ex),
          tf.hessian(lambda x: (x ** 3 * 2.0).sum())(tx))
    calls = []

    class Spy(Cube):
        @staticmethod
        def jvp(ctx, dx, dscale):
            calls.append(1)
            return Cube.jvp(ctx, dx, dscale)

    ef.jvp(lambda x: Spy.apply(x, 1.0), (ex,), (ex,))
    assert calls == [1]


def test_custom_function_without_jvp_fails_clearly() -> None:
    x = ember.randn(3)
    with pytest.raises(ember.GradError, match=r"NoJvp: forward-mode AD .* no jvp"):
        ef.jvp(NoJvp.apply, (x,), (ember.ones(3),))
    # without a tangent reaching it, forward mode does not need its jvp
    out, d = ef.jvp(lambda y: y + NoJvp.apply(x), (x,), (ember.ones(3),))
    close(d, torch.ones(3))
    # and reverse mode still works
    close(ef.grad(lambda y: NoJvp.apply(y).sum())(x), torch.full((3,), 2.0))


def test_in_place_writes_to_inputs_stay_inside_the_transform() -> None:
    def double_in_place(x):
        return x.mul_(2).sin()

    plain = ember.tensor([0.3, 0.5, 0.7], dtype=ember.float64)
    g = ef.grad(lambda x: double_in_place(x).sum())(plain)
    assert plain.grad_fn is None and not plain.requires_grad and not g.requires_grad
    leaf = ember.tensor([0.3, 0.5, 0.7], dtype=ember.float64, requires_grad=True)
    ef.jacrev(double_in_place)(leaf)
    assert leaf.is_leaf  # its .grad would otherwise never arrive

    x, xt = _pair(3)  # jacfwd: one pass per column, each from the original values
    close(ef.jacfwd(double_in_place)(x), tf.jacfwd(double_in_place)(xt))
    hess = ef.hessian(lambda x: double_in_place(x).sum())(x)  # (torch.func refuses this)
    close(hess, torch.diag(-4 * torch.sin(2 * torch.from_numpy(x.numpy()))))


def test_complex_inputs_in_grad_vjp_jvp_and_refused_by_jacobians_as_in_torch():
    rng = np.random.default_rng(0)
    a, da = (rng.standard_normal((3, 3)) + 1j * rng.standard_normal((3, 3)) for _ in range(2))
    e, t = ember.tensor(a), torch.tensor(a)
    _, ej = ef.jvp(ember.linalg.eigvals, (e,), (ember.tensor(da),))
    _, tj = tf.jvp(torch.linalg.eigvals, (t,), (torch.tensor(da),))
    np.testing.assert_allclose(ej.numpy(), tj.numpy(), atol=1e-12)
    eg = ef.grad(lambda m: ember.linalg.det(m).abs())(e)
    np.testing.assert_allclose(eg.numpy(), tf.grad(lambda m: torch.linalg.det(m).abs())(t),
                               atol=1e-12)
    (ev,) = ef.vjp(ember.linalg.inv, e)[1](ember.tensor(da))
    np.testing.assert_allclose(ev.numpy(), tf.vjp(torch.linalg.inv, t)[1](torch.tensor(da))[0],
                               atol=1e-12)
    for name in ("jacrev", "jacfwd"):
        with pytest.raises(RuntimeError, match="real"):
            getattr(tf, name)(torch.exp)(t)
        with pytest.raises(ember.DTypeError, match=f"{name}: argument 0 is complex128"):
            getattr(ef, name)(ember.exp)(e)
