"""Eager ``stack`` is one primitive (ember.ops.join.Stack); under a transform it stays an
unsqueeze per tensor and a cat. Both against PyTorch."""

import numpy as np
import pytest
import torch

import ember
from ember.ops.join import Stack
from ember.ops.primitive import apply


@pytest.mark.parametrize("dim", [0, 1, 2, -1, -3])
@pytest.mark.parametrize("dtype", ["float64", "complex128", "int32", "bool", "uint16"])
def test_stack_matches_torch(dim, dtype):
    rng = np.random.default_rng(0)
    parts = [(rng.standard_normal((2, 3)) * 3).astype(dtype) for _ in range(3)]
    parts[1] = parts[1].T.copy().T  # (a non-contiguous one)
    got = ember.stack([ember.from_numpy(p) for p in parts], dim)
    want = torch.stack([torch.from_numpy(p) for p in parts], dim)
    assert got.dtype.name == str(want.dtype).replace("torch.", "")
    assert got.stride() == want.stride()
    np.testing.assert_array_equal(got.numpy(), want.numpy())


def test_stack_promotes_mixed_dtypes_as_torch():
    got = ember.stack([ember.tensor([1, 2]), ember.tensor([0.5, 1.5])])
    want = torch.stack([torch.tensor([1, 2]), torch.tensor([0.5, 1.5])])
    assert got.dtype.name == "float32" and want.dtype == torch.float32
    np.testing.assert_array_equal(got.numpy(), want.numpy())


def test_stack_gradients_of_every_order():
    rng = np.random.default_rng(1)
    xs = [ember.tensor(rng.standard_normal((2, 3)), requires_grad=True) for _ in range(3)]

    def f(a, b, c):
        return ember.stack([a, b, c], 1) ** 2

    assert ember.autograd.gradcheck(f, tuple(xs))
    assert ember.autograd.gradgradcheck(f, tuple(xs))
    out = ember.stack(xs, 1)
    assert out.grad_fn.name() == "StackBackward0"
    ts = [torch.tensor(x.detach().numpy(), requires_grad=True) for x in xs]
    w = rng.standard_normal((2, 3, 3))
    (out * ember.tensor(w)).sum().backward()
    (torch.stack(ts, 1) * torch.tensor(w)).sum().backward()
    for x, t in zip(xs, ts, strict=True):
        np.testing.assert_array_equal(x.grad.numpy(), t.grad.numpy())


def test_stack_tangent_is_the_stack_of_tangents():
    a, b = ember.randn(2, 3), ember.randn(2, 3)
    da, db = ember.randn(2, 3), ember.randn(2, 3)
    _, tangent = ember.func.jvp(lambda x, y: apply(Stack, x, y, dim=1), (a, b), (da, db))
    np.testing.assert_array_equal(tangent.numpy(), np.stack([da.numpy(), db.numpy()], 1))


def test_eager_stack_is_one_op_and_traced_stack_a_cat():
    x = ember.randn(2, 3)
    with ember.profiler.profile() as prof:
        ember.stack([x, x, x])
    assert [e.name for e in prof.events()] == ["stack"]
    graph = ember.jit.trace(lambda a: ember.stack([a, a]), (x,)).graph
    assert "cat" in {eqn.prim.name for eqn in graph.eqns}
    batched = ember.func.vmap(lambda a: ember.stack([a, 2 * a], 1))(x)
    np.testing.assert_array_equal(batched.numpy(), np.stack([x.numpy(), 2 * x.numpy()], 2))


def test_stack_on_the_meta_device():
    x = ember.empty(2, 3, device="meta")
    assert ember.stack([x, x], 1).shape == (2, 2, 3)


@pytest.mark.parametrize("requires_grad", [True, False])
@pytest.mark.parametrize("op", ["stack", "cat"])
def test_joining_an_uninitialized_parameter_is_torchs_value_error(op, requires_grad):
    # (its shape raises a RuntimeError; a (0,) one beside others is not skipped by cat)
    for lazy in ([torch.nn.UninitializedParameter(requires_grad)] * 2,
                 [torch.ones(2), torch.nn.UninitializedParameter(requires_grad)]):
        with pytest.raises(ValueError, match="uninitialized parameter"):
            getattr(torch, op)(lazy)
    for lazy in ([ember.nn.UninitializedParameter(requires_grad)] * 2,
                 [ember.ones(2), ember.nn.UninitializedParameter(requires_grad)]):
        with pytest.raises(ember.errors.UninitializedError,
                           match=f"uninitialized parameter in {op}. Hint"):
            getattr(ember, op)(lazy)


def test_collating_uninitialized_parameters_is_torchs_value_error():
    with pytest.raises(ValueError, match="uninitialized parameter"):
        torch.utils.data.default_collate([torch.nn.UninitializedParameter()] * 2)
    with pytest.raises(ember.errors.UninitializedError, match="uninitialized parameter in stack"):
        ember.utils.data.default_collate([ember.nn.UninitializedParameter()] * 2)
