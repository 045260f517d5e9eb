"""Arithmetic ops against PyTorch and finite differences (see optable.py)."""

import operator

import numpy as np
import torch

import ember
from tests.ops.optable import OpCase, S, arg, op_tests

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
           [S(arg(3, 4, low=0.1, high=5), arg(3, 4, low=1.1, high=1.9))], grad=False),
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
