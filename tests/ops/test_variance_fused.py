"""The fused ``var`` and ``std`` primitives (ember.ops.variance_kernel) that eager var, std,
var_mean and std_mean of float32 and float64 tensors use: values equal to the composite's bit
for bit, values and gradients equal to PyTorch's (also where float32 squares overflow); their
rules, their batching rules, and the same primitives under jit and vmap."""

import importlib
import itertools

import numpy as np
import pytest
import torch

import ember
from ember.ops.primitive import apply
from ember.ops.variance_kernel import Std, Var
from tests.ops.fused import assert_fused_matches

variance_module = importlib.import_module("ember.ops.variance")


@pytest.mark.parametrize("name", ["var", "std"])
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_fused_var_equals_composite_and_torch(name, dtype, monkeypatch):
    rng = np.random.default_rng(0)
    for shape, dim, keepdim, correction in itertools.product(
            [(5,), (4, 4), (3, 4, 5), (2000, 8), (1, 7)], [None, 0, -1, (0, -1)],
            (False, True), (None, 0, 2.5)):
        if isinstance(dim, tuple) and len(shape) == 1 or (shape, dim, correction) == (
                (1, 7), 0, 2.5):  # (no dof left: see test_no_degrees_of_freedom_left)
            continue
        x = (rng.standard_normal(shape) * 3 + 1).astype(dtype)
        kwargs = {"dim": dim, "keepdim": keepdim, "correction": correction}
        tol = 1e-5 if dtype == np.float32 else 1e-10
        assert_fused_matches(monkeypatch, variance_module, "_FUSED",
                             lambda lib, t, kw=kwargs: getattr(t, name)(**kw), x, tol)


@pytest.mark.parametrize("prim", [Var, Std])
def test_var_primitive_rules(prim):
    rng = np.random.default_rng(1)
    x = ember.tensor(rng.standard_normal((3, 4)), requires_grad=True)

    def f(a):
        return apply(prim, a, dims=(1,), keepdim=False, correction=1)

    assert ember.autograd.gradcheck(f, (x,))
    assert ember.autograd.gradgradcheck(f, (x,))
    v = rng.standard_normal((3, 4))
    _, tangent = ember.func.jvp(f, (x.detach(),), (ember.tensor(v),))
    _, want = torch.func.jvp(lambda a: getattr(a, prim.name)(1),
                             (torch.tensor(x.detach().numpy()),),
                             (torch.tensor(v),))
    np.testing.assert_allclose(tangent.numpy(), want.numpy(), rtol=1e-12)
    batched = ember.func.vmap(f)(ember.tensor(rng.standard_normal((2, 3, 4))))
    assert batched.shape == (2, 3)


def test_var_is_one_op_eagerly_and_traced():
    x = ember.randn(4, 4)
    with ember.profiler.profile() as prof:
        x.var(1)
        x.requires_grad_().std(1)
    assert [e.name for e in prof.events()] == ["var", "std"]
    x.requires_grad_(False)
    assert x.var(1).grad_fn is None and x.requires_grad_().var(1).grad_fn.name() == "VarBackward0"
    graph = ember.jit.trace(lambda a: a.std(1), (x.detach(),)).graph
    assert [eqn.prim.name for eqn in graph.eqns] == ["std"]


@pytest.mark.parametrize("name", ["var", "std"])
def test_jit_and_vmap_give_eagers_values_where_float32_squares_overflow(name):
    # (they computed the float32 composite: inf where eager, summing again in float64, and
    # PyTorch are finite, e.g. the std of [3e38, -3e38])
    rows = np.array([[3e38, -3e38, 3e38, -3e38], [3e38, 0, 0, 0], [2e19, -2e19, 0, 1],
                     [1.0, 2.0, 3.0, 4.5]], np.float32)
    x = ember.tensor(rows)
    eager = getattr(x, name)(1)
    compiled = ember.jit.compile(lambda a: getattr(a, name)(1))
    compiled(x)
    mapped = ember.func.vmap(lambda r: getattr(r, name)())(x)
    want = getattr(torch.tensor(rows), name)(1)
    np.testing.assert_array_equal(eager.numpy(), want.numpy())
    np.testing.assert_array_equal(compiled(x).numpy(), eager.numpy())
    np.testing.assert_array_equal(mapped.numpy(), eager.numpy())


@pytest.mark.parametrize("call", [
    lambda lib, t: t.std(), lambda lib, t: t.std(1), lambda lib, t: t.var(1),
    lambda lib, t: t.var(0, correction=0), lambda lib, t: lib.std_mean(t, 1)[0],
    lambda lib, t: t.std(1, keepdim=True, correction=0)])
def test_float32_squares_past_the_largest_float_are_summed_in_float64(call):
    # (the squares of |x| > 1.8e19 overflow float32 to inf; PyTorch accumulates in float64,
    # so a std up to 3.4e38, and a variance of many such values, stay finite)
    rng = np.random.default_rng(2)
    x = (rng.standard_normal((600, 3)) * np.array([1e19, 1e36, 1.0])).astype(np.float32)
    x[0, 2] = 3e38  # (its column's variance overflows in float64 too: inf in both)
    got = ember.tensor(x, requires_grad=True)
    want = torch.tensor(x, requires_grad=True)
    out, expected = call(ember, got), call(torch, want)
    assert out.dtype == ember.float32
    np.testing.assert_allclose(out.detach().numpy(), expected.detach().numpy(), rtol=1e-5)
    g = np.ones(tuple(expected.shape), np.float32)
    out.backward(ember.tensor(g))
    expected.backward(torch.tensor(g))
    np.testing.assert_allclose(got.grad.numpy(), want.grad.numpy(), rtol=1e-4, atol=1e-30)


def test_float64_overflow_and_nan_stay_as_torch():
    for values in ([1e200, -1e200], [1e154, -1e154, 3.0], [1e20, float("nan")],
                   [1.0, float("inf")]):
        for name in ("var", "std"):
            for dtype in ("float32", "float64"):
                if dtype == "float32" and abs(values[0]) > 1e38:
                    continue
                got = getattr(ember.tensor(values, dtype=getattr(ember, dtype)), name)()
                want = getattr(torch.tensor(values, dtype=getattr(torch, dtype)), name)()
                np.testing.assert_array_equal(got.numpy(), want.numpy())


@pytest.mark.parametrize("name", ["var", "std"])
def test_no_degrees_of_freedom_left_gives_nan_gradients_as_the_composite(name, monkeypatch):
    # (the fused slope was PyTorch's explicit-dims 2 (x - mean) / dof with dof <= 0: -0.0 for
    # one element, where the composite and PyTorch's var() give NaN; the value is inf or NaN)
    for values, correction in (([3.0], 2), ([3.0], 1), ([1.0, 2.0, 4.0], 4), ([2.0, 2.0], 3)):
        grads = []
        for fused in (True, False):
            with monkeypatch.context() as m:
                if not fused:
                    m.setattr(variance_module, "_FUSED", ())
                x = ember.tensor(values, dtype=ember.float64, requires_grad=True)
                getattr(x, name)(correction=correction).backward()
                grads.append(x.grad.numpy())
        np.testing.assert_array_equal(grads[0], grads[1])
        assert np.isnan(grads[0]).all()
    want = torch.tensor([3.0], dtype=torch.float64, requires_grad=True)
    getattr(want, name)(correction=2).backward()
    assert torch.isnan(want.grad).all()
