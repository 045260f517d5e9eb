"""ember.FloatTensor and friends against torch's legacy tensor types."""

import warnings

import numpy as np
import pytest
import torch

import ember

NAMES = ["FloatTensor", "DoubleTensor", "HalfTensor", "BFloat16Tensor", "LongTensor",
         "IntTensor", "ShortTensor", "CharTensor", "ByteTensor", "BoolTensor"]


@pytest.mark.parametrize("name", NAMES)
def test_construction_and_isinstance_match_torch(name):
    E, T = getattr(ember, name), getattr(torch, name)
    assert E.dtype.name == str(T.dtype).removeprefix("torch.")
    assert E(2, 3).shape == T(2, 3).shape and E().shape == T().shape
    assert E(ember.Size([4])).shape == T(torch.Size([4])).shape
    data = [[1, 0], [3, 4]]
    got, want = E(data), T(data)
    assert got.dtype.name == str(want.dtype).removeprefix("torch.")
    np.testing.assert_array_equal(got.float().numpy(), want.float().numpy())
    assert isinstance(got, E) and isinstance(want, T)
    other = "DoubleTensor" if name != "DoubleTensor" else "FloatTensor"
    assert not isinstance(got, getattr(ember, other))
    assert not issubclass(E, ember.Tensor) and type(got) is ember.Tensor
    assert ember.zeros(2).type(E).dtype is E.dtype
    assert ember.zeros(2).type(f"torch.{name}").dtype is E.dtype
    assert ember.zeros(2).type(f"ember.{name}").dtype is E.dtype


def test_refusals_match_torch():
    with pytest.raises(TypeError, match="expected a tensor of dtype float32, got int64"):
        ember.FloatTensor(ember.tensor([1, 2]))
    with pytest.raises(TypeError):
        torch.FloatTensor(torch.tensor([1, 2]))
    with pytest.raises(TypeError, match="data must be a sequence"):
        ember.FloatTensor(2.5)
    with pytest.raises(ValueError, match="negative dimension"):
        ember.FloatTensor(-1)
    with pytest.raises(ValueError, match="invalid type 'ember.NotATensor'"):
        ember.zeros(1).type("ember.NotATensor")
    with pytest.raises(ValueError):
        torch.zeros(1).type("torch.NotATensor")
    x = ember.tensor([1.0, 2.0])
    assert ember.FloatTensor(x).data_ptr() == x.data_ptr()  # shares memory, as torch's


def test_set_default_tensor_type_maps_to_default_dtype():
    try:
        with pytest.warns(UserWarning, match="deprecated"):
            ember.set_default_tensor_type(ember.DoubleTensor)
        assert ember.get_default_dtype() is ember.float64
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            ember.set_default_tensor_type("torch.FloatTensor")
            with pytest.raises(TypeError, match="only floating-point types"):
                ember.set_default_tensor_type(ember.LongTensor)
        assert ember.get_default_dtype() is ember.float32
    finally:
        ember.set_default_dtype(ember.float32)
