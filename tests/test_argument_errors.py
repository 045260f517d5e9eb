"""A bad argument value raises ``ArgumentError``: both the ``ValueError`` Python code and
PyTorch's Python-side checks raise and the ``RuntimeError`` PyTorch's C++ ops raise."""

from pathlib import Path

import numpy as np
import pytest
import torch

import ember
import ember.nn.functional as F
from ember import nn
from ember.errors import ArgumentError

BAD_VALUES = {
    "linalg.qr mode": lambda: ember.linalg.qr(ember.ones(2, 2), mode="x"),
    "fft.fft norm": lambda: ember.fft.fft(ember.ones(4), norm="x"),
    "cross_entropy reduction": lambda: F.cross_entropy(ember.ones(2, 3), ember.tensor([0, 1]),
                                                       reduction="x"),
    "Conv2d padding_mode": lambda: nn.Conv2d(1, 1, 3, padding_mode="x"),
    "Dropout p": lambda: nn.Dropout(p=2.0),
    "SGD lr": lambda: ember.optim.SGD([nn.Parameter(ember.ones(1))], lr=-1.0),
    "DataLoader num_workers": lambda: ember.data.DataLoader([1, 2], num_workers=-1),
}


@pytest.mark.parametrize("name", BAD_VALUES)
@pytest.mark.parametrize("caught", [ValueError, RuntimeError])
def test_a_bad_value_is_caught_as_either_class(name, caught):
    with pytest.raises(caught) as info:
        BAD_VALUES[name]()
    assert isinstance(info.value, ArgumentError), type(info.value).__mro__


def test_ember_raises_no_plain_value_error():
    """The rule holds across the source: a plain ``raise ValueError(`` would escape an
    ``except RuntimeError`` ported from PyTorch."""
    src = Path(ember.__file__).parent
    offenders = [f"{path.relative_to(src)}:{n}" for path in src.rglob("*.py")
                 for n, line in enumerate(path.read_text().splitlines(), 1)
                 if "raise ValueError(" in line]
    assert offenders == [], "use ember.errors.ArgumentError instead: " + ", ".join(offenders)


@pytest.mark.parametrize("value, kind", [
    (np.ones(2), "numpy.ndarray"),
    (torch.ones(2), "torch.Tensor"),
    ([1.0], "list"),
])
def test_a_foreign_array_given_for_a_tensor_is_named_with_its_package(value, kind):
    # (a NumPy array or PyTorch tensor failed deep inside: AttributeError "'Float64DType'
    # object has no attribute 'category'"; check_tensors said "got Tensor" for torch's)
    with pytest.raises(TypeError, match=rf"exp\(\): argument 'input' must be Tensor, not {kind}"):
        ember.exp(value)
    with pytest.raises(TypeError, match=rf"pad: input must be a Tensor, got {kind}"):
        F.pad(value, (1, 1))


@pytest.mark.parametrize("call, message", [
    (lambda: ember.cat([ember.ones(2), np.ones(2)]),
     "cat(): argument 'tensors' must hold Tensors, not numpy.ndarray"),
    (lambda: F.linear(np.ones((2, 2)), ember.ones(2, 2)),
     "linear(): argument 'input' must be Tensor, not numpy.ndarray"),
    (lambda: F.conv1d(ember.ones(1, 2, 3), np.ones((2, 2, 2))),
     "conv1d(): argument 'weight' must be Tensor, not numpy.ndarray"),
    (lambda: F.linear(ember.ones(2, 2), ember.ones(2, 2), np.ones(2, np.float32)),
     "linear(): argument 'bias' must be Tensor, not numpy.ndarray"),
    (lambda: F.conv1d(ember.ones(1, 2, 3), ember.ones(2, 2, 2), torch.ones(2)),
     "conv1d(): argument 'bias' must be Tensor, not torch.Tensor"),
    (lambda: ember.matmul(ember.ones(2, 2), torch.ones(2, 2)),
     "matmul(): argument 'other' must be Tensor, not torch.Tensor"),
], ids=["cat", "linear", "conv1d", "linear-bias", "conv1d-bias", "matmul-torch"])
def test_foreign_arrays_in_lists_linear_and_conv_are_named(call, message):
    # (review48h: each read a NumPy dtype's attribute deep inside, an AttributeError)
    with pytest.raises(TypeError) as info:
        call()
    assert message in str(info.value)
