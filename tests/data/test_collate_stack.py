"""default_collate's stacking of tensors (the fast row-by-row copy) keeps ember.stack's
semantics: a new array, dtype promotion, gradients, clear shape errors, transforms."""

import numpy as np
import pytest
import torch
import torch.utils.data as tdata

import ember
import ember.func
from ember.data.collate import default_collate


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
