"""A list or NumPy array where an op takes a tensor: PyTorch's ``TypeError`` naming the op and
the argument, never an ``AttributeError`` from inside Ember."""

import numpy as np
import pytest
import torch

import ember

CASES = [
    ("exp", lambda lib: lib.exp([1.0, 2.0]), "input"),
    ("sum", lambda lib: lib.sum(np.ones(2)), "input"),
    ("fft", lambda lib: lib.fft.fft([1.0, 2.0]), "input"),
    ("cat", lambda lib: lib.cat([lib.ones(2), [1.0]]), "tensors"),
    ("leaky_relu", lambda lib: lib.nn.functional.leaky_relu([1.0]), "input"),
    ("exp", lambda lib: lib.exp(None), "input"),
]


@pytest.mark.parametrize("op,call,argument", CASES, ids=[f"{c[0]}{i}" for i, c in enumerate(CASES)])
def test_non_tensor_argument_is_a_type_error_naming_it(op, call, argument):
    with pytest.raises(TypeError):
        call(torch)
    with pytest.raises(TypeError, match=f"{op}\\(\\): argument '{argument}' must"):
        call(ember)


def test_an_attribute_error_of_a_tensor_argument_is_left_alone():
    class Odd(ember.Tensor):  # (a subclass whose own code fails: not a wrong argument)
        @property
        def dtype(self):
            raise AttributeError("broken dtype")

    with pytest.raises(AttributeError):
        ember.nn.functional.leaky_relu(Odd(ember.ones(2)))
