"""Messages that refuse a non-Ember operand name a foreign type with its package: a PyTorch
tensor is 'torch.Tensor', not a bare 'Tensor' that reads as if an Ember tensor were refused."""

import fractions

import numpy as np
import pytest
import torch

import ember

E, T = ember.ones(2), torch.ones(2)
CALLS = {
    r"mul\(\): cannot take an operand of type torch\.Tensor":
        lambda: ember.mul(E, torch.tensor(2.0)),
    "isclose: input must be a tensor, got torch.Tensor": lambda: ember.isclose(T, E),
    "rad2deg: input must be a tensor, got torch.Tensor": lambda: ember.rad2deg(T),
    "einsum: operand 1 must be a Tensor, got torch.Tensor": lambda: ember.einsum("i,i->", E, T),
    "scatter_reduce: src must be a tensor, got torch.Tensor":
        lambda: E.scatter_reduce(0, ember.zeros(2, dtype=ember.int64), T, "sum"),
    "lstm: expected a tensor input, got torch.Tensor":
        lambda: ember.lstm(T, (E, E), [E], False, 1, 0.0, False, False, False),
    "i0: expected a tensor, got torch.Tensor": lambda: ember.special.i0(T),
    "zeta: expected at least one tensor, got torch.Tensor and torch.Tensor":
        lambda: ember.special.zeta(T, T),
    "float_power: needs a tensor input or exponent, got torch.Tensor and torch.Tensor":
        lambda: ember.float_power(T, T),
    "searchsorted: sorted_sequence must be a tensor, got torch.Tensor":
        lambda: ember.searchsorted(T, E),
    "get_device: expected a tensor, got torch.Tensor": lambda: ember.get_device(T),
    "to_dlpack: expected an ember.Tensor, got torch.Tensor":
        lambda: ember.utils.dlpack.to_dlpack(T),
    "unravel_index: expected a tensor of indices, got torch.Tensor":
        lambda: ember.unravel_index(T, (2,)),
    r"add\(\): out must be a Tensor or a tuple of Tensors, got torch\.Tensor":
        lambda: ember.add(E, E, out=T),
    r"set_: expected a tensor, a storage or nothing, got torch\.Tensor": lambda: E.set_(T),
    r"new: expected sizes \(ints\), a sequence of data or a tensor, got torch\.Tensor":
        lambda: E.new(T),
    r"LSTM: hx must be a tuple \(h_0, c_0\) .*, got torch\.Tensor":
        lambda: ember.nn.LSTM(2, 3)(ember.ones(1, 1, 2), T),
    r"LSTMCell: hx must be a tuple \(h, c\) .*, got torch\.Tensor":
        lambda: ember.nn.LSTMCell(2, 3)(ember.ones(1, 2), T),
    r"FloatTensor: expected sizes \(ints\) or one sequence of data, got \(torch\.Tensor, "
    r"torch\.Tensor\)": lambda: ember.FloatTensor(T, T),
    "pad_packed_sequence: expected a PackedSequence, got torch.Tensor":
        lambda: ember.nn.utils.rnn.pad_packed_sequence(T),
    "input_size should be of type int, got: torch.Tensor": lambda: ember.nn.LSTM(T, 2),
    "hidden_size should be of type int, got: numpy.ndarray": lambda: ember.nn.GRU(2, np.ones(2)),
    "from_dlpack: expected an object with __dlpack__ .*, got fractions.Fraction":
        lambda: ember.from_dlpack(fractions.Fraction(1, 2))}


@pytest.mark.parametrize("message", list(CALLS))
def test_a_pytorch_tensor_is_named_torch_tensor(message):
    with pytest.raises(TypeError, match=message):
        CALLS[message]()


def test_a_numpy_array_is_named_numpy_ndarray():
    with pytest.raises(TypeError, match="einsum: operand 0 must be a Tensor, got numpy.ndarray"):
        ember.einsum("i->", np.ones(2))
