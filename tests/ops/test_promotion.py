"""Result dtypes and values of mixed-dtype ops against PyTorch: the cases a dtype fuzz of
binary, ternary and in-place ops over all dtype pairs (tensors, 0-d tensors, Python scalars)
found wrong. Each ``fn(lib)`` runs on ``ember`` and on ``torch``."""

import math

import pytest

import ember
from tests.ops.optable import raises_like_torch, same_as_torch

INF = math.inf


def _u8(m, *v):
    return m.tensor(list(v), dtype=m.uint8)


def _i8(m, *v):
    return m.tensor(list(v), dtype=m.int8)


def _shifted_in_place(m):
    x = _i8(m, 1, -8, 100)
    x <<= 1
    x.bitwise_right_shift_(_i8(m, 1, 9, -1))
    return x


SAME = {
    # alpha scales in the result dtype: no overflow in int8/uint8 first, bool stays bool
    "add_alpha_uint8_int8": lambda m: m.add(_u8(m, 1, 255), _i8(m, 100, -128), alpha=2),
    "sub_alpha_int16_int8": lambda m: m.sub(m.tensor([1, -32000], dtype=m.int16),
                                            _i8(m, 100, 127), alpha=3),
    "add_alpha_bool": lambda m: m.add(m.tensor([True, False]), m.tensor([True, True]),
                                      alpha=2),
    # addcmul/addcdiv promote over all three operands at once
    "addcmul_0d_does_not_widen": lambda m: m.addcmul(_u8(m, 1, 2), m.tensor(-3, dtype=m.int8),
                                                     m.tensor([True, False])),
    "addcmul_no_int8_overflow": lambda m: m.addcmul(m.tensor([1, 2], dtype=m.int16),
                                                    _i8(m, 100, -100), _i8(m, 100, 3),
                                                    value=2),
    "addcdiv_in_float32": lambda m: m.addcdiv(m.tensor([1.0, 2.0]),
                                              m.tensor([1.0, 3.0], dtype=m.float16),
                                              m.tensor([3.0, 7.0], dtype=m.float16)),
    # integer operands of float-valued ops convert from their own values, not via uint8
    "atan2_int8_0d_uint8": lambda m: m.atan2(m.tensor(-7, dtype=m.int8), _u8(m, 1, 200)),
    "copysign_uint8_negative_int": lambda m: m.copysign(_u8(m, 7, 0, 255), -3),
    "xlogy_uint8_int_out_of_range": lambda m: m.xlogy(_u8(m, 2, 0), 300),
    "xlogy_uint8_negative_int": lambda m: m.xlogy(_u8(m, 2, 0), -3),
    # integer clamp bounds wrap into the dtype, as PyTorch's
    "clamp_uint8_negative_min": lambda m: m.clamp(_u8(m, 1, 200), min=-3),
    "clamp_uint8_both": lambda m: m.clamp(_u8(m, 0, 200), -1, 1),
    "clamp_bfloat16": lambda m: m.clamp(m.tensor([1.0, 2.0], dtype=m.bfloat16), 1.3, 1.7),
    # lerp uses PyTorch's two-sided formula
    "lerp_infinities": lambda m: [m.lerp(m.tensor([INF, 1.0, 1.0, 2.0]),
                                         m.tensor([1.5, INF, 3.0, -INF]), w)
                                  for w in (0.25, 0.5, 1.0, 2.0)],
    "lerp_tensor_weight": lambda m: m.lerp(m.tensor([INF, 1.0, 0.1]), m.tensor([1.5, INF, 0.7]),
                                           m.tensor([0.5, 0.25, 1.0])),
    # shifts: wrap-around, shift counts out of range, promotion with bool and scalars
    "shift_left_int8": lambda m: _i8(m, 1, -8, 100, 1, 3) << _i8(m, 9, 9, 1, -1, 7),
    "shift_right_int8": lambda m: _i8(m, 1, -8, -128, 64, 3) >> _i8(m, 9, 9, 7, -1, 1),
    "shift_uint8_by_scalar": lambda m: (_u8(m, 1, 200) << 8, _u8(m, 200, 3) >> 9,
                                        _u8(m, 200, 3) >> 1),
    "shift_function_forms": lambda m: (
        m.bitwise_left_shift(m.tensor([1, 2]), m.tensor([62, 64])),
        m.bitwise_right_shift(m.tensor([-5, 7], dtype=m.int32), m.tensor(1, dtype=m.int64))),
    "shift_bool_and_reflected": lambda m: (m.tensor([True, False]) << 1,
                                           2 << m.tensor([3, 0]), 64 >> _i8(m, 2, 3)),
    "shift_in_place": _shifted_in_place,
    "positive": lambda m: m.positive(_i8(m, -3, 4)),
}


@pytest.mark.parametrize("fn", SAME.values(), ids=SAME.keys())
def test_same_dtype_and_values_as_torch(fn):
    same_as_torch(fn, rtol=1e-6)


REFUSED = {
    "lerp_integers": (lambda m: m.lerp(m.tensor([1, 2]), m.tensor([3, 4]), 0.5),
                      "lerp: needs floating tensors, got int64 and int64"),
    "lerp_bool_start": (lambda m: m.lerp(m.tensor([True]), m.tensor([1.0], dtype=m.float16),
                                         0.5), "lerp: needs floating tensors, got bool"),
    "shift_float": (lambda m: m.tensor([1.0]) << 1, "bitwise_left_shift: needs bool or integer"),
    "shift_bools": (lambda m: m.bitwise_right_shift(m.tensor([True]), m.tensor([True])),
                    "bitwise_right_shift: needs integer tensors, got two bools"),
    "shift_in_place_float_result": (lambda m: _u8(m, 1).bitwise_left_shift_(m.tensor([1.0])),
                                    "bitwise_left_shift"),
    "positive_bool": (lambda m: m.positive(m.tensor([True])), "positive: .* bool"),
    "isclose_number_input": (lambda m: m.isclose(1.0, m.tensor([1.0])),
                             "isclose: input must be a tensor, got float"),
}


@pytest.mark.parametrize("fn, match", REFUSED.values(), ids=REFUSED.keys())
def test_refuses_what_torch_refuses(fn, match):
    raises_like_torch(fn, ember.DTypeError, match)
