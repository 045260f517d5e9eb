"""ONNX export of integer reductions against eager in onnxruntime: prod by pairwise Mul,
exact and wrapping as eager (onnxruntime's ReduceProd multiplies integers in double: 3**39
came out 11 off, an overflow saturated to INT64_MAX where eager wraps to 0), a Scan of Mul over
a dynamic axis; max/min/argmax with indices of bool and int16 tensors (ReduceMax took no bool,
onnxruntime's ArgMax no int16)."""

from __future__ import annotations

import numpy as np
import pytest

import ember
from tests.export.onnx_helpers import check_export, run_onnx

BIG = [[3**30, 3**9, 1], [2**40, 2**23 + 1, 3], [2**62, 4, 5], [7, -3, 2], [-1, -1, -1]]


@pytest.mark.parametrize("dtype", ["int64", "int32", "int8", "uint8", "bool"])
@pytest.mark.parametrize("dims", [0, 1, -1, None])
@pytest.mark.parametrize("keepdim", [False, True])
def test_integer_prod_is_exact_and_wraps_as_eager(dtype, dims, keepdim):
    x = ember.tensor(BIG).to(getattr(ember, dtype))
    if dims is None:
        check_export(lambda a: a.prod(), x, rtol=0, atol=0)
    else:
        check_export(lambda a: a.prod(dims, keepdim=keepdim), x, rtol=0, atol=0)


def test_integer_prod_of_odd_and_empty_lengths():
    x = ember.tensor(np.arange(1, 36).reshape(5, 7) * 977, dtype=ember.int64)
    check_export(lambda a: (a.prod(1), a.reshape(5, 7, 1).prod((0, 1)), a[:, :0].prod(1)), x,
                 rtol=0, atol=0)
    check_export(lambda a: a.prod(1), x, dynamic_batch=True, rtol=0, atol=0)


@pytest.mark.parametrize("dtype", ["int64", "int32", "uint8", "bool"])
def test_integer_prod_over_a_dynamic_axis_is_a_scan(dtype):
    """(It was refused: a Scan of Mul takes any length, 0 included, exact and wrapping.)"""
    x = ember.tensor(BIG).to(getattr(ember, dtype))
    for fn in (lambda a: a.prod(0), lambda a: a.prod(0, keepdim=True), lambda a: a.prod()):
        proto = ember.onnx.to_model(fn, (x,), input_names=["x"], dynamic_axes={"x": {0: "n"}})
        for rows in (x, x[:2], x[:0], ember.cat([x, x])):
            np.testing.assert_array_equal(run_onnx(proto, rows.numpy())[0], fn(rows).numpy())


def test_long_prod_over_a_dynamic_inner_axis():
    """(review65d's case: ``m.long().prod(1)`` with dim 1 dynamic exported before 74085c02.)"""
    x = ember.tensor(np.arange(1, 25).reshape(4, 6) * 1001, dtype=ember.int32)
    fn = lambda m: m.long().prod(1)  # noqa: E731
    proto = ember.onnx.to_model(fn, (x,), input_names=["m"], dynamic_axes={"m": {1: "t"}})
    for cols in (6, 3, 1, 0, 9):
        m = ember.tensor(np.arange(1, 4 * cols + 1).reshape(4, cols) * 1001, dtype=ember.int32)
        np.testing.assert_array_equal(run_onnx(proto, m.numpy())[0], fn(m).numpy())


@pytest.mark.parametrize("dtype", ["bool", "int16"])
def test_extremes_of_bools_and_int16(dtype):
    x = ember.tensor([[3, -9, 1, 7], [2, 2, 3, 3], [0, 4, 5, -30000]]).to(getattr(ember, dtype))
    check_export(lambda a: (*a.max(1), *a.min(0, keepdim=True), a.amax(1), *a.aminmax(dim=1)),
                 x, dynamic_batch=True)
    if dtype == "int16":
        check_export(lambda a: (a.argmax(1), a.argmin()), x, dynamic_batch=True)
