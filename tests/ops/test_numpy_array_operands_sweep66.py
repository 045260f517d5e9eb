"""A NumPy array as an operand of a tensor operator: PyTorch hands ``tensor op ndarray`` to
NumPy whatever the array's rank (a 0-d one is not a 0-d tensor: float32 + np.array(2.0) is
float64), so its dtype follows NumPy's promotion; NumPy scalars stay Python-number-like.
Compared with torch."""

import operator

import numpy as np
import pytest
import torch

import ember

_TENSORS = ["int32", "int64", "float16", "float32", "float64", "complex64", "uint8", "bool"]
_ARRAYS = [np.bool_, np.uint8, np.int8, np.int32, np.int64, np.float16, np.float32, np.float64,
           np.complex64]


@pytest.mark.parametrize("shape", [(3,), ()])
@pytest.mark.parametrize("array_shape", [(), (1,)])
@pytest.mark.parametrize("op", [operator.add, operator.mul])
@pytest.mark.parametrize("tdtype", _TENSORS)
def test_tensor_op_ndarray_dtype_as_torch(tdtype, op, array_shape, shape):
    for adtype in _ARRAYS:
        if tdtype == "bool" and adtype is np.bool_:  # (torch gives uint8 there, Ember bool)
            continue
        a = np.ones(array_shape, adtype)
        expected = op(torch.ones(shape, dtype=getattr(torch, tdtype)), a).dtype
        got = op(ember.ones(shape, dtype=getattr(ember, tdtype)), a).dtype
        assert str(got).split(".")[1] == str(expected).split(".")[1], adtype


@pytest.mark.parametrize("value", [np.float64(2.0), np.int64(2), np.complex128(1j),
                                   np.array(2.0), np.array(2)])
def test_numpy_scalars_and_0d_arrays(value):
    for op in (operator.add, operator.sub, operator.truediv, operator.pow):
        expected = op(torch.ones(3), value)
        got = op(ember.ones(3), value)
        assert str(got.dtype).split(".")[1] == str(expected.dtype).split(".")[1]
        np.testing.assert_allclose(got.numpy(), expected.numpy())


def test_gradient_still_flows_through_an_ndarray_operand():
    x = ember.ones(3, requires_grad=True)
    y = x * np.array(2.0)
    assert y.dtype == ember.float64
    y.sum().backward()
    assert x.grad.tolist() == [2.0, 2.0, 2.0]
