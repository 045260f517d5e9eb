"""What nested tensors refuse (as torch.nested's jagged layout does) raises an ember.errors
class naming the op, still a RuntimeError/IndexError/TypeError as PyTorch's errors are."""

import pytest
import torch

import ember
import ember.nn.functional as F
from ember.errors import ArgumentError, ArgumentTypeError, EmberError, IndexOutOfRange, ShapeError
from tests.nested.helpers import pair


def other():
    return pair(seed=1)[0]  # the same lengths, another ragged structure


def implicit_softmax(x):
    with pytest.warns(UserWarning, match="Implicit dimension"):  # (torch's deprecation)
        return x.softmax()


CASES = [
    ("size", lambda x: x.size(3), IndexOutOfRange),
    ("nested_tensor_from_jagged", lambda x: ember.nested.nested_tensor_from_jagged(
        x.values(), x.offsets(), jagged_dim=0), IndexOutOfRange),
    ("nested.narrow", lambda x: ember.nested.narrow(ember.ones(2, 3, 4), 2, 0, 1), ArgumentError),
    ("masked_select", lambda x: ember.nested.masked_select(x, x > 0), ArgumentTypeError),
    ("to_padded_tensor", lambda x: ember.nested.to_padded_tensor(ember.ones(2), 0.0),
     ArgumentTypeError),
    ("unbind", lambda x: x.unbind(1), ArgumentError),
    ("add", lambda x: x + ember.ones(3, 2, 4), ShapeError),
    ("mul", lambda x: x * other(), ShapeError),
    ("copy_", lambda x: x.clone().copy_(other()), ShapeError),
    ("cat", lambda x: ember.cat([x, other()], -1), ShapeError),
    ("cat", lambda x: ember.cat([x, ember.ones(3, 1, 4)], -1), ArgumentTypeError),
    ("sum", lambda x: x.sum(0), ArgumentError),
    ("amax", lambda x: x.amax((1, 2)), ArgumentError),
    ("softmax", lambda x: F.softmax(x, 0), ArgumentError),
    ("softmax", implicit_softmax, ArgumentError),  # (the implicit dim 0 of a 3-d one)
    ("transpose", lambda x: x.transpose(0, 1), ArgumentError),
    ("flatten", lambda x: x.flatten(1, 2), ArgumentError),
    ("unsqueeze", lambda x: x.unsqueeze(0), ArgumentError),
    ("chunk", lambda x: x.chunk(2, 1), ArgumentError),
    ("stack", lambda x: ember.stack([x, x], 0), ArgumentError),
    ("reshape", lambda x: x.reshape(-1, 8), ShapeError),
    ("view", lambda x: x.transpose(1, 2).view(3, 2, 2, -1), ShapeError),
    ("linear", lambda x: F.linear(x.transpose(1, 2), ember.ones(5, 3)), ShapeError),
    ("layer_norm", lambda x: F.layer_norm(x, (3, 4)), ShapeError),
    ("scaled_dot_product_attention", lambda x: F.scaled_dot_product_attention(x, x, x),
     ShapeError),
    ("scaled_dot_product_attention", lambda x: F.scaled_dot_product_attention(
        x.unsqueeze(1), ember.ones(3, 1, 2, 4), x.unsqueeze(1)), ArgumentTypeError),
]


@pytest.mark.parametrize("op, fn, error", CASES, ids=[f"{c[0]}-{i}" for i, c in enumerate(CASES)])
def test_refusal_is_an_ember_error_naming_the_op(op, fn, error):
    nt, _ = pair()
    with pytest.raises(error) as info:
        fn(nt)
    assert isinstance(info.value, EmberError) and str(info.value).startswith(op)


@pytest.mark.parametrize("args", [lambda x, m: (m.ones(4, 4, dtype=m.float64), x),
                                  lambda x, m: (x, x)], ids=["dense-input", "nested-input"])
def test_linear_with_a_nested_weight_is_refused_as_torch(args):
    # review56c item 1: since 1925d01f linear hands over for a tensor-like weight, and the
    # nested handler read the dense input's _ragged_idx (AttributeError); torch: ValueError
    # "NestedTensor linear_default(...): expected input to be a ... NestedTensor"
    nt, tnt = pair()
    with pytest.raises(ValueError):
        torch.nn.functional.linear(*args(tnt, torch))
    with pytest.raises(ArgumentError, match=r"linear: a nested tensor is taken as the input, "
                                            r"not the weight"):
        F.linear(*args(nt, ember))
