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


@pytest.mark.parametrize("op, call", [
    ("add", lambda lib, t: t + [1.0, 2.0]),
    ("mul", lambda lib, t: t * None),
    ("add", lambda lib, t: t.add_([1.0, 2.0])),
    ("maximum", lambda lib, t: lib.maximum(t, "a")),
    ("where", lambda lib, t: lib.where(t > 0, [1.0], 2.0)),
    ("atan2", lambda lib, t: lib.atan2(t, [1.0, 2.0])),
    ("pow", lambda lib, t: t ** None),
    ("clamp", lambda lib, t: t.clamp([0.0])),
])
def test_an_operand_of_another_type_names_the_op(op, call):
    """PyTorch refuses these operands with a TypeError; Ember's names the op (it named its own
    internal dtype rule, result_type) and leaves the tensor unchanged."""
    t = ember.ones(2)
    with pytest.raises(TypeError, match=rf"^{op}\(\): cannot take an operand of type "):
        call(ember, t)
    assert t.tolist() == [1.0, 1.0]
    with pytest.raises(TypeError):
        call(torch, torch.ones(2))
