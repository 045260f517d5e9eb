"""A PyTorch dtype given to Ember: a DTypeError hinting Ember's own dtype only where Ember has
it, and the same error for ``t.to(torch.float32)`` (positional) as for ``dtype=``."""

import pytest
import torch

import ember
from ember.errors import ArgumentTypeError, DeviceError, DTypeError


@pytest.mark.parametrize("name", ["float32", "qint8"])
def test_a_torch_dtype_ember_has_is_hinted(name):
    with pytest.raises(DTypeError, match=rf"torch\.{name}\. Hint: use Ember's, ember\.{name}"):
        ember.zeros(2, dtype=getattr(torch, name))


def test_a_torch_dtype_ember_lacks_gets_no_hint():
    with pytest.raises(DTypeError, match=r"cannot read a dtype from torch\.int4$"):
        ember.zeros(2, dtype=torch.int4)


@pytest.mark.parametrize("args", [(torch.float32,), ("cpu", torch.float32)])
def test_to_with_a_positional_torch_dtype_names_the_dtype(args):
    with pytest.raises(DTypeError, match=r"torch\.float32\. Hint: use Ember's, ember\.float32"):
        ember.ones(2).to(*args)


@pytest.mark.parametrize("args, kwargs, error, match", [
    (("float64",), {}, DeviceError, r"'float64' is a dtype name.*to\(ember\.float64\)"),
    (("double",), {}, DeviceError, r"to\(ember\.float64\)"),
    (("cpu", "float64"), {}, ArgumentTypeError, r"dtype must be a dtype, not str \(pass ember"),
    ((), {"dtype": "float64"}, ArgumentTypeError, r"not str \(pass ember\.float64"),
    ((), {"device": "int64"}, DeviceError, r"'int64' is a dtype name"),
])
def test_to_refuses_a_dtype_given_as_a_string(args, kwargs, error, match):
    # (torch: RuntimeError "Invalid device string: 'float64'", or a TypeError for dtype=str)
    with pytest.raises((RuntimeError, TypeError)):
        torch.ones(2).to(*args, **kwargs)
    with pytest.raises(error, match=match):
        ember.ones(2).to(*args, **kwargs)
    with pytest.raises(error, match=match):
        ember.nn.Linear(2, 2).to(*args, **kwargs)


def test_to_keeps_its_positional_targets():
    x = ember.ones(2)
    assert x.to(ember.float64).dtype is ember.float64
    assert x.to("cpu") is x and x.to(ember.device("cpu")) is x
    assert x.to("cpu", ember.int64).dtype is ember.int64
