"""DLPack: ember.from_dlpack and Tensor.__dlpack__ share memory with PyTorch and NumPy both
ways; what cannot cross (bfloat16 through NumPy, tensors requiring grad) fails clearly."""

import numpy as np
import pytest
import torch

import ember


@pytest.mark.parametrize("dtype", ["float32", "float64", "float16", "int64", "int32", "int16",
                                   "int8", "uint8", "bool"])
def test_torch_to_ember_shares_memory(dtype):
    t = torch.zeros(2, 3, dtype=getattr(torch, dtype))
    e = ember.from_dlpack(t)
    assert e.dtype is getattr(ember, "bool_" if dtype == "bool" else dtype)
    assert e.shape == (2, 3) and e.device.type == "cpu"
    e[1, 2] = 1
    assert t[1, 2].item() == 1


def test_ember_to_torch_and_numpy_shares_memory():
    x = ember.arange(6.0).reshape(2, 3)
    t = torch.from_dlpack(x)
    t[0, 0] = -1.0
    a = np.from_dlpack(x)
    a[1, 1] = 100.0
    np.testing.assert_array_equal(x.numpy(), [[-1, 1, 2], [3, 100, 5]])
    assert t[1, 1].item() == 100.0
    assert torch.from_dlpack(x.t()).stride() == x.t().stride() == (1, 3)
    assert x.__dlpack_device__() == (1, 0)


def test_from_numpy_array_and_round_trip():
    a = np.arange(4.0)
    e = ember.from_dlpack(a)
    e[0] = 9.0
    assert a[0] == 9.0
    back = ember.from_dlpack(torch.from_dlpack(e))
    assert back.data_ptr() == e.data_ptr()
    y = ember.ones(2, requires_grad=True)
    assert not ember.from_dlpack(y).requires_grad


def test_writes_through_dlpack_are_seen_by_ember_ops():
    x = ember.zeros(3)
    torch.from_dlpack(x).fill_(2.0)
    assert x.sum().item() == 6.0


def test_refusals_are_clear():
    with pytest.raises(ember.GradError, match="__dlpack__: can't export a tensor that requires"):
        torch.from_dlpack(ember.ones(2, requires_grad=True))
    with pytest.raises(ember.DTypeError, match="__dlpack__: bfloat16 cannot be exported"):
        torch.from_dlpack(ember.ones(2, dtype=ember.bfloat16))
    with pytest.raises(ember.DTypeError, match="from_dlpack: could not import .* bfloat16"):
        ember.from_dlpack(torch.ones(2, dtype=torch.bfloat16))
    with pytest.raises(TypeError, match="from_dlpack: expected an object with __dlpack__"):
        ember.from_dlpack([1.0, 2.0])
