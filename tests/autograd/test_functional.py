"""ember.autograd.functional against torch.autograd.functional: the same functions, inputs and
flags give the same values, structures and errors."""

import numpy as np
import pytest
import torch
import torch.autograd.functional as TF

import ember
import ember.autograd.functional as EF

RNG = np.random.default_rng(0)


def pair(*shape):
    a = RNG.standard_normal(shape)
    return ember.tensor(a), torch.tensor(a)


def same(e, t, tol=1e-10):
    """Equal values and equal nesting (tensor vs tuple at every level)."""
    if isinstance(t, torch.Tensor):
        assert isinstance(e, ember.Tensor), type(e)
        assert tuple(e.shape) == tuple(t.shape)
        np.testing.assert_allclose(e.detach().numpy(), t.detach().numpy(), rtol=tol, atol=tol)
        return
    assert isinstance(e, tuple) and len(e) == len(t), (type(e), e)
    for a, b in zip(e, t):
        same(a, b, tol)


def cubic(lib):
    return lambda x: (x ** 3).sum()


def mix(lib):
    return lambda x, y: ((x * y.sin()).exp(), (x ** 2).sum() * y)


def reducer(lib):
    return lambda x: x.exp().sum(1)


def both(fn, e_args, t_args, **kw):
    e, t = fn[0](*e_args, **kw), fn[1](*t_args, **kw)
    same(e, t)
    return e, t


X, TX = pair(3, 2)
Y, TY = pair(3, 2)
S, TS = pair(3)


@pytest.mark.parametrize("create_graph", [False, True])
def test_vjp_jvp_single_and_tuple(create_graph):
    v, tv = pair(3)
    both((EF.vjp, TF.vjp), (reducer(ember), X, v), (reducer(torch), TX, tv),
         create_graph=create_graph)
    w, tw = pair(3, 2)
    both((EF.jvp, TF.jvp), (reducer(ember), X, w), (reducer(torch), TX, tw),
         create_graph=create_graph)
    vs = (pair(3, 2), pair(3, 2))
    both((EF.vjp, TF.vjp), (mix(ember), (X, Y), (vs[0][0], vs[1][0] * 0 + 1)),
         (mix(torch), (TX, TY), (vs[0][1], vs[1][1] * 0 + 1)), create_graph=create_graph)
    both((EF.jvp, TF.jvp), (mix(ember), (X, Y), (vs[0][0], vs[1][0])),
         (mix(torch), (TX, TY), (vs[0][1], vs[1][1])), create_graph=create_graph)


@pytest.mark.parametrize("vectorize", [False, True])
@pytest.mark.parametrize("strategy", ["reverse-mode", "forward-mode"])
def test_jacobian_structures(vectorize, strategy):
    kw = {"vectorize": vectorize, "strategy": strategy}
    if strategy == "forward-mode" and not vectorize:
        # torch only builds forward-mode Jacobians vectorised; Ember builds both the same way
        kw_t = {**kw, "vectorize": True}
    else:
        kw_t = kw
    for ef, tf, ea, ta in [(reducer(ember), reducer(torch), X, TX),
                           (mix(ember), mix(torch), (X, Y), (TX, TY)),
                           (lambda x: (x.sum(), x * 2), lambda x: (x.sum(), x * 2), S, TS),
                           (lambda x, y: x @ y.T, lambda x, y: x @ y.T, [X, Y], [TX, TY])]:
        same(EF.jacobian(ef, ea, **kw), TF.jacobian(tf, tuple(ta) if isinstance(ta, list)
                                                     else ta, **kw_t))


@pytest.mark.parametrize("strategy", ["reverse-mode", "forward-mode"])
def test_hessian(strategy):
    kw = {"outer_jacobian_strategy": strategy, "vectorize": strategy == "forward-mode"}
    same(EF.hessian(cubic(ember), S, **kw), TF.hessian(cubic(torch), TS, **kw))
    f = lambda x, y: (x.sin() * y ** 2).sum()  # noqa: E731
    same(EF.hessian(f, (X, Y), **kw), TF.hessian(f, (TX, TY), **kw))


@pytest.mark.parametrize("create_graph", [False, True])
def test_vhp_hvp(create_graph):
    f = lambda x, y: (x.sin() * y ** 2).sum()  # noqa: E731
    v = (pair(3, 2), pair(3, 2))
    for ef, tf in [(EF.vhp, TF.vhp), (EF.hvp, TF.hvp)]:
        both((ef, tf), (f, (X, Y), (v[0][0], v[1][0])), (f, (TX, TY), (v[0][1], v[1][1])),
             create_graph=create_graph)
        both((ef, tf), (cubic(ember), S, S), (cubic(torch), TS, TS), create_graph=create_graph)


def test_create_graph_keeps_the_graph_to_the_inputs():
    x = ember.tensor([1.0, 2.0], requires_grad=True)
    tx = torch.tensor([1.0, 2.0], requires_grad=True)
    _, g = EF.vjp(lambda z: (z ** 3).sum(), x, create_graph=True)
    _, tg = TF.vjp(lambda z: (z ** 3).sum(), tx, create_graph=True)
    assert g.requires_grad
    (d,) = ember.autograd.grad(g.sum(), x)
    (td,) = torch.autograd.grad(tg.sum(), tx)
    same(d, td)
    out, g = EF.vjp(lambda z: (z ** 3).sum(), x)
    assert not g.requires_grad and not out.requires_grad


@pytest.mark.parametrize("name", ["vjp", "jvp", "vhp", "hvp"])
def test_create_graph_keeps_the_graph_to_v(name):
    # torch keeps v's graph too (a view, not a detached copy) when create_graph=True
    f = (lambda z: z ** 3) if name in ("vjp", "jvp") else (lambda z: (z ** 3).sum())
    grads = []
    for lib, fn in ((ember, getattr(EF, name)), (torch, getattr(TF, name))):
        x = lib.tensor([0.5, -1.5], dtype=lib.float64)
        v = lib.tensor([1.0, 2.0], dtype=lib.float64, requires_grad=True)
        fn(f, x, v, create_graph=True)[1].sum().backward()
        grads.append(v.grad)
    same(*grads)


def test_captured_tensors_are_constants():
    w, tw = pair(3)
    same(EF.jacobian(lambda x: x * w, w), TF.jacobian(lambda x: x * tw, tw))


def test_independent_inputs_give_zeros_or_strict_errors():
    f = lambda x, y: x * 2  # noqa: E731
    same(EF.jacobian(f, (S, S)), TF.jacobian(f, (TS, TS)))
    same(EF.vjp(f, (S, S), S), TF.vjp(f, (TS, TS), TS))
    same(EF.jvp(f, (S, S), (S, S)), TF.jvp(f, (TS, TS), (TS, TS)))
    for call in (lambda m, s: m.jacobian(f, (s, s), strict=True),
                 lambda m, s: m.vjp(f, (s, s), s, strict=True),
                 lambda m, s: m.jvp(f, (s, s), (s, s), strict=True),
                 lambda m, s: m.hessian(lambda x: (x * 2).sum(), s, strict=True),
                 lambda m, s: m.jacobian(lambda x: x.detach(), s, strict=True)):
        with pytest.raises(RuntimeError):
            call(TF, TS)
        with pytest.raises(RuntimeError, match="strict|require grad"):
            call(EF, S)


def test_linear_function_hessian_is_zero():
    f = lambda x: (x * 3).sum()  # noqa: E731
    same(EF.hessian(f, S), TF.hessian(f, TS))
    same(EF.hvp(f, S, S), TF.hvp(f, TS, TS))


def test_v_may_be_left_out_for_one_element():
    one, tone = pair(1)
    same(EF.vjp(lambda x: x.sum(), X), TF.vjp(lambda x: x.sum(), TX))
    same(EF.jvp(lambda x: x * 3, one), TF.jvp(lambda x: x * 3, tone))
    same(EF.hvp(lambda x: (x ** 4).sum(), one), TF.hvp(lambda x: (x ** 4).sum(), tone))


@pytest.mark.parametrize("call, match", [
    (lambda m, x: m.vjp(lambda z: z * 2, x), "v can be left out only"),
    (lambda m, x: m.jvp(lambda z: z * 2, x), "v can be left out only"),
    (lambda m, x: m.vjp(lambda z: z * 2, x, x[:2]), r"shape \(2,\)"),
    (lambda m, x: m.jvp(lambda z, w: z * w, (x, x), (x,)), "1 tensors but there are 2"),
    (lambda m, x: m.hessian(lambda z: z * 2, x), "single element"),
    (lambda m, x: m.hvp(lambda z: (z.sum(), z.sum()), x, x), "single Tensor"),
    (lambda m, x: m.jacobian(lambda z: z, x, strict=True, vectorize=True), "together"),
    (lambda m, x: m.jacobian(lambda z: z, x, strategy="forward-mode", strict=True), "together"),
])
def test_errors_match_torch(call, match):
    with pytest.raises(RuntimeError):
        call(TF, TS)
    with pytest.raises(RuntimeError, match=match):
        call(EF, S)


def test_bad_arguments():
    with pytest.raises(TypeError, match="jacobian: inputs must be a Tensor"):
        EF.jacobian(lambda x: x, [S, 3.0])
    with pytest.raises(TypeError, match="the outputs of func"):
        EF.vjp(lambda x: 3.0, S)
    with pytest.raises(ValueError, match="strategy must be one of"):
        EF.jacobian(lambda x: x, S, strategy="sideways")
    with pytest.raises(NotImplementedError, match="create_graph"):
        EF.jacobian(lambda x: x, S, create_graph=True, strategy="forward-mode")


def test_forward_mode_jacobian_of_a_model_matches_reverse():
    model = ember.nn.Sequential(ember.nn.Linear(3, 5), ember.nn.Tanh(), ember.nn.Linear(5, 7))
    model = model.double()
    x = ember.tensor(RNG.standard_normal((2, 3)))
    fwd = EF.jacobian(model, x, strategy="forward-mode")
    rev = EF.jacobian(model, x)
    assert tuple(fwd.shape) == (2, 7, 2, 3)
    np.testing.assert_allclose(fwd.numpy(), rev.numpy(), atol=1e-12)
