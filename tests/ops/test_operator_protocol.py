"""``t <op> obj`` gives way to ``obj``'s reflected method, as PyTorch's operators do."""

import fractions
import operator

import numpy as np
import pytest
import torch

import ember

OPERATORS = {operator.add: "__radd__", operator.sub: "__rsub__", operator.mul: "__rmul__",
             operator.truediv: "__rtruediv__", operator.floordiv: "__rfloordiv__",
             operator.mod: "__rmod__", operator.pow: "__rpow__", operator.matmul: "__rmatmul__",
             operator.and_: "__rand__", operator.or_: "__ror__", operator.xor: "__rxor__",
             operator.lshift: "__rlshift__", operator.rshift: "__rrshift__"}
IN_PLACE = {operator.iadd: "__radd__", operator.isub: "__rsub__", operator.imul: "__rmul__",
            operator.itruediv: "__rtruediv__", operator.iand: "__rand__",
            operator.ilshift: "__rlshift__"}


def reflecting(name):
    """An object whose reflected method ``name`` answers with its name."""
    return type("Reflecting", (), {name: lambda self, other: name})()


@pytest.mark.parametrize("op", list(OPERATORS) + list(IN_PLACE), ids=lambda op: op.__name__)
def test_an_operand_with_the_reflected_method_computes_the_result(op):
    name = {**OPERATORS, **IN_PLACE}[op]
    for m in (torch, ember):
        assert op(m.tensor([1, 2]), reflecting(name)) == name


def test_python_calls_through_operator_and_sum_give_way_too():
    obj = reflecting("__radd__")
    assert sum([obj], ember.ones(2)) == sum([obj], torch.ones(2)) == "__radd__"


@pytest.mark.parametrize("seq", [[1, 2], "ab"])
def test_an_integer_tensor_of_one_element_repeats_a_sequence(seq):
    assert ember.tensor(2) * seq == torch.tensor(2) * seq == seq * 2
    with pytest.raises(TypeError, match="one element|single element"):
        ember.tensor([1, 2]) * seq


@pytest.mark.parametrize("other", [None, [1, 2], (1, 2), object()],
                         ids=["None", "list", "tuple", "object"])
def test_an_operand_without_a_reflected_method_keeps_embers_hint(other):
    with pytest.raises(TypeError, match=r"add\(\): cannot take an operand of type .*Hint"):
        ember.tensor([1, 2]) + other


def test_a_number_that_declines_ends_in_pythons_type_error_as_torchs():
    for m in (torch, ember):
        with pytest.raises(TypeError, match="unsupported operand type"):
            m.tensor([1, 2]) + fractions.Fraction(1, 2)


def test_operands_ember_takes_keep_the_ops_own_error():
    with pytest.raises(ember.DTypeError, match="sub: subtraction"):
        ember.tensor([True]) - True
    with pytest.raises(TypeError, match="cannot take an operand of type numpy.ndarray"):
        ember.tensor([1, 2]) + np.array([reflecting("__radd__")] * 2, dtype=object)


def test_the_functions_still_refuse_the_operand():
    with pytest.raises(TypeError, match=r"cannot take an operand of type \S*Reflecting\."):
        ember.add(ember.tensor([1, 2]), reflecting("__radd__"))


def test_the_operators_keep_their_names_and_results():
    assert ember.Tensor.__add__.__name__ == "add"
    x = ember.tensor([1.0, 2.0], requires_grad=True)
    (x * x + 1).sum().backward()
    np.testing.assert_array_equal(x.grad.numpy(), [2.0, 4.0])


@pytest.mark.parametrize("left", [[0], (0, 1), "ab", b"ab"])
def test_a_sequence_on_the_left_is_handed_back_before_the_op(monkeypatch, left):
    # review49f F5: no Ember error is built (each walks stack frames, ~70 us) to learn that
    # the op refuses a sequence: Python's own rule answers, as PyTorch's
    def refuse(self, *args, **kwargs):
        raise AssertionError("an Ember error was built")
    monkeypatch.setattr(ember.errors.EmberError, "__init__", refuse)
    n = ember.tensor(2)
    assert left * n == left * 2
    for op in (operator.add, operator.sub, operator.truediv, operator.pow):
        with pytest.raises(TypeError):
            op(left, n)


@pytest.mark.parametrize("right", [[0], (0, 1), "ab", b"ab", bytearray(b"ab")])
def test_a_sequence_on_the_right_is_handed_back_before_the_op(monkeypatch, right):
    # mend50sparse: ``n * [0]`` built the op's error (~75 us) before list.__rmul__ answered
    def refuse(self, *args, **kwargs):
        raise AssertionError("an Ember error was built")
    n = ember.tensor(2)
    monkeypatch.setattr(ember.errors.EmberError, "__init__", refuse)
    assert n * right == right * 2
    x = ember.tensor(3)
    with pytest.raises(TypeError, match="unsupported operand"):  # (as torch's: Python's
        x *= right  # in-place repeat asks the left operand only)
    monkeypatch.undo()
    with pytest.raises(TypeError, match=r"add\(\): cannot take an operand"):
        n + right  # (no __radd__: Ember's error, as before)
