"""``vmap(vmap(vjp_fn))`` where ``vjp_fn`` pulls through a custom ``autograd.Function``
batched by its own ``vmap`` rule under the outer vmap (its backward met gradients batched by
the inner one): computed, as ``torch.func`` does, checked against torch's values (the same
Functions, NumPy forwards batched only through their rules)."""

from __future__ import annotations

import numpy as np
import pytest
import torch
import torch.func as tf

import ember
import ember.func as ef
from ember.func.function_vmap import NestedRuleBackward
from tests.func.test_function_vmap import NumpyMul, NumpySinCos, TNumpyMul, TNumpySinCos

RNG = np.random.default_rng(3)
X, Y = RNG.standard_normal((4, 3)), RNG.standard_normal(3)
G = RNG.standard_normal((2, 5, 3))


def _close(e, t):
    np.testing.assert_allclose(np.asarray(e.detach()._data), t.detach().numpy(), rtol=1e-10,
                               atol=1e-12)


def _f(lib, mul, sincos):
    def f(x, y):
        s, c = sincos(mul(x, y))
        return mul(s, x) + c
    return f


def _libs():
    return ((ember, ef, _f(ember, NumpyMul.apply, NumpySinCos.apply)),
            (torch, tf, _f(torch, TNumpyMul.apply, TNumpySinCos.apply)))


def _rows(lib, fn, f, inner_dim=0, cotangents=G[0]):
    """vmap over x of: vjp through f, then vmap of vjp_fn over the cotangents G[0]."""
    def rows(x, y):
        _, vjp_fn = fn.vjp(f, x, y)
        return fn.vmap(vjp_fn, in_dims=inner_dim)(lib.tensor(cotangents).movedim(0, inner_dim))
    return fn.vmap(rows, in_dims=(0, None))


def _grid(lib, fn, f):
    """vmap over x of: vjp through f, then vmap(vmap(vjp_fn)) over the cotangents G."""
    def grid(x, y):
        _, vjp_fn = fn.vjp(f, x, y)
        return fn.vmap(fn.vmap(vjp_fn))(lib.tensor(G))
    return fn.vmap(grid, in_dims=(0, None))


@pytest.mark.parametrize("inner_dim", [0, 1])
def test_vmap_of_vmap_of_vjp_fn_equals_torch(inner_dim):
    got = [_rows(lib, fn, f, inner_dim)(lib.tensor(X), lib.tensor(Y)) for lib, fn, f in _libs()]
    for e, t in zip(*got):
        _close(e, t)
        assert e.requires_grad == t.requires_grad  # (False: no history leaks out)
    x = ember.tensor(X, requires_grad=True)  # differentiable with respect to x, as torch
    dx, dy = _rows(ember, ef, _libs()[0][2], inner_dim)(x, ember.tensor(Y))
    xt = torch.tensor(X, requires_grad=True)
    tdx, tdy = _rows(torch, tf, _libs()[1][2], inner_dim)(xt, torch.tensor(Y))
    (dx.sin().sum() + dy.sum()).backward()
    (tdx.sin().sum() + tdy.sum()).backward()
    _close(x.grad, xt.grad)


def test_an_empty_inner_batch_gives_empty_results_as_torch():
    """(The per-sample backward zipped no rows into no results: a GradError.)"""
    for inner_dim in (0, 1):
        got = []
        for lib, fn, f in _libs():
            x = lib.tensor(X, requires_grad=True)
            dx, dy = _rows(lib, fn, f, inner_dim, np.zeros((0, 3)))(x, lib.tensor(Y))
            (dx.sum() + dy.sum()).backward()
            got.append((dx, dy, x.grad))
        for e, t in zip(*got):
            assert tuple(e.shape) == tuple(t.shape)
            assert str(e.dtype).split(".")[-1] == str(t.dtype).split(".")[-1]
            _close(e, t)


def test_three_levels_and_a_gradient_outside():
    got = []
    for lib, fn, f in _libs():
        grid = _grid(lib, fn, f)
        x = lib.tensor(X)

        def loss(y, grid=grid, x=x):
            dx, dy = grid(x, y)
            return (dx.sin() * dy).sum()
        got.append((grid(x, lib.tensor(Y)), fn.grad(loss)(lib.tensor(Y))))
    (e_rows, e_grad), (t_rows, t_grad) = got
    for e, t in zip(e_rows, t_rows):
        _close(e, t)
    _close(e_grad, t_grad)


def test_jacobians_through_the_rule_under_vmap_equal_torch():
    got = [fn.vmap(fn.jacrev(f, argnums=(0, 1)), in_dims=(0, None))(lib.tensor(X), lib.tensor(Y))
           for lib, fn, f in _libs()]
    for e, t in zip(*got):
        _close(e, t)


def test_differentiating_with_respect_to_the_inner_cotangents_is_refused_clearly():
    # (torch computes it; here the per-sample loop would lose the cotangents' history)
    def inner(x):
        _, vjp_fn = ef.vjp(NumpyMul.apply, x, ember.tensor(Y))
        return ef.vmap(ef.grad(lambda g: (vjp_fn(g)[0] * g).sum()))(ember.tensor(G[0]))
    with pytest.raises(NestedRuleBackward, match="cotangents"):
        ef.vmap(inner)(ember.tensor(X))
