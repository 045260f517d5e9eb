"""Elementwise ops on nested tensors with nested operands given anywhere (``clamp``'s bounds,
keywords), against torch.nested (jagged)."""

import numpy as np
import pytest
import torch

import ember
from tests.nested.helpers import assert_close, pair


def test_clamp_takes_nested_bounds_as_torch():
    nt, tnt = pair()
    lo, tlo = nt * 0.5, tnt * 0.5
    assert_close(ember.clamp(nt, lo), torch.clamp(tnt, tlo))
    assert_close(nt.clamp(min=lo), tnt.clamp(min=tlo))
    assert_close(nt.clone().clamp_(lo), tnt.clone().clamp_(tlo))
    assert_close(nt.clone().clamp_(min=lo), tnt.clone().clamp_(min=tlo))
    # (torch refuses a nested max= and both bounds nested; per element they are these)
    x, low = nt.values().numpy(), lo.values().numpy()
    np.testing.assert_allclose(nt.clip(max=lo).values().numpy(), np.minimum(x, low))
    np.testing.assert_allclose(nt.clamp(lo, lo + 0.1).values().numpy(), np.clip(x, low, low + 0.1))


def test_clamp_bound_gradients_reach_the_nested_bound():
    nt, _ = pair()
    lo = (nt * 0.5).detach().requires_grad_()
    nt.clamp(min=lo).sum().backward()
    want = (nt.values() < lo.values()).double()
    np.testing.assert_array_equal(lo.grad.values().numpy(), want.numpy())


# (name, fn(lib, x)): torch.nested's elementwise methods and functions Ember lacked
METHODS = [
    ("sinc", lambda lib, x: x.sinc()), ("erfc", lambda lib, x: x.erfc()),
    ("lgamma", lambda lib, x: x.abs().lgamma()),
    ("digamma", lambda lib, x: (x.abs() + 1).digamma()),
    ("logit", lambda lib, x: x.sigmoid().logit()), ("deg2rad", lambda lib, x: x.deg2rad()),
    ("fix", lambda lib, x: (3 * x).fix()), ("positive", lambda lib, x: +x.positive()),
    ("signbit", lambda lib, x: x.signbit()), ("isposinf", lambda lib, x: (x / 0).isposinf()),
    ("divide", lambda lib, x: x.divide(x + 2)), ("multiply", lambda lib, x: x.multiply(2.0)),
    ("subtract", lambda lib, x: x.subtract(x * x, alpha=2)),
    ("greater", lambda lib, x: x.greater(0.1)),
    ("hypot", lambda lib, x: x.hypot(x * 2)), ("copysign", lambda lib, x: x.copysign(-1.0)),
    ("logaddexp", lambda lib, x: x.logaddexp(x * 3)),
    ("xlogy", lambda lib, x: x.xlogy(x.abs() + 1)),
    ("fmax", lambda lib, x: x.fmax(x * -1)),
    ("float_power", lambda lib, x: x.abs().float_power(1.5)),
    ("logical_and", lambda lib, x: x.logical_and(x > 0)),
    ("clamp_min", lambda lib, x: x.clamp_min(0.1)),
    ("clamp_max", lambda lib, x: x.clamp_max(0.1)), ("arctan2", lambda lib, x: x.arctan2(x + 1)),
    ("floor_", lambda lib, x: (x * 3).floor_()), ("neg_", lambda lib, x: x.clone().neg_()),
    ("hypot_", lambda lib, x: x.clone().hypot_(x)),
    ("clamp_min_", lambda lib, x: x.clone().clamp_min_(0.0)),
    ("byte", lambda lib, x: (x > 0).byte()), ("short", lambda lib, x: (x * 9).short()),
    ("ember.sinc", lambda lib, x: lib.sinc(x)), ("ember.hypot", lambda lib, x: lib.hypot(x, x)),
    ("ember.clamp_min", lambda lib, x: lib.clamp_min(x, 0.0)),
    ("ember.logical_xor", lambda lib, x: lib.logical_xor(x > 0, x > 0.5)),
    ("ember.divide", lambda lib, x: lib.divide(x, 2.0)),
]


@pytest.mark.parametrize("name, fn", METHODS, ids=[c[0] for c in METHODS])
def test_elementwise_methods_match_torch(name, fn):
    nt, tnt = pair()
    got, want = fn(ember, nt), fn(torch, tnt)
    assert str(got.dtype).split(".")[-1] == str(want.dtype).split(".")[-1]
    assert_close(got, want)


def test_elementwise_method_gradients_match_torch():
    nt, tnt = pair(requires_grad=True)
    nt.hypot(nt * 2).xlogy(nt.abs() + 1).sum().backward()
    tnt.hypot(tnt * 2).xlogy(tnt.abs() + 1).values().sum().backward()
    assert_close(nt.grad, tnt.grad)


# binary functions with the nested tensor second (a dense tensor or a number first)
DENSE_FIRST = [
    ("hypot", lambda lib, x: lib.hypot(lib.ones(4, dtype=lib.float64), x)),
    ("logical_and", lambda lib, x: lib.logical_and(lib.ones(4, dtype=lib.float64), x > 0)),
    ("copysign", lambda lib, x: lib.copysign(lib.ones(4, dtype=lib.float64), x)),
    ("fmax", lambda lib, x: lib.fmax(lib.zeros(4, dtype=lib.float64), x)),
    ("xlogy", lambda lib, x: lib.special.xlogy(2.0, x.abs())),
    ("clamp_min", lambda lib, x: lib.clamp_min(lib.zeros(4, dtype=lib.float64), x)),
    ("clamp_max", lambda lib, x: lib.clamp_max(lib.zeros(4, dtype=lib.float64), x)),
    ("clamp", lambda lib, x: lib.clamp(lib.zeros(4, dtype=lib.float64), min=x)),
    ("clamp_int", lambda lib, x: lib.clamp(lib.zeros(4, dtype=lib.int64), min=x)),
    ("float_power", lambda lib, x: lib.float_power(2.0, x)),
    ("igamma", lambda lib, x: lib.igamma(lib.ones(4, dtype=lib.float64), x.abs())),
    ("igammac", lambda lib, x: lib.igammac(lib.ones(4, dtype=lib.float64), x.abs())),
    ("special.gammainc", lambda lib, x: lib.special.gammainc(lib.ones(4, dtype=lib.float64),
                                                             x.abs())),
    ("method_igamma", lambda lib, x: lib.ones(4, dtype=lib.float64).igamma(x.abs())),
    ("method_logical_and", lambda lib, x: lib.ones(4, dtype=lib.float64).logical_and(x > 0)),
    ("method_logical_xor", lambda lib, x: lib.zeros(4, dtype=lib.float64).logical_xor(x)),
]


@pytest.mark.parametrize("name, fn", DENSE_FIRST, ids=[c[0] for c in DENSE_FIRST])
def test_binary_functions_take_the_nested_tensor_second_as_torch(name, fn):
    nt, tnt = pair()
    assert_close(fn(ember, nt), fn(torch, tnt))


def test_float_power_function_takes_the_nested_tensor_first_with_a_number_exponent():
    # (it said "needs a tensor input or exponent, got NestedTensor and float")
    nt, tnt = pair()
    for exponent in (2.0, 3):
        assert_close(ember.float_power(nt, exponent), torch.float_power(tnt, exponent))


def test_logical_in_place_and_out_into_a_dense_tensor_of_a_nested_operand_are_clear_errors():
    nt, _ = pair()
    with pytest.raises(TypeError, match="logical_or_: the result is a NestedTensor"):
        ember.zeros(4, dtype=ember.float64).logical_or_(nt)
    with pytest.raises(TypeError, match="logical_and.*out= takes dense tensor results"):
        ember.logical_and(ember.zeros(4), nt, out=ember.zeros(4, dtype=ember.bool))


def test_where_method_reads_self_as_the_input_as_torch():
    nt, tnt = pair()
    other, tother = nt * 2, tnt * 2
    assert_close(nt.where(nt > 0, other), tnt.where(tnt > 0, tother))
    assert_close(nt.where(nt > 0, 0.0), tnt.where(tnt > 0, 0.0))


def test_lerp_detach_in_place_and_value_queries_as_torch():
    nt, tnt = pair()
    assert_close(nt.clone().lerp_(nt * 2, 0.3), tnt.clone().lerp_(tnt * 2, 0.3))
    x, tx = (nt * 2).detach_(), (tnt * 2).detach_()
    assert_close(x, tx)
    assert x.grad_fn is None and tx.grad_fn is None
    for name in ("ndimension", "is_signed", "is_conj", "is_neg", "is_inference", "get_device"):
        assert getattr(nt, name)() == getattr(tnt, name)(), name
    assert_close(nt.new_tensor([1.0, 2.0]), tnt.new_tensor([1.0, 2.0]))
    assert nt.new_tensor([1, 2]).dtype == ember.float64  # (the values' dtype, as torch)
    assert tnt.new_tensor([1, 2]).dtype == torch.float64


def _integer_pair():
    parts = [[[1, 2, 3]], [[4, 6, 8], [3, 5, 7]]]
    return (ember.nested.nested_tensor([ember.tensor(p) for p in parts]),
            torch.nested.nested_tensor([torch.tensor(p) for p in parts], layout=torch.jagged))


INTEGER_CALLS = [
    lambda lib, nt, d: nt.gcd(nt), lambda lib, nt, d: nt.lcm(d), lambda lib, nt, d: d.gcd(nt),
    lambda lib, nt, d: lib.lcm(d, nt), lambda lib, nt, d: nt.bitwise_left_shift(nt),
    lambda lib, nt, d: lib.bitwise_right_shift(nt, d), lambda lib, nt, d: nt << d,
    lambda lib, nt, d: d << nt, lambda lib, nt, d: nt >> 1, lambda lib, nt, d: d >> nt,
    lambda lib, nt, d: 1 << nt, lambda lib, nt, d: nt.clone().bitwise_left_shift_(d),
]


@pytest.mark.parametrize("call", INTEGER_CALLS, ids=range(len(INTEGER_CALLS)))
def test_gcd_lcm_and_shifts_as_torch(call):
    # (they raised "gcd: not supported for nested tensors"; the shift operators a TypeError)
    nt, tnt = _integer_pair()
    got = call(ember, nt, ember.tensor([2, 4, 1]))
    assert_close(got, call(torch, tnt, torch.tensor([2, 4, 1])))


def test_shift_in_place_operator_writes_the_values():
    nt, tnt = _integer_pair()
    original = nt
    nt <<= ember.tensor([2, 4, 1])
    tnt <<= torch.tensor([2, 4, 1])
    assert nt is original
    assert_close(nt, tnt)
