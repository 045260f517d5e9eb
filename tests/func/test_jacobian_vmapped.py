"""``jacrev`` / ``jacfwd`` as one ``vmap``-ed pass (as ``torch.func``): ``jacfwd``'s
``randomness`` (refused by default, one draw for all columns with "same"), ``jacrev``'s
``chunk_size`` checked, and a custom Function batched by its vmap rule in an outer vmap."""

from __future__ import annotations

import numpy as np
import pytest
import torch
import torch.func as tf

import ember
import ember.func as ef

LIBS = [(torch, tf), (ember, ef)]


def _np(t):
    return np.asarray(t.detach().numpy())


@pytest.mark.parametrize("lib, fn", LIBS)
def test_jacfwd_refuses_random_ops_by_default(lib, fn):
    x = lib.ones(3, dtype=lib.float64)
    with pytest.raises(RuntimeError, match="random"):
        fn.jacfwd(lambda x: x * lib.rand(3, dtype=lib.float64))(x)


@pytest.mark.parametrize("lib, fn", LIBS)
def test_jacfwd_randomness_same_is_one_draw_for_all_columns(lib, fn):
    x = lib.ones(3, dtype=lib.float64)
    lib.manual_seed(5)
    jac = fn.jacfwd(lambda x: x * lib.rand(3, dtype=lib.float64), randomness="same")(x)
    lib.manual_seed(5)
    r = lib.rand(3, dtype=lib.float64)
    np.testing.assert_array_equal(_np(jac), np.diag(_np(r)))


@pytest.mark.parametrize("lib, fn", LIBS)
def test_jacfwd_randomness_different_draws_per_column_aux_from_the_first(lib, fn):
    x = lib.ones(4, dtype=lib.float64)
    f = fn.jacfwd(lambda x: (x.sum() * lib.rand((), dtype=lib.float64), x * 2), has_aux=True,
                  randomness="different")
    jac, aux = f(x)
    assert len(set(_np(jac).tolist())) == 4
    np.testing.assert_array_equal(_np(aux), np.full(4, 2.0))


def test_jacrev_chunk_size_is_checked_and_gives_the_same_values_as_torch():
    a = np.random.default_rng(0).standard_normal((5, 5))
    for chunk in (None, 1, 2, 7):
        mine = ef.jacrev(lambda x: (ember.tensor(a) @ x).tanh() * x, chunk_size=chunk)(
            ember.ones(5, dtype=ember.float64))
        ref = tf.jacrev(lambda x: (torch.tensor(a) @ x).tanh() * x, chunk_size=chunk)(
            torch.ones(5, dtype=torch.float64))
        np.testing.assert_allclose(_np(mine), _np(ref), rtol=1e-12, atol=1e-12)
    for lib, fn in LIBS:
        for bad in (0, -1):
            with pytest.raises(ValueError, match="chunk_size"):
                fn.jacrev(lib.sin, chunk_size=bad)(lib.ones(2))


class NumpyCube(ember.autograd.Function):
    """x ** 3 in NumPy, batched by its vmap rule; backward through Ember ops."""

    @staticmethod
    def forward(ctx, x):
        ctx.save_for_backward(x)
        return ember.from_numpy(x.detach().numpy() ** 3)

    @staticmethod
    def backward(ctx, g):
        (x,) = ctx.saved_tensors
        return NumpyCube.apply(x) / x * 3 * g

    @staticmethod
    def vmap(info, in_dims, x):
        return NumpyCube.apply(x), in_dims[0]


def test_vmap_of_vmap_of_vjp_fn_through_a_function_rule_equals_torch():
    xs = ember.tensor(np.random.default_rng(1).standard_normal((4, 3)) + 2.0)
    eye = ember.eye(3, dtype=ember.float64) * ember.arange(1.0, 4.0, dtype=ember.float64)

    def rows(x):
        _, vjp_fn = ef.vjp(NumpyCube.apply, x)
        return ef.vmap(vjp_fn)(eye)[0]
    te = torch.from_numpy(_np(eye))
    want = torch.vmap(lambda x: torch.vmap(tf.vjp(lambda t: t ** 3, x)[1])(te)[0])(
        torch.from_numpy(_np(xs)))
    np.testing.assert_allclose(_np(ef.vmap(rows)(xs)), _np(want), rtol=1e-12)
    got = ef.vmap(ef.jacrev(NumpyCube.apply))(xs)
    want = torch.vmap(tf.jacrev(lambda t: t ** 3))(torch.from_numpy(_np(xs)))
    np.testing.assert_allclose(_np(got), _np(want), rtol=1e-12)


class CountedSin(ember.autograd.Function):
    """sin, counting its backward calls."""

    calls = 0

    @staticmethod
    def forward(ctx, x):
        ctx.save_for_backward(x)
        return x.sin()

    @staticmethod
    def backward(ctx, g):
        CountedSin.calls += 1
        (x,) = ctx.saved_tensors
        return g * x.cos()


def test_autograd_functional_vectorize_is_one_vmapped_backward_with_torchs_values():
    a = np.random.default_rng(2).standard_normal((4, 4))

    def f(lib, sin):
        return lambda x, y: (sin(lib.tensor(a) @ x) * y.sum(), x.prod() * y)
    xs = [np.random.default_rng(s).standard_normal(4) for s in (3, 4)]
    CountedSin.calls = 0
    mine = ember.autograd.functional.jacobian(f(ember, CountedSin.apply),
                                              tuple(map(ember.tensor, xs)), vectorize=True)
    assert CountedSin.calls == 1  # one batched pass (was one per output element: 4)
    ref = torch.autograd.functional.jacobian(f(torch, torch.sin), tuple(map(torch.tensor, xs)),
                                             vectorize=True)
    for m_row, r_row in zip(mine, ref):
        for m, r in zip(m_row, r_row):
            np.testing.assert_allclose(_np(m), _np(r), rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize("lib", [torch, ember])
def test_autograd_functional_vectorize_with_create_graph_differentiates_again(lib):
    x = lib.tensor([0.3, -0.7, 1.1], dtype=lib.float64, requires_grad=True)
    h = lib.autograd.functional.hessian(lambda z: (z.sin() * z.sum()).sum(), x,
                                        create_graph=True, vectorize=True)
    (g,) = lib.autograd.grad(h.sum(), x)
    xd = x.detach().numpy()

    def hess(v):  # of sum(sin(v)) * sum(v)
        return np.diag(-np.sin(v) * v.sum()) + np.cos(v)[:, None] + np.cos(v)[None, :]
    np.testing.assert_allclose(_np(h), hess(xd), rtol=1e-12)
    eps = 1e-6  # the gradient of sum(H) against central differences
    fd = [(hess(xd + eps * e).sum() - hess(xd - eps * e).sum()) / (2 * eps) for e in np.eye(3)]
    np.testing.assert_allclose(_np(g), fd, rtol=1e-6)


class NumpySin(ember.autograd.Function):
    """sin with NumPy in forward, backward and jvp, and no vmap rule."""

    @staticmethod
    def forward(ctx, x):
        ctx.save_for_backward(x)
        return ember.from_numpy(np.sin(x.detach().numpy()))

    @staticmethod
    def backward(ctx, g):
        (x,) = ctx.saved_tensors
        return ember.from_numpy(g.detach().numpy() * np.cos(x.detach().numpy()))

    @staticmethod
    def jvp(ctx, t):
        (x,) = ctx.saved_tensors
        return ember.from_numpy(t.detach().numpy() * np.cos(x.detach().numpy()))


@pytest.mark.parametrize("name", ["jacrev", "jacfwd"])
def test_a_function_reading_its_values_is_differentiated_one_row_at_a_time(name):
    # the vmap-ed pass cannot read a batched tangent / cotangent as NumPy: rows one at a time
    x = np.array([0.1, 0.5, 0.9])
    got = getattr(ef, name)(lambda z: NumpySin.apply(z) * 2)(ember.tensor(x))
    want = getattr(tf, name)(lambda z: torch.sin(z) * 2)(torch.tensor(x))
    np.testing.assert_allclose(_np(got), _np(want), rtol=1e-12)
    with pytest.raises(RuntimeError, match="random"):  # still refused: not a value read
        ef.jacfwd(lambda z: NumpySin.apply(z) * ember.rand(3, dtype=ember.float64))(
            ember.tensor(x))


def test_autograd_functional_vectorize_loops_over_a_function_reading_its_values():
    x = np.array([0.1, 0.5, 0.9])
    got = ember.autograd.functional.jacobian(NumpySin.apply, ember.tensor(x), vectorize=True)
    np.testing.assert_allclose(_np(got), np.diag(np.cos(x)), rtol=1e-12)


@pytest.mark.parametrize("kind", ["GRU", "LSTM", "RNN"])
@pytest.mark.parametrize("how", ["jacrev", "vectorize"])
def test_jacobian_of_recurrent_layers_equals_torch(kind, how):
    # the vmap-ed backward saw the saved states broadcast (not C-contiguous): numba refused
    torch.manual_seed(0)
    tm = getattr(torch.nn, kind)(2, 3, num_layers=2, bidirectional=True).double()
    em = getattr(ember.nn, kind)(2, 3, num_layers=2, bidirectional=True).double()
    em.load_state_dict({k: ember.tensor(_np(v)) for k, v in tm.state_dict().items()})
    x = np.random.default_rng(1).standard_normal(8)
    jacs = []
    for lib, fn, m in ((torch, tf, tm), (ember, ef, em)):
        f = lambda z, m=m: m(z.view(4, 1, 2))[0].reshape(-1)  # noqa: E731
        xt = lib.tensor(x)
        jac = (fn.jacrev(f)(xt) if how == "jacrev"
               else lib.autograd.functional.jacobian(f, xt, vectorize=True))
        jacs.append(_np(jac))
    np.testing.assert_allclose(jacs[1], jacs[0], rtol=1e-10, atol=1e-12)
