"""Advanced indexing against PyTorch: the result's layout (strides) and the error classes of
bad indices (PyTorch raises IndexError; Ember's errors are IndexErrors too, besides the
DTypeError/ShapeError they were)."""

import numpy as np
import pytest
import torch

import ember
from ember.errors import DTypeError, IndexShapeError, IndexTypeError, ShapeError


def _x(m, *shape):
    return m.arange(int(np.prod(shape)), dtype=m.float32).reshape(*shape)


LAYOUTS = {
    "slice_then_adjacent": lambda m, i: _x(m, 2, 3, 4, 5)[-2:, i([2]), i([0, 1])],
    "ellipsis_bool_list": lambda m, i: _x(m, 2, 3, 4, 5)[:, ..., True, i([0, -1])],
    "slice_list": lambda m, i: _x(m, 2, 3, 4, 5)[1:, i([1, 0])],
    "int_step_lists": lambda m, i: _x(m, 2, 3, 4, 5)[0, ::2, i([2]), i([0, 1])],
    "two_d_index_after_slice": lambda m, i: _x(m, 2, 3, 4, 5)[:, :, i([[0, 1], [1, 0]])],
    "non_adjacent": lambda m, i: _x(m, 2, 3, 4, 5)[i([0, 1]), :, i([1, 2])],
    "transposed_input": lambda m, i: _x(m, 4, 5).t()[i([0, 2, 1])],
    "permuted_input_mid": lambda m, i: _x(m, 2, 3, 4).permute(2, 0, 1)[:, i([1, 0])],
    "column_index": lambda m, i: _x(m, 3, 4)[:, i([[0], [2]])],
    "sliced_permuted_input": lambda m, i: _x(m, 6, 5, 4).permute(2, 0, 1)[1:, i([3, 1, 2, 0])],
    "transposed_input_column": lambda m, i: _x(m, 4, 5).t()[:, i([3, 1, 1])],
    "stepped_input_front": lambda m, i: _x(m, 4, 6)[:, ::2][i([2, 0])],
    "expanded_input_front": lambda m, i: _x(m, 3, 1, 4).expand(3, 2, 4)[i([2, 0])],
}


@pytest.mark.parametrize("name", sorted(LAYOUTS))
def test_advanced_index_strides_match_torch(name):
    want = LAYOUTS[name](torch, torch.tensor)
    got = LAYOUTS[name](ember, ember.tensor)
    assert tuple(got.shape) == tuple(want.shape)
    np.testing.assert_array_equal(got.numpy(), want.numpy())
    sizes = want.shape  # (a dim of size 1 has no stride that matters)
    assert [s for s, n in zip(got.stride(), sizes) if n != 1] == \
           [s for s, n in zip(want.stride(), sizes) if n != 1]


def test_advanced_index_result_views_as_torch():
    # torch's contiguous result can be .view()ed; NumPy's layout made that fail
    x = _x(ember, 2, 3, 4, 5)[-2:, ember.tensor([2]), [0, 1]]
    assert x.is_contiguous()
    assert x.view(-1).shape == (20,)


def test_bad_index_errors_are_index_errors():
    x = _x(ember, 2, 3)
    with pytest.raises(IndexError, match="cannot index with an object of type float"):
        x[1.0]
    with pytest.raises(IndexError, match="integer or bool tensors.*got float32") as info:
        x[ember.tensor([0.0])]
    assert isinstance(info.value, DTypeError) and isinstance(info.value, IndexTypeError)
    with pytest.raises(IndexError, match="got int16"):
        x[ember.tensor([0, 1], dtype=ember.int16)]
    with pytest.raises(IndexError, match="got int8"):
        x[ember.tensor([0], dtype=ember.int8)] = 1.0
    with pytest.raises(IndexError, match="ragged list"):
        x[0, [0, [1]]]
    with pytest.raises(IndexError, match="index tensors.*do not broadcast") as info:
        x[[0, 1], [0, 1, 2]]
    assert isinstance(info.value, ShapeError) and isinstance(info.value, IndexShapeError)
    with pytest.raises(TypeError):  # (a str is a TypeError in torch as well)
        x["a"]


def test_zero_d_small_int_tensor_indexes_as_an_int():
    x, t = _x(ember, 4), _x(torch, 4)
    for e_dt, t_dt in [(ember.int16, torch.int16), (ember.int8, torch.int8)]:
        assert x[ember.tensor(2, dtype=e_dt)].item() == t[torch.tensor(2, dtype=t_dt)].item()


@pytest.mark.parametrize("dtype", ["int16", "int8", "uint8", "uint16"])
def test_index_ops_refuse_small_integer_index_dtypes(dtype):
    # torch takes int64 (and int32 for some) only; these were read as indices silently
    x, i = _x(ember, 3, 4), ember.tensor([0, 1], dtype=getattr(ember, dtype))
    for call in (lambda: x.index_select(0, i), lambda: x.index_add(0, i, ember.ones(2, 4)),
                 lambda: x.take(i), lambda: x.gather(0, i.reshape(1, 2))):
        with pytest.raises(IndexError, match=f"int64 or int32.*got {dtype}") as info:
            call()
        assert isinstance(info.value, DTypeError)


def test_index_select_matrix_index_is_an_index_error():
    with pytest.raises(IndexError, match="index must be a vector") as info:
        _x(ember, 3, 4).index_select(0, ember.tensor([[0]]))
    assert isinstance(info.value, ShapeError)


UINT8_KEYS = [
    lambda: np.array([1, 0, 1], np.uint8),
    lambda: np.array(1, np.uint8),
    lambda: np.array(0, np.uint8),
    lambda: (np.array([1, 0, 1], np.uint8), 0),
    lambda: (slice(None), np.array([1, 0, 1, 1], np.uint8)),
    lambda: [np.uint8(1), np.uint8(0), np.uint8(1)],
]


@pytest.mark.filterwarnings("ignore:indexing with dtype torch.uint8")
@pytest.mark.parametrize("k", range(len(UINT8_KEYS)))
def test_numpy_uint8_key_is_a_mask_as_in_torch(k):
    # torch reads a NumPy uint8 array as a uint8 tensor, a mask (Ember indexed with it)
    key = UINT8_KEYS[k]()
    x, t = _x(ember, 3, 4), _x(torch, 3, 4)
    np.testing.assert_array_equal(x[key].numpy(), t[key].numpy())
    v = _x(torch, *t[key].shape) + 100  # (torch refuses a scalar here, a tensor it writes)
    y, u = x.clone(), t.clone()
    y[key], u[key] = ember.tensor(v.numpy()), v
    np.testing.assert_array_equal(y.numpy(), u.numpy())


def test_numpy_uint8_mask_of_the_wrong_shape_is_an_index_error():
    with pytest.raises(IndexError, match="shape of the mask"):
        _x(ember, 3, 4)[np.array([1, 0], np.uint8)]


MUTATED_INDEX = {  # index ops whose backward read the index tensor as it is at backward time
    "getitem": lambda x, i: x[:, i],
    "index_select": lambda x, i: x.index_select(1, i),
    "take": lambda x, i: x.take(i),
    "index_copy": lambda x, i: x.index_copy(1, i, x[:, :2] * 2),
    "index_fill": lambda x, i: x.index_fill(1, i, 0.0),
    "index_put": lambda x, i: x.index_put((i,), x[:2] * 2),
    "scatter": lambda x, i: x.scatter(1, i.expand(3, 2), 0.0),
}


@pytest.mark.parametrize("op", list(MUTATED_INDEX))
def test_index_modified_after_the_op_saved_it_is_refused_in_backward(op):
    # PyTorch checks the saved index's version; Ember's Index/IndexPut kept no versions and
    # backward silently used the new index values (a wrong gradient)
    f = MUTATED_INDEX[op]
    for m, err in ((torch, RuntimeError), (ember, ember.errors.GradError)):
        x = m.arange(12.0, dtype=m.float64).reshape(3, 4).requires_grad_()
        i = m.tensor([0, 2])
        y = f(x, i)
        i[0] = 1
        with pytest.raises(err, match="modified by an inplace operation|modified in place"):
            y.sum().backward()


def test_setitem_with_a_bare_false_key_writes_and_records_nothing():
    # torch returns at once for x[False] = v (no version bump, no CopySlices, no shape check,
    # a leaf is fine); Ember recorded an index_put, giving v a zero gradient instead of None
    for m in (torch, ember):
        x = m.ones(2, 5, dtype=m.float64, requires_grad=True)
        v = m.ones(5, dtype=m.float64, requires_grad=True)
        y = x * 1
        y[False] = v[0]
        y.sum().backward()
        assert v.grad is None and y._version == 0
        x[False] = m.zeros(7, dtype=m.float64)
        assert x._version == 0


@pytest.mark.parametrize("dtype,value", [
    ("complex64", complex(1, 1e300)), ("complex64", 1e300 + 0j), ("float32", 1e300 + 0j),
    ("uint8", 300 + 0j), ("uint8", -1 + 0j), ("int64", complex(float("nan"), 0)),
])
def test_setitem_of_a_python_complex_is_range_checked_as_torch(dtype, value):
    # review54d item 2: a Python complex skipped check_fits (complex64 1+1e300j was 1+infj)
    with pytest.raises(RuntimeError, match="overflow"):
        torch.zeros(2, dtype=getattr(torch, dtype))[0] = value
    x = ember.zeros(2, dtype=getattr(ember, dtype))
    with pytest.raises(ember.errors.ValueOverflow, match=f"__setitem__: .* {dtype} without"):
        x[0] = value
    assert x.tolist() == [0, 0]


@pytest.mark.parametrize("dtype", ["float32", "float16", "int64", "uint8", "bool", "complex64"])
@pytest.mark.parametrize("value", [2 + 0j, 2.5 + 0j, 2j, 0j, -0.5 + 0j, complex("inf")])
def test_setitem_of_a_python_complex_stores_what_torch_stores(dtype, value):
    want = torch.zeros(2, dtype=getattr(torch, dtype))
    try:
        want[0] = value
    except RuntimeError:
        with pytest.raises(ember.errors.EmberError):
            ember.zeros(2, dtype=getattr(ember, dtype))[0] = value
        return
    got = ember.zeros(2, dtype=getattr(ember, dtype))
    got[0] = value
    assert got.dtype.name == dtype
    np.testing.assert_array_equal(got.numpy(), want.numpy())
