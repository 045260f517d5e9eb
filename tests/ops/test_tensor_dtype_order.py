"""ember.tensor folds a list's leaf dtypes in torch's order (uint16 mixes with floats)."""

import numpy as np
import pytest
import torch

import ember

MIXES = [[np.float32(2.5), np.uint16(5), 1], [np.float16(1.5), np.uint16(5), np.int8(1)],
         [np.uint16(5), np.float32(2.5), 1], [[np.uint16(5)], [np.float32(1)], [1]],
         [np.uint16(5), 1.5], [np.uint64(5), 2.5], [np.complex128(1), np.uint16(1)],
         [np.float32(1), np.float16(2), 2.5], [np.float64(1), np.uint32(3)], [np.complex64(1), 2.5]]
REFUSED = [[np.uint16(5), 1, np.float32(2.5)], [1, np.uint16(5), np.float32(2.5)],
           [[1], [np.uint16(5)], [np.float32(1)]], [np.uint16(1), np.complex64(1)]]


@pytest.mark.parametrize("data", MIXES, ids=str)
def test_tensor_of_uint_and_float_leaves_has_torchs_dtype(data):
    # [np.float32(2.5), np.uint16(5), 1] raised (uint16 promoted with int64 first); torch float32.
    assert str(ember.tensor(data).dtype) == str(torch.tensor(data).dtype).replace("torch", "ember")


@pytest.mark.parametrize("data", REFUSED, ids=str)
def test_tensor_refuses_where_torchs_order_meets_uint16_and_an_int(data):
    with pytest.raises(RuntimeError, match="uint16"):
        torch.tensor(data)
    with pytest.raises(ember.errors.DTypeError, match="uint16"):
        ember.tensor(data)


@pytest.mark.parametrize("data", [[np.float32(1), 2.5], [[np.complex64(1)], [2.5]],
                                  [np.float32(1), np.float16(2)]], ids=str)
def test_tensor_of_a_numpy_first_list_with_python_floats_under_float64_default(data):
    ember.set_default_dtype(ember.float64)
    torch.set_default_dtype(torch.float64)
    try:
        assert str(ember.tensor(data).dtype) == str(torch.tensor(data).dtype).replace(
            "torch", "ember")
    finally:
        ember.set_default_dtype(ember.float32)
        torch.set_default_dtype(torch.float32)
