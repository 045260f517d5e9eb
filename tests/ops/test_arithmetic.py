"""Arithmetic ops against PyTorch and finite differences (see optable.py)."""

import itertools
import math
import operator

import numpy as np
import pytest
import torch

import ember
from ember.errors import DivisionByZero
from tests.ops.optable import OpCase, S, arg, op_tests, raises_like_torch, same_as_torch

BINARY_SAMPLES = [
    S(arg(3, 4), arg(3, 4)),
    S(arg(3, 1), arg(4)),            # broadcasting both ways
    S(arg(2, 3, noncontig=True), arg(2, 3)),
    S(arg(), arg(2, 3)),             # 0-d with n-d
    S(arg(0, 3), arg(3)),            # empty
]
AWAY_FROM_ZERO = [S(arg(3, 4), arg(3, 4, low=0.5, high=2.0)),
                  S(arg(3, 1), arg(4, low=0.5, high=2.0)),
                  S(arg(), arg(2, 3, low=-2.0, high=-0.5))]

CASES = [
    OpCase("add", ember.add, torch.add, BINARY_SAMPLES),
    OpCase("add_alpha", lambda a, b: ember.add(a, b, alpha=2.5),
           lambda a, b: torch.add(a, b, alpha=2.5), BINARY_SAMPLES[:2]),
    OpCase("sub", ember.sub, torch.sub, BINARY_SAMPLES),
    OpCase("mul", ember.mul, torch.mul, BINARY_SAMPLES),
    OpCase("div", ember.div, torch.div, AWAY_FROM_ZERO),
    OpCase("neg", ember.neg, torch.neg, [S(arg(3, 4)), S(arg()), S(arg(2, 3, noncontig=True))]),
    OpCase("radd", lambda a: 2 + a, lambda a: 2 + a, [S(arg(3))]),
    OpCase("rsub", lambda a: 2 - a, lambda a: 2 - a, [S(arg(3))]),
    OpCase("rmul", lambda a: 3 * a, lambda a: 3 * a, [S(arg(3))]),
    OpCase("rdiv", lambda a: 3 / a, lambda a: 3 / a, [S(arg(3, low=0.5))]),
    OpCase("remainder", ember.remainder, torch.remainder,
           [S(arg(3, 4, low=0.1, high=5), arg(3, 4, low=1.1, high=1.9))], gradgrad=False),
    OpCase("floor_divide", ember.floor_divide, torch.floor_divide,
           [S(arg(3, 4, low=0.1, high=5), arg(3, 4, low=1.1, high=1.9)),
            S(arg(3, 1, low=0.1, high=5), arg(4, low=1.1, high=1.9))], grad=False),
    OpCase("fmod", ember.fmod, torch.fmod,
           [S(arg(3, 4, low=-5, high=5), arg(3, 4, low=1.1, high=1.9)),
            S(arg(3, 1, low=-5, high=5), arg(4, low=-1.9, high=-1.1))], gradgrad=False),
    OpCase("pow", ember.pow, torch.pow,
           [S(arg(3, 4, low=0.2, high=2.0), arg(3, 4)),
            S(arg(3, 1, low=0.2, high=2.0), arg(4)),
            S(arg(2, 3, low=0.2, high=2.0, noncontig=True), arg(2, 3)),
            S(arg(low=0.2, high=2.0), arg(2, 3)),
            S(arg(0, 3, low=0.2), arg(3))]),
    OpCase("pow_negative_base", ember.pow, torch.pow,
           [S(arg(3, 4), arg(3, 4, low=-3.0, high=3.0, integer=True, grad=False))]),
    OpCase("pow_scalar", lambda x: (x ** 2, x ** 3, x ** -2, x ** 0, x ** 1, ember.pow(x, 0.5)),
           lambda x: (x ** 2, x ** 3, x ** -2, x ** 0, x ** 1, torch.pow(x, 0.5)),
           [S(arg(3, 4, low=0.2)), S(arg(low=0.2)), S(arg(0, 2, low=0.2)),
            S(arg(2, 3, low=0.2, noncontig=True))]),
    OpCase("pow_scalar_negative_base", lambda x: (x ** 2, x ** 3, x ** -1),
           lambda x: (x ** 2, x ** 3, x ** -1), [S(arg(3, 4, low=-2.0, high=-0.3))]),
    OpCase("rpow", lambda x: (2 ** x, 0.5 ** x, ember.pow(3.0, x)),
           lambda x: (2 ** x, 0.5 ** x, torch.pow(3.0, x)), [S(arg(3, 4)), S(arg())]),
    OpCase("pow_method", lambda x, y: x.pow(y), lambda x, y: x.pow(y),
           [S(arg(3, low=0.5), arg(3))]),
    OpCase("addcmul", lambda a, b, c: ember.addcmul(a, b, c, value=0.5),
           lambda a, b, c: torch.addcmul(a, b, c, value=0.5),
           [S(arg(3, 4), arg(3, 1), arg(4)), S(arg(), arg(2, 3), arg(2, 3))]),
    OpCase("addcdiv", lambda a, b, c: ember.addcdiv(a, b, c, value=-2),
           lambda a, b, c: torch.addcdiv(a, b, c, value=-2),
           [S(arg(3, 4), arg(3, 1), arg(4, low=0.5, high=2.0))]),
    OpCase("lerp", lambda a, b: ember.lerp(a, b, 0.3), lambda a, b: torch.lerp(a, b, 0.3),
           BINARY_SAMPLES[:3]),
    OpCase("lerp_tensor_weight", ember.lerp, torch.lerp,
           [S(arg(3, 4), arg(3, 4), arg(3, 1, low=0.0, high=1.0))]),
]

test_forward, test_backward, test_gradcheck, test_gradgradcheck, test_jvp = op_tests(CASES)


def test_scalar_promotion_matches_torch():
    for np_dtype, scalar in [(np.int32, 2.5), (np.float32, 2.0), (np.int64, 3), (np.bool_, 1),
                             (np.uint8, -1), (np.float16, 1e-3)]:
        a = np.ones(3, dtype=np_dtype)
        for op in (operator.add, operator.mul, operator.truediv, operator.sub):
            if np_dtype is np.bool_ and op is operator.sub:
                continue
            mine = op(ember.from_numpy(a), scalar)
            ref = op(torch.from_numpy(a), scalar)
            assert mine.dtype.name == str(ref.dtype).removeprefix("torch."), (np_dtype, op)


def test_tensor_promotion_matches_torch():
    kinds = [np.bool_, np.uint8, np.int8, np.int32, np.int64, np.float16, np.float32, np.float64]
    for x in kinds:
        for y in kinds:
            a, b = np.ones(2, dtype=x), np.ones((), dtype=y)
            mine = ember.from_numpy(a) + ember.from_numpy(b)
            ref = torch.from_numpy(a) + torch.from_numpy(b)
            assert mine.dtype.name == str(ref.dtype).removeprefix("torch."), (x, y)


def test_inplace_add_bumps_version_and_keeps_history():
    x = ember.ones(3, requires_grad=True)
    y = x * 2
    v = y._version
    y += 1
    assert y._version == v + 1
    y.backward(ember.ones(3))
    np.testing.assert_allclose(x.grad.numpy(), [2, 2, 2])


INTS = np.array([2, -3, 0, 1, -1])
POW_DTYPE_CASES = [
    lambda m, x: x ** 2, lambda m, x: x ** 2.5, lambda m, x: x ** 0, lambda m, x: x ** True,
    lambda m, x: 2 ** x.abs(), lambda m, x: 2.0 ** x, lambda m, x: x.bool() ** 2,
    lambda m, x: x ** m.tensor([-1, 2, -2, -3, -1]),          # integer negative exponents
    lambda m, x: x ** m.tensor(-1), lambda m, x: x.float() ** x, lambda m, x: x ** x.float(),
    lambda m, x: x ** m.tensor(2.0), lambda m, x: x.to(m.uint8) ** 3,
    lambda m, x: x.to(m.int32) ** m.tensor(2), lambda m, x: x.double() ** 2,
    lambda m, x: x.to(m.float16) ** 2.0, lambda m, x: m.tensor(2) ** 3.0,
]


@pytest.mark.parametrize("k", range(len(POW_DTYPE_CASES)))
def test_pow_dtypes_and_values_match_torch(k):
    fn = POW_DTYPE_CASES[k]
    mine = fn(ember, ember.from_numpy(INTS))
    ref = fn(torch, torch.from_numpy(INTS))
    assert mine.dtype.name == str(ref.dtype).removeprefix("torch.")
    np.testing.assert_allclose(mine.float().numpy(), ref.float().numpy(), rtol=1e-6,
                               equal_nan=True)


def test_pow_errors():
    with pytest.raises(ember.errors.OpError, match="integers to negative integer powers"):
        ember.tensor([1, 2]) ** -1
    with pytest.raises(ember.DTypeError, match="pow: not defined for bool"):
        ember.tensor([True]) ** ember.tensor([True])
    with pytest.raises(ember.ShapeError, match="pow: shapes"):
        ember.ones(3) ** ember.ones(2)


def _pow_grads(base, exponent):
    b = ember.tensor(base, dtype=ember.float64, requires_grad=True)
    e = ember.tensor(exponent, dtype=ember.float64, requires_grad=True)
    tb = torch.tensor(base, dtype=torch.float64, requires_grad=True)
    te = torch.tensor(exponent, dtype=torch.float64, requires_grad=True)
    mine = ember.autograd.grad(b ** e, [b, e], ember.ones(len(base), dtype=ember.float64))
    ref = torch.autograd.grad(tb ** te, [tb, te], torch.ones(len(base), dtype=torch.float64))
    return [g.numpy() for g in mine], [g.numpy() for g in ref]


def test_pow_gradient_at_zero_base_and_zero_exponent_matches_torch():
    base = [0.0, 0.0, 0.0, 2.0, -1.5, 0.0, -2.0]
    exponent = [0.0, 2.0, 0.5, 0.0, 3.0, -1.0, 0.5]
    for m, r in zip(*_pow_grads(base, exponent), strict=True):
        np.testing.assert_allclose(m, r, rtol=1e-12, equal_nan=True)
    for value in [0.0, 1.0, 2.0, 0.5, -1.0]:
        x = ember.tensor([0.0, 1.5], dtype=ember.float64, requires_grad=True)
        t = torch.tensor([0.0, 1.5], dtype=torch.float64, requires_grad=True)
        (g,) = ember.autograd.grad(x ** value, x, ember.ones(2, dtype=ember.float64))
        (r,) = torch.autograd.grad(t ** value, t, torch.ones(2, dtype=torch.float64))
        np.testing.assert_allclose(g.numpy(), r.numpy(), rtol=1e-12, equal_nan=True,
                                   err_msg=f"x ** {value}")
    x = ember.tensor([0.0, -1.0], dtype=ember.float64, requires_grad=True)
    t = torch.tensor([0.0, -1.0], dtype=torch.float64, requires_grad=True)
    (g,) = ember.autograd.grad(0.0 ** x, x, ember.ones(2, dtype=ember.float64))
    (r,) = torch.autograd.grad(0.0 ** t, t, torch.ones(2, dtype=torch.float64))
    np.testing.assert_allclose(g.numpy(), r.numpy(), equal_nan=True)


def test_pow_third_derivative():
    x = ember.tensor([1.5], dtype=ember.float64, requires_grad=True)
    (g,) = ember.autograd.grad(x ** 4, x, create_graph=True)
    (gg,) = ember.autograd.grad(g, x, create_graph=True)
    (ggg,) = ember.autograd.grad(gg, x)
    assert math.isclose(ggg.item(), 24 * 1.5)


def test_inplace_pow_and_fused_forms():
    x = ember.tensor([2.0, 3.0])
    x **= 2
    assert x.tolist() == [4.0, 9.0]
    x.pow_(0.5)
    assert x.tolist() == [2.0, 3.0]
    y = ember.zeros(2)
    y.addcmul_(ember.ones(2), ember.full((2,), 3.0), value=2)
    y.addcdiv_(ember.ones(2), ember.full((2,), 2.0))
    y.lerp_(ember.zeros(2), 0.5)
    assert y.tolist() == [3.25, 3.25]
    n = ember.tensor([1, 2])
    n **= 2
    assert n.tolist() == [1, 4] and n.dtype is ember.int64


INTEGER_TRUE_DIVISIONS = [  # a scalar wrapped into the tensor's dtype first would wrap around
    lambda m: m.tensor([1, 2, 100], dtype=m.uint8) / -1,
    lambda m: m.tensor([1, 2, 100], dtype=m.int8) / 1000,
    lambda m: m.tensor([1, 2], dtype=m.int32) / 2 ** 40,
    lambda m: m.tensor([1, 2, 100], dtype=m.uint8) / m.tensor(1000),
    lambda m: -3 / m.tensor([1, 2], dtype=m.uint8),
    lambda m: m.div(m.tensor([7, -7], dtype=m.int16), 100000),
    lambda m: m.true_divide(m.tensor([5], dtype=m.uint8), -2),
    lambda m: m.tensor([True, False]) / m.tensor([True, True]),
    lambda m: m.tensor([2 ** 40 + 1]) / 1,
]


@pytest.mark.parametrize("k", range(len(INTEGER_TRUE_DIVISIONS)))
def test_integer_true_division_uses_the_operands_own_values(k):
    same_as_torch(INTEGER_TRUE_DIVISIONS[k], rtol=1e-7)


HALF_WITH_SCALARS = [  # PyTorch computes in float32 from the scalar's own value, rounds once
    lambda m: m.tensor([6e4], dtype=m.float16) * 1e-8,
    lambda m: 1e-8 * m.tensor([6e4], dtype=m.float16),
    lambda m: m.tensor([6e4], dtype=m.float16) / 1e8,
    lambda m: m.tensor([1e-3, 5.0], dtype=m.float16) * 1e5,
    lambda m: m.tensor([1e-3], dtype=m.float16) * 100000,
    lambda m: m.tensor([6e4], dtype=m.float16) * m.tensor(1e-8),
    lambda m: m.tensor([6e4], dtype=m.float16) / m.tensor(1e8, dtype=m.float64),
    lambda m: m.tensor([1e30], dtype=m.bfloat16) * 1e-40,
    lambda m: m.tensor([3.0, 1e-4], dtype=m.float16).mul_(1e5),
    # add and sub round the scalar to the tensor's dtype first, in PyTorch too
    lambda m: m.tensor([-6e4], dtype=m.float16) + 7e4,
    lambda m: m.tensor([1.0], dtype=m.float16) - 1e-4,
    lambda m: m.tensor([1.0], dtype=m.bfloat16) + 1e-3,
]


@pytest.mark.parametrize("k", range(len(HALF_WITH_SCALARS)))
def test_half_precision_with_a_scalar_matches_torch(k):
    same_as_torch(HALF_WITH_SCALARS[k])


def test_half_precision_with_a_scalar_keeps_its_gradient():
    x = ember.tensor([6e4, 2.0], dtype=ember.float16, requires_grad=True)
    (g,) = ember.autograd.grad((x * 1e-8).sum(), x)
    t = torch.tensor([6e4, 2.0], dtype=torch.float16, requires_grad=True)
    (r,) = torch.autograd.grad((t * 1e-8).sum(), t)
    assert g.dtype is ember.float16
    np.testing.assert_array_equal(g.float().numpy(), r.float().numpy())


INTEGER_BY_ZERO = [
    lambda m: m.tensor([2, 3]) // m.tensor([0, 1]),
    lambda m: m.tensor([2], dtype=m.uint8) // 0,
    lambda m: m.tensor([2], dtype=m.int8) % m.tensor([0], dtype=m.int8),
    lambda m: m.tensor([2]) % 0,
    lambda m: m.fmod(m.tensor([2], dtype=m.int32), 0),
    lambda m: m.div(m.tensor([2]), m.tensor([0]), rounding_mode="trunc"),
    lambda m: m.div(m.tensor([2]), 0, rounding_mode="floor"),
    lambda m: m.tensor([2], dtype=m.uint8) % 256,  # 256 wraps to 0 in uint8
]


@pytest.mark.parametrize("k", range(len(INTEGER_BY_ZERO)))
def test_integer_division_by_zero_raises(k):
    raises_like_torch(INTEGER_BY_ZERO[k], DivisionByZero, "integer division by zero")


def test_division_by_zero_error_is_both_runtime_and_zero_division_error():
    for error in (RuntimeError, ZeroDivisionError, ember.errors.OpError):
        with pytest.raises(error, match=r"floor_divide: .*divisor \(\) int64 holds a 0"):
            ember.tensor([2]) // 0


@pytest.mark.parametrize("fn", [
    lambda m: m.tensor([2.0, -1.0, 0.0]) // 0,                 # floats give inf and nan
    lambda m: m.tensor([2.0, -1.0, 0.0]) % 0,
    lambda m: m.tensor([2, -1, 0]) / 0,
    lambda m: m.tensor([], dtype=m.int64) // 0,                # nothing is divided
    lambda m: m.tensor([4, 5]) // m.tensor([2, 3]),
])
def test_division_by_zero_that_is_no_error(fn):
    same_as_torch(fn)


@pytest.mark.parametrize("fn", [
    lambda m: m.div(m.tensor([2 ** 60 + 1, -(2 ** 60) - 1]), 3, rounding_mode="trunc"),
    lambda m: m.div(m.tensor([2 ** 30 + 1], dtype=m.int32), 1, rounding_mode="trunc"),
    lambda m: m.div(m.tensor([-7, 7, -6, 6, 0], dtype=m.int8), m.tensor([2, -2, 3, -3, 5],
                                                                       dtype=m.int8),
                    rounding_mode="trunc"),
    lambda m: m.div(m.tensor([200, 7], dtype=m.uint8), 3, rounding_mode="trunc"),
    lambda m: m.div(m.tensor([-7.5, 7.5]), 2, rounding_mode="trunc"),
])
def test_trunc_division_is_exact(fn):
    same_as_torch(fn)


@pytest.mark.parametrize("fn,match", [
    (lambda m: m.tensor([True]) // m.tensor([True]), "floor_divide: not defined for bool"),
    (lambda m: m.tensor([True]) % m.tensor([True]), "remainder: not defined for bool"),
    (lambda m: m.fmod(m.tensor([True]), m.tensor([True])), "fmod: not defined for bool"),
    (lambda m: m.div(m.tensor([True]), m.tensor([True]), rounding_mode="trunc"),
     "div: not defined for bool"),
    (lambda m: m.tensor([True]) - m.tensor([True]), "sub: .* two bool tensors"),
    (lambda m: m.tensor([True]) - True, "sub: .* two bool tensors"),
    (lambda m: m.tensor([True]) - 1, "sub: .* a bool tensor"),
    (lambda m: 1.5 - m.tensor([True]), "sub: .* a bool tensor"),
    (lambda m: m.tensor([1]) - m.tensor([True]), "sub: .* a bool tensor"),
    (lambda m: m.rsub(m.tensor([True]), 1), "sub: .* a bool tensor"),
])
def test_bool_operands_that_torch_refuses(fn, match):
    raises_like_torch(fn, ember.DTypeError, match)


@pytest.mark.parametrize("fn", [
    lambda m: m.pow(m.tensor([True, False]), True),
    lambda m: m.tensor([True, False]) ** False,
    lambda m: m.tensor([True, False]) ** 2,
])
def test_bool_to_a_bool_power_stays_bool(fn):
    same_as_torch(fn)


@pytest.mark.parametrize("fn, match", [
    (lambda m: m.add(m.tensor([1, 2]), m.tensor([3, 4]), alpha=0.5),
     "add: for integral inputs \\(int64 and int64\\), alpha must not be a float"),
    (lambda m: m.sub(m.tensor([1, 2], dtype=m.int8), 1, alpha=2.0), "sub: .*\\(int8 and int\\)"),
    (lambda m: m.addcdiv(m.zeros(2), m.tensor([1, 2]), m.tensor([2, 2])),
     "addcdiv: integer division of tensor1 \\(int64\\) by tensor2 \\(int64\\)"),
])
def test_integer_operands_refuse_what_torch_refuses(fn, match):
    raises_like_torch(fn, ember.DTypeError, match)


@pytest.mark.parametrize("fn", [
    lambda m: m.add(m.tensor([1], dtype=m.int8), m.tensor([1], dtype=m.int8), alpha=300),
    lambda m: m.sub(m.tensor([1], dtype=m.uint8), 1, alpha=2**40),
    lambda m: m.tensor([1], dtype=m.int16).add_(m.tensor([1], dtype=m.int16), alpha=100000),
    lambda m: m.add(m.ones(1, dtype=m.float16), m.ones(1, dtype=m.float16), alpha=1e6),
    lambda m: m.add(m.ones(1), 1, alpha=1e39),
    lambda m: m.addcmul(*[m.ones(1, dtype=m.int8)] * 3, value=300),
    lambda m: m.ones(2, dtype=m.int8).index_add(0, m.tensor([0]), m.ones(1, dtype=m.int8),
                                                alpha=300),
])
def test_an_alpha_the_result_dtype_cannot_hold_is_refused_as_torch(fn):
    # (add(int8, int8, alpha=300) wrapped silently to 45; float16 alpha=1e6 gave inf)
    raises_like_torch(fn, ember.errors.ValueOverflow, "the value .* without overflow")


@pytest.mark.parametrize("fn", [
    lambda m: m.add(m.tensor([1]), m.tensor([1]), alpha=True),
    lambda m: m.sub(m.ones(1), 1, alpha=False),
])
def test_a_bool_alpha_needs_a_bool_result_as_torch(fn):
    # (add(int64, int64, alpha=True) gave 2 where torch refuses)
    raises_like_torch(fn, ember.DTypeError, "a bool alpha .* bool result")


def test_alphas_that_the_dtype_holds_still_match_torch():
    same_as_torch(lambda m: m.add(m.tensor([1], dtype=m.uint8), 1, alpha=-255))
    same_as_torch(lambda m: m.add(m.tensor([True]), True, alpha=True))
    same_as_torch(lambda m: m.addcmul(*[m.ones(2, dtype=m.float16)] * 3, value=1e6))
    same_as_torch(lambda m: m.ones(2).index_add(0, m.tensor([0]), m.ones(1), alpha=True))


def test_float_alpha_with_a_float_operand_is_accepted():
    same_as_torch(lambda m: m.add(m.tensor([1, 2]), m.tensor([0.5, 1.0]), alpha=0.5))
    same_as_torch(lambda m: m.addcdiv(m.tensor([1, 2]), m.tensor([1.0, 2.0]), m.tensor([2, 4])))


@pytest.mark.parametrize("mode", ["floor", "trunc"])
def test_rounded_division_has_a_zero_gradient_as_torch(mode):
    def run(lib):
        x = lib.tensor([1.5, -2.5, 3.0], dtype=lib.float64, requires_grad=True)
        w = lib.tensor([2.0, 1.5, -0.5], dtype=lib.float64, requires_grad=True)
        y = lib.div(x, w, rounding_mode=mode)
        (y * x).sum().backward()
        return y.tolist(), x.grad.tolist(), w.grad.tolist()
    assert run(ember) == run(torch)


@pytest.mark.parametrize("op", [operator.add, operator.sub, lambda a, b: b - a,
                                lambda a, b: b + a])
def test_add_sub_backward_sums_only_for_operands_needing_a_gradient(op, monkeypatch):
    # y + 0.5's backward reduced the gradient to the constant's shape too, then dropped it
    import ember.ops.arithmetic as arithmetic

    x = ember.tensor(np.arange(6.0).reshape(2, 3), dtype=ember.float64, requires_grad=True)
    c = ember.tensor([1.0, 2.0, 3.0], dtype=ember.float64)  # broadcast, needs no gradient
    w = ember.tensor(np.arange(1.0, 7.0).reshape(2, 3), dtype=ember.float64)
    (op(x, c) * w).sum().backward()
    tx = torch.tensor(np.arange(6.0).reshape(2, 3), requires_grad=True)
    (op(tx, torch.tensor([1.0, 2.0, 3.0], dtype=torch.float64)) *
     torch.tensor(np.arange(1.0, 7.0).reshape(2, 3))).sum().backward()
    np.testing.assert_array_equal(x.grad.numpy(), tx.grad.numpy())
    calls = []
    real = arithmetic.sum_to
    monkeypatch.setattr(arithmetic, "sum_to", lambda g, shape: calls.append(shape) or
                        real(g, shape))
    y = op(x, c)
    grads = y.grad_fn(w)
    assert calls == [(2, 3)]  # x's shape only, not the constant's (3,)
    assert grads[0 if y.grad_fn.next_functions[0][0] is None else 1] is None


@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_division_gradients_are_torchs_to_the_bit_at_subnormal_divisors_too(dtype):
    # b's gradient is PyTorch's -g * ((a / b) / b): the same rounding everywhere, and the same
    # inf / NaN where b is subnormal (-(g / b) * a / b gave a finite -5e29 where torch's is
    # -inf, and NaN where torch's is -0.0)
    rng = np.random.default_rng(0)
    tiny = {"float32": [1e-40, -1e-40, 1.4e-45, 1e-38], "float64": [5e-324, -1e-310, 2.2e-308]}
    big = 3e38 if dtype == "float32" else 1e300
    a = np.array([1.0, -1.0, 0.0, 1e-30, big, np.inf, np.nan], dtype)
    grid = [(x, y, g) for y in tiny[dtype] for x in a for g in (1.0, 1e-30, 0.0)]
    scale = 10.0 ** rng.integers(-5, 5, (3, 2000))
    values = [np.concatenate([np.array(col, dtype), (rng.standard_normal(2000) * s).astype(dtype)])
              for col, s in zip(zip(*grid), scale)]
    grads = []
    for lib in (torch, ember):
        x, y = (lib.tensor(v, requires_grad=True) for v in values[:2])
        (x / y).backward(lib.tensor(values[2]))
        grads.append([np.asarray(t.grad.tolist(), dtype) for t in (x, y)])
    for mine, theirs in zip(grads[1], grads[0]):
        np.testing.assert_array_equal(mine, theirs)  # (NaN where NaN)
        numbers = ~np.isnan(mine)  # (and the sign of each zero; a NaN's sign means nothing)
        assert np.array_equal(np.signbit(mine[numbers]), np.signbit(theirs[numbers]))


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_in_place_add_sub_mul_written_directly_equal_the_out_of_place_ops(dtype):
    """add_/sub_/mul_ (and +=, -=, *=) of a float tensor needing no history go straight to
    NumPy's ufunc into its memory (ember.ops.inplace._direct): the out-of-place op's bits,
    overlap with self included, the version counted, views seeing the write; an operand that
    needs a gradient, another dtype or a broadcast still takes the recorded path."""
    rng = np.random.default_rng(0)
    a = (rng.standard_normal((6, 8)) * 3).astype(dtype)
    a.flat[:4] = [np.nan, np.inf, -0.0, 0.0]
    operands = [2.5, 0.1, -0.0, 1e300, math.nan, 3, (1 << 24) + 1, (1 << 64) - 1,
                ember.tensor(rng.standard_normal((6, 8)).astype(dtype)),
                ember.tensor(np.asarray(1.5, dtype))]
    for name, other in itertools.product(["add", "sub", "mul"], operands):
        x = ember.tensor(a.copy())
        view = x[1:]
        version = x._version
        want = getattr(ember, name)(ember.tensor(a.copy()), other).numpy()
        got = getattr(x, name + "_")(other)
        assert got is x and x._version == version + 1
        assert got.numpy().tobytes() == want.astype(dtype).tobytes()
        assert view.numpy().tobytes() == want[1:].astype(dtype).tobytes()
    x = ember.tensor(a.copy())
    x.mul_(x.t().t())  # (overlapping self: NumPy buffers it)
    assert x.numpy().tobytes() == (a * a).tobytes()
    w = ember.tensor(np.ones(8, dtype), requires_grad=True)
    x = ember.tensor(a.copy())
    x.mul_(w)  # (broadcast, and w needs a gradient: recorded)
    assert x.grad_fn is not None


@pytest.mark.parametrize("dtype", [np.float16, np.float32, np.float64])
def test_square_and_pow_2_are_torchs_bit_for_bit(dtype):
    # (float tensors ** 2 take NumPy's square, x·x as PyTorch's pow(x, 2), not its power loop)
    info = np.finfo(dtype)
    special = [np.nan, np.inf, -np.inf, -0.0, 0.0, info.tiny / 4, info.max, -info.max,
               float(np.sqrt(info.max)) * 1.5]
    values = np.concatenate([np.random.default_rng(0).standard_normal(5000) * 100,
                             special]).astype(dtype)
    want = torch.from_numpy(values).pow(2).numpy()
    for got in (ember.square(ember.from_numpy(values)), ember.from_numpy(values) ** 2,
                ember.pow(ember.from_numpy(values), 2.0)):
        assert got.dtype.name == np.dtype(dtype).name
        np.testing.assert_array_equal(got.numpy(), want)
    x = ember.tensor(values[:50].astype(np.float64), requires_grad=True)
    ember.square(x).sum().backward()
    np.testing.assert_array_equal(x.grad.numpy(), 2 * values[:50].astype(np.float64))


@pytest.mark.parametrize("fn, match", [
    (lambda m: m.add(m.tensor([1]), m.tensor([1]), alpha=1.0),
     "integral inputs .* must not be a float"),
    (lambda m: m.sub(m.tensor([1]), 1, alpha=1.0), "integral inputs .* must not be a float"),
    (lambda m: m.add(m.ones(1), m.ones(1), alpha=1 + 0j), "real inputs .* must not be a complex"),
    (lambda m: m.ones(1).sub_(1, alpha=1 + 0j), "real inputs .* must not be a complex"),
    # review54g item 4: torch reads a NumPy bool alpha as a float
    (lambda m: m.add(m.tensor([1]), m.tensor([1]), alpha=np.True_),
     "integral inputs .* must not be a float"),
    (lambda m: m.add(m.tensor([True]), m.tensor([True]), alpha=np.True_),
     "integral inputs .* must not be a float"),
    (lambda m: m.sub(m.tensor([1]), 1, alpha=np.False_), "integral inputs .* must not be a float"),
])
def test_an_alpha_equal_to_1_of_another_type_is_checked_as_torch(fn, match):
    # review54d item 3: alpha=1.0 or 1+0j equals 1, which skipped every alpha check
    raises_like_torch(fn, ember.DTypeError, match)


def test_an_alpha_equal_to_1_of_a_type_the_inputs_take_adds_as_torch():
    same_as_torch(lambda m: m.add(m.tensor([1.5]), m.tensor([2.25]), alpha=1.0))
    same_as_torch(lambda m: m.sub(m.tensor([1 + 2j]), m.tensor([2j]), alpha=1 + 0j))
    same_as_torch(lambda m: m.add(m.tensor([True]), m.tensor([False]), alpha=True))
    same_as_torch(lambda m: m.add(m.tensor([1.5]), m.tensor([2.25]), alpha=np.True_))


@pytest.mark.parametrize("name", ["fmod", "remainder"])
def test_float32_modulus_pass_gives_numpy_s_bits(numba_or_numpy, name):
    """float32 fmod and remainder over 64 elements take numba's pass (ember.ops.modulus_numba):
    NumPy's bits but remainder's zero signs (NaN's payload aside where both operands are NaN),
    at random bit patterns, specials, quotients about 2^29, with a one-element divisor; and
    without numba."""
    rng = np.random.default_rng(0)
    special = np.array([0.0, -0.0, np.inf, -np.inf, np.nan, 1.0, -1.0, 3.0, -3.0, 1e-45, -1e-45,
                        2.0**29, 2.0**29 + 64, 3.4e38, -3.4e38, 0.1, -0.1, 7.0], np.float32)
    a, b = (np.meshgrid(special, special)[i].ravel() for i in (0, 1))
    noise = rng.integers(0, 2**32, (2, 20000), dtype=np.uint64).astype(np.uint32).view(np.float32)
    big = (rng.uniform(0.5, 1, 5000) * 2.0 ** rng.integers(20, 34, 5000)).astype(np.float32)
    a = np.concatenate([a, noise[0], big, rng.standard_normal(5000).astype(np.float32) * 9])
    b = np.concatenate([b, noise[1], rng.uniform(0.5, 2, 5000).astype(np.float32),
                        rng.standard_normal(5000).astype(np.float32)])
    keep = ~(np.isnan(a) & np.isnan(b))
    for divisor in (b, np.float32(-2.5), np.float32(3.0)):
        with np.errstate(all="ignore"):
            want = getattr(np, name)(a, divisor)
        if name == "remainder":  # (a zero takes a's sign, as PyTorch's; NumPy's b's)
            np.copysign(want, a, out=want, where=want == 0)
        got = getattr(ember, name)(ember.from_numpy(a), ember.from_numpy(
            np.asarray(divisor)) if np.ndim(divisor) else float(divisor)).numpy()
        np.testing.assert_array_equal(got.view(np.uint32)[keep], want.view(np.uint32)[keep])
        assert np.isnan(got[~keep]).all()


@pytest.mark.parametrize("dtype", ["float16", "bfloat16", "float32", "float64"])
@pytest.mark.parametrize("size", [6, 3000])
def test_remainder_zero_takes_the_dividends_sign_as_torch(numba_or_numpy, dtype, size):
    """(Ember's zeros took the divisor's sign, NumPy's rule: remainder(-4., 2.) was 0.0 where
    torch gives -0.0, remainder(4., -2.) -0.0 where torch gives 0.0.)"""
    a = np.resize([-4.0, 4.0, -0.0, 0.0, 4.0, -4.0, 3.0, -3.0, 6.0], size)
    b = np.resize([2.0, -2.0, 2.0, -2.0, 2.0, -2.0, np.inf, -1.5, -np.inf, 0.5, -3.0], size)
    for x, y in ((a, b), (a, -2.0), (3.0, b)):
        ours, theirs = (m.remainder(*(v if isinstance(v, float) else m.tensor(v, dtype=getattr(
            m, dtype)) for v in (x, y))).double().numpy() for m in (ember, torch))
        np.testing.assert_array_equal(ours, theirs)
        np.testing.assert_array_equal(np.signbit(ours), np.signbit(theirs))


@pytest.mark.parametrize("dtype", ["bfloat16", "float32", "float64"])
def test_remainder_of_0d_tensors(dtype):
    """(A 0-d remainder is a NumPy scalar that the zero-sign fix could not write into:
    ``ember.tensor(10.) % 1`` raised, and with it Binomial/Poisson's integer checks.)"""
    for a, b in ((10.0, 1.0), (-4.0, 2.0), (4.0, -2.0), (-3.0, 2.0)):
        ours, theirs = (m.remainder(m.tensor(a, dtype=getattr(m, dtype)), b).double().numpy()
                        for m in (ember, torch))
        np.testing.assert_array_equal(ours, theirs)
        np.testing.assert_array_equal(np.signbit(ours), np.signbit(theirs))
