"""NumPy functions of a tensor give tensors, as PyTorch's (``Tensor.__array_wrap__``); a bool
result stays bool (PyTorch's turns uint8). Compared with torch."""

import doctest

import numpy as np
import pytest
import torch

import ember
import ember.ops.numpy_ufuncs

FUNCTIONS = [np.sin, np.sqrt, np.abs, np.cumsum, np.argmax, np.round,
             lambda x: np.add(x, 1), lambda x: np.maximum(x, 1.5), lambda x: np.clip(x, 0, 1),
             lambda x: np.add.reduce(x)]


@pytest.mark.parametrize("fn", FUNCTIONS)
def test_numpy_function_of_a_tensor_is_a_tensor(fn):
    data = [0.5, 1.5, 2.0]
    expected, got = fn(torch.tensor(data)), fn(ember.tensor(data))
    assert type(got) is ember.Tensor and isinstance(expected, torch.Tensor)
    assert str(got.dtype).split(".")[1] == str(expected.dtype).split(".")[1]
    assert got.shape == expected.shape and got.tolist() == expected.tolist()


def test_bool_results_stay_bool():
    got = np.isnan(ember.tensor([1.0, float("nan")]))
    assert type(got) is ember.Tensor and got.dtype is ember.bool
    assert got.tolist() == [False, True]
    assert np.isnan(torch.tensor([1.0, float("nan")])).dtype is torch.uint8  # (PyTorch's)


def test_results_without_an_ember_dtype_stay_arrays():
    got = np.add(ember.tensor([1, 2]), np.array([1, 2], dtype=object))
    assert type(got) is np.ndarray and got.dtype == object and got.tolist() == [2, 4]


def test_docstring_example_runs():
    result = doctest.testmod(ember.ops.numpy_ufuncs, extraglobs={"ember": ember, "np": np})
    assert result.failed == 0 and result.attempted > 0
