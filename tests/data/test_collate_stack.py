"""default_collate's stacking of tensors (the fast row-by-row copy) keeps ember.stack's
semantics: a new array, dtype promotion, gradients, clear shape errors, transforms."""

import numpy as np
import pytest
import torch
import torch.autograd.forward_ad as tfwd
import torch.utils.data as tdata

import ember
import ember.func
import ember.jit
from ember.autograd import forward_ad as fwd
from ember.data.collate import default_collate
from ember.errors import UninitializedError


def test_values_dtype_and_new_memory_match_torch():
    rows = [np.arange(6, dtype=np.float32).reshape(2, 3) + i for i in range(4)]
    items = [ember.from_numpy(r) for r in rows]
    got = default_collate(items)
    want = tdata.default_collate([torch.from_numpy(r) for r in rows])
    assert got.dtype == ember.float32 and tuple(got.shape) == (4, 2, 3)
    np.testing.assert_array_equal(got.numpy(), want.numpy())
    got[0, 0, 0] = 99.0  # the batch is a copy: the items are unchanged
    assert items[0][0, 0].item() == 0.0


def test_zero_dim_items_and_dicts():
    got = default_collate([{"x": ember.tensor(1.5), "y": 1}, {"x": ember.tensor(2.5), "y": 2}])
    np.testing.assert_array_equal(got["x"].numpy(), [1.5, 2.5])
    np.testing.assert_array_equal(got["y"].numpy(), [1, 2])


def test_mixed_dtypes_promote_as_stack():
    got = default_collate([ember.tensor([1], dtype=ember.int32), ember.tensor([2.0])])
    assert got.dtype == ember.float32
    np.testing.assert_array_equal(got.numpy(), [[1.0], [2.0]])


def test_shape_mismatch_is_clear():
    with pytest.raises(RuntimeError, match=r"equal size.*\(3,\) at entry 0 and \(1, 3\) at "
                                           r"entry 2"):
        default_collate([ember.zeros(3), ember.zeros(3), ember.zeros(1, 3)])


def test_same_size_other_shape_is_refused_not_broadcast():
    with pytest.raises(RuntimeError, match="equal size"):
        default_collate([ember.zeros(2, 3), ember.zeros(1, 3)])


def test_non_tensor_item_is_refused():
    with pytest.raises(TypeError, match="element 1 is of type int"):
        default_collate([ember.zeros(2), 3])


def test_gradients_flow_through_the_stack():
    a, b = ember.tensor([1.0, 2.0], requires_grad=True), ember.tensor([3.0, 4.0])
    out = default_collate([a, b])
    (out * ember.tensor([[1.0, 1.0], [0.0, 0.0]])).sum().backward()
    np.testing.assert_array_equal(a.grad.numpy(), [1.0, 1.0])


def test_under_vmap_the_batched_items_are_stacked():
    def f(x):
        return default_collate([x, x * 2]).sum(0)

    got = ember.func.vmap(f)(ember.arange(6.0).reshape(3, 2))
    np.testing.assert_array_equal(got.numpy(), np.arange(6.0).reshape(3, 2) * 3)


def test_under_vmap_equals_torch_func_vmap():
    x = np.arange(24.0).reshape(4, 3, 2)

    def f(collate):
        return lambda row: collate([row, row * 2, row.sin()]).cumsum(0)

    got = ember.func.vmap(f(default_collate), in_dims=1)(ember.tensor(x))
    want = torch.func.vmap(f(tdata.default_collate), in_dims=1)(torch.tensor(x))
    np.testing.assert_allclose(got.numpy(), want.numpy(), rtol=1e-15)


def test_inside_jit_compile_the_stack_is_traced():
    def g(x, y):
        return (default_collate([x, y * 2]) * 3).sum(0)

    compiled = ember.jit.compile(g)
    for i in range(4):  # (new values each call: nothing of the first call's is kept)
        x, y = ember.arange(3.0) + i, ember.ones(3) * i
        np.testing.assert_array_equal(compiled(x, y).numpy(), g(x, y).numpy())
        np.testing.assert_array_equal(compiled(x, y).numpy(), (x.numpy() + 2 * y.numpy()) * 3)


def test_forward_mode_dual_items_keep_their_tangent_as_torch():
    p, t = np.arange(4.0).reshape(2, 2), np.ones((2, 2)) * [[1.0], [-2.0]]
    with fwd.dual_level():
        duals = [fwd.make_dual(ember.tensor(p[i]), ember.tensor(t[i])) for i in range(2)]
        primal, tangent = fwd.unpack_dual(default_collate(duals))
        got = primal.numpy(), tangent.numpy()
    with tfwd.dual_level():
        duals = [tfwd.make_dual(torch.tensor(p[i]), torch.tensor(t[i])) for i in range(2)]
        primal, tangent = tfwd.unpack_dual(tdata.default_collate(duals))
        want = primal.numpy(), tangent.numpy()
    np.testing.assert_array_equal(got[0], want[0])
    np.testing.assert_array_equal(got[1], want[1])


@pytest.mark.parametrize("kind", ["UninitializedBuffer", "UninitializedParameter"])
def test_uninitialized_items_are_refused_as_torch(kind):
    # (the fast path copied their empty placeholders into a (2, 0) batch without a word)
    items = [getattr(ember.nn, kind)(requires_grad=False) for _ in range(2)]
    with pytest.raises(UninitializedError, match="uninitialized parameter in stack"):
        default_collate(items)
    with pytest.raises(ValueError, match="uninitialized parameter in"):
        tdata.default_collate([getattr(torch.nn, kind)(requires_grad=False) for _ in range(2)])
