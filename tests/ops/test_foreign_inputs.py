"""A PyTorch tensor or NumPy array where an op takes an Ember tensor: a TypeError naming the
op, the argument and the foreign type, raised by the shared helpers the ops read their input
through (to_float, accumulation_input, clone, contiguous, transpose, where, layout), not an
AttributeError about 'torch.dtype' or '_data' from deep inside."""

import numpy as np
import pytest
import torch

import ember

F = ember.nn.functional
CALLS = {
    "tanh": lambda x: ember.tanh(x),
    "sigmoid": lambda x: F.sigmoid(x),
    "sum": lambda x: ember.sum(x),
    "cumsum": lambda x: ember.cumsum(x, 0),
    "corrcoef": lambda x: ember.corrcoef(x),
    "transpose": lambda x: ember.transpose(x, 0, 1),
    "clone": lambda x: ember.clone(x),
    "logsigmoid": lambda x: F.logsigmoid(x),
    "hardshrink": lambda x: F.hardshrink(x),
    "softshrink": lambda x: F.softshrink(x)}


@pytest.mark.parametrize("op", list(CALLS))
@pytest.mark.parametrize("kind", ["torch.Tensor", "numpy.ndarray"])
def test_a_foreign_input_is_named(op, kind):
    x = torch.ones(2, 2) if kind == "torch.Tensor" else np.ones((2, 2), np.float32)
    with pytest.raises(TypeError, match=rf"{op}\(\): argument '\w+' must be Tensor, not "
                                        rf"{kind}\. Hint"):
        CALLS[op](x)
    with pytest.raises(TypeError):  # (PyTorch refuses it too)
        getattr(torch, op)(np.ones((2, 2)), 0, 1) if op == "transpose" else \
            (getattr(torch, op, None) or getattr(torch.nn.functional, op))(np.ones((2, 2)))


def test_a_pytorch_dtype_is_named_with_a_hint():
    with pytest.raises(TypeError, match=r"cannot read a dtype from torch\.float32\. Hint: use "
                                        r"Ember's, ember\.float32"):
        ember.zeros(2, dtype=torch.float32)


def test_ember_inputs_still_work():
    x = ember.tensor([[1.0, -2.0], [0.25, 3.0]])
    t = torch.tensor(x.numpy())
    assert np.allclose(F.hardshrink(x).numpy(), torch.nn.functional.hardshrink(t).numpy())
    assert np.allclose(ember.sum(x.int()).numpy(), torch.sum(t.int()).numpy())
    assert np.allclose(F.logsigmoid(x).numpy(), torch.nn.functional.logsigmoid(t).numpy())


@pytest.mark.parametrize("op", ["logical_and", "logical_or", "logical_xor"])
def test_logical_ops_name_a_foreign_operand(op):
    # (was bool() of the array: "Boolean value of Tensor with more than one value is ambiguous")
    with pytest.raises(TypeError, match=rf"{op}\(\): argument 'other' must be Tensor, not "
                                        r"torch\.Tensor"):
        getattr(ember, op)(ember.ones(2), torch.ones(2))
    with pytest.raises(TypeError, match=r"argument 'input' must be Tensor, not numpy\.ndarray"):
        getattr(ember, op)(np.ones(2), ember.ones(2))
    assert getattr(ember, op)(ember.tensor([0.0, 2.0]), 1).tolist() == \
        getattr(torch, op)(torch.tensor([0.0, 2.0]), torch.tensor(1)).tolist()


@pytest.mark.parametrize("op", ["clamp_", "zero_", "fill_"])
def test_in_place_function_forms_refuse_a_pytorch_tensor(op):
    # (getattr found torch's own method: ember.clamp_(torch_t, 0) returned a torch.Tensor)
    args = {"clamp_": (0,), "zero_": (), "fill_": (1.0,)}[op]
    with pytest.raises(TypeError, match=rf"{op}\(\): argument 'input' must be Tensor, not "
                                        r"torch\.Tensor"):
        getattr(ember, op)(torch.ones(2), *args)
    assert getattr(ember, op)(ember.ones(2), *args).tolist() == \
        getattr(torch, op)(torch.ones(2), *args).tolist()
