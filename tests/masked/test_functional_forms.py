"""``ember.<op>(mt)``, the function form of MaskedTensor ops, against ``torch.<op>(mt)``: unary
ops, reductions, shape ops, softmax, cat/stack and where hand a MaskedTensor to its methods (they
used to raise an AttributeError about ``_device``, or compute on the raw data's graph)."""

import warnings

import numpy as np
import pytest
import torch

import ember
from tests.masked.test_tensor import _pair, assert_same

warnings.filterwarnings("ignore", module="torch.masked")

CALLS = [  # (function name, arguments after the MaskedTensor)
    ("exp", ()), ("abs", ()), ("sin", ()), ("clamp", (0.0, 1.0)), ("clamp", (None, 0.5)),
    ("sum", ()), ("sum", (1,)), ("sum", (0, True)), ("mean", (1,)), ("prod", (1,)),
    ("amax", (1,)), ("amax", ((0, 1),)), ("amin", (0,)), ("argmax", (1,)), ("argmin", (0,)),
    ("var", (1,)), ("std", (0,)), ("all", (1,)),
    ("softmax", (1,)), ("transpose", (0, 1)), ("reshape", ((-1,),)), ("unsqueeze", (0,)),
]


@pytest.mark.parametrize("name,args", CALLS)
def test_function_form_matches_torch(name, args):
    e, t = _pair()
    if name == "all":
        e, t = e > 0, t > 0
    assert_same(getattr(ember, name)(e, *args), getattr(torch, name)(t, *args))


@pytest.mark.parametrize("name,keywords", [
    ("var", {"correction": 0}), ("std", {"unbiased": False}), ("var", {"keepdim": True}),
])
def test_variance_options(name, keywords):
    # torch's MaskedTensor refuses unbiased/correction; Ember applies them as torch.masked.var
    e, t = _pair()
    want = getattr(torch.masked, name)(t.get_data(), 1, mask=t.get_mask(), **keywords)
    got = getattr(ember, name)(e, 1, **keywords)
    assert_same(got, torch.masked.masked_tensor(want, t.get_mask().any(1, keepdim=want.ndim > 1)))


@pytest.mark.parametrize("join", ["cat", "stack"])
def test_cat_and_stack_join_data_and_masks(join):
    e, t = _pair()
    assert_same(getattr(ember, join)([e, e], 1), getattr(torch, join)([t, t], 1))


@pytest.mark.parametrize("name", ["maximum", "minimum"])
def test_maximum_minimum(name):
    e, t = _pair()
    assert_same(getattr(ember, name)(e, e.get_data() * -1),
                getattr(torch, name)(t, t.get_data() * -1))


def test_where_chooses_masks_as_data():
    e, t = _pair()
    other_e, other_t = _pair(e.get_data().numpy() * 2, ~e.get_mask().numpy())
    cond = e.get_data() > 0
    assert_same(ember.where(cond, e, other_e),
                torch.where(torch.tensor(cond.numpy()), t, other_t))


@pytest.mark.parametrize("call", [
    lambda e, cond: e.where(cond, 0.0), lambda e, cond: ember.where(cond, e, 0.0),
    lambda e, cond: ember.where(cond, e.get_data(), 0.0)])
def test_where_refuses_a_masked_condition(call):
    e, _ = _pair()
    with pytest.raises(TypeError, match="where: the condition must be a plain bool tensor"):
        call(e, e > 0)  # (torch recurses without end; Ember did too)


def test_function_form_gradients_match_torch():
    e, t = _pair(requires_grad=True)
    ember.amax(ember.exp(e), 1).sum().backward()
    torch.amax(torch.exp(t), 1).sum().backward()
    assert_same(e.grad, t.grad)


def test_narrow_is_pass_through():
    e, t = _pair()
    assert_same(e.narrow(1, 1, 2), t.narrow(1, 1, 2))


# a dense tensor's binary method (and operator) with a MaskedTensor operand hands it over, as
# the function form does (it raised "fmod: does not take a MaskedTensor")
@pytest.mark.parametrize("name", ["fmod", "atan2", "arctan2", "logaddexp", "logaddexp2", "fmax",
                                  "fmin", "nextafter"])
def test_dense_binary_method_hands_a_masked_operand_over(name):
    e, t = _pair()
    dense, tdense = e.get_data() * 0.5 + 1.0, t.get_data() * 0.5 + 1.0
    assert_same(getattr(dense, name)(e), getattr(tdense, name)(t))


def test_dense_shift_method_and_operator_hand_a_masked_operand_over():
    e, t = _pair(np.array([[1, 2, 3], [0, 1, 2]]), np.array([[True, False, True], [True] * 3]))
    dense, tdense = ember.tensor([[4, 8, 1], [2, 3, 5]]), torch.tensor([[4, 8, 1], [2, 3, 5]])
    assert_same(dense.bitwise_left_shift(e), tdense.bitwise_left_shift(t))
    assert_same(dense << e, tdense << t)
    assert_same(dense >> e, tdense >> t)


def test_isclose_with_a_masked_operand_in_any_place():
    # (it raised "isclose: does not take a MaskedTensor"; torch keeps the MaskedTensor's mask)
    e, t = _pair()
    dense, tdense = e.get_data() + 1e-6, t.get_data() + 1e-6
    assert_same(dense.isclose(e), tdense.isclose(t))
    assert_same(ember.isclose(dense, e, atol=1e-3), torch.isclose(tdense, t, atol=1e-3))
    assert_same(e.isclose(dense, rtol=0.0, atol=0.0), t.isclose(tdense, rtol=0.0, atol=0.0))
    assert_same(e.isclose(e), t.isclose(t))
    with pytest.raises(TypeError, match=r"^isclose\(\) got an unexpected keyword"):
        e.isclose(dense, bogus=1)  # (named the private _isclose)
