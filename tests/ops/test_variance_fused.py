"""The fused ``var`` primitive (ember.ops.variance_kernel) that eager var and std of float32
and float64 tensors use: values equal to the composite's bit for bit, values and gradients
equal to PyTorch's; its rules, its batching rule, and the composite under a transform."""

import importlib
import itertools

import numpy as np
import pytest
import torch

import ember
from ember.ops.primitive import apply
from ember.ops.variance_kernel import Var
from tests.ops.fused import assert_fused_matches

variance_module = importlib.import_module("ember.ops.variance")


@pytest.mark.parametrize("name", ["var", "std"])
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_fused_var_equals_composite_and_torch(name, dtype, monkeypatch):
    rng = np.random.default_rng(0)
    for shape, dim, keepdim, correction in itertools.product(
            [(5,), (4, 4), (3, 4, 5), (2000, 8), (1, 7)], [None, 0, -1, (0, -1)],
            (False, True), (None, 0, 2.5)):
        if isinstance(dim, tuple) and len(shape) == 1:
            continue
        x = (rng.standard_normal(shape) * 3 + 1).astype(dtype)
        kwargs = {"dim": dim, "keepdim": keepdim, "correction": correction}
        tol = 1e-5 if dtype == np.float32 else 1e-10
        assert_fused_matches(monkeypatch, variance_module, "_FUSED",
                             lambda lib, t, kw=kwargs: getattr(t, name)(**kw), x, tol)


def test_var_primitive_rules():
    rng = np.random.default_rng(1)
    x = ember.tensor(rng.standard_normal((3, 4)), requires_grad=True)

    def f(a):
        return apply(Var, a, dims=(1,), keepdim=False, correction=1)

    assert ember.autograd.gradcheck(f, (x,))
    assert ember.autograd.gradgradcheck(f, (x,))
    v = rng.standard_normal((3, 4))
    _, tangent = ember.func.jvp(f, (x.detach(),), (ember.tensor(v),))
    _, want = torch.func.jvp(lambda a: a.var(1), (torch.tensor(x.detach().numpy()),),
                             (torch.tensor(v),))
    np.testing.assert_allclose(tangent.numpy(), want.numpy(), rtol=1e-12)
    batched = ember.func.vmap(f)(ember.tensor(rng.standard_normal((2, 3, 4))))
    assert batched.shape == (2, 3)


def test_eager_var_is_one_op_and_traced_var_the_composite():
    x = ember.randn(4, 4)
    with ember.profiler.profile() as prof:
        x.var(1)
    assert [e.name for e in prof.events()] == ["var"]
    assert x.var(1).grad_fn is None and x.requires_grad_().var(1).grad_fn.name() == "VarBackward0"
    graph = ember.jit.trace(lambda a: a.std(1), (x.detach(),)).graph
    assert "var" not in {eqn.prim.name for eqn in graph.eqns}
