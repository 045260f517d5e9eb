"""ONNX export of integer reductions against eager in onnxruntime: prod by pairwise Mul,
exact and wrapping as eager (onnxruntime's ReduceProd multiplies integers in double: 3**39
came out 11 off, an overflow saturated to INT64_MAX where eager wraps to 0), refused over a
dynamic axis; max/min/argmax with indices of bool and int16 tensors (ReduceMax took no bool,
onnxruntime's ArgMax no int16)."""

from __future__ import annotations

import numpy as np
import pytest

import ember
from tests.export.onnx_helpers import check_export

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


def test_integer_prod_over_a_dynamic_axis_is_refused():
    x = ember.tensor(BIG)
    with pytest.raises(ember.onnx.ExportError, match="integer prod over dimension 0"):
        ember.onnx.to_model(lambda a: a.prod(0), (x,), input_names=["x"],
                            dynamic_axes={"x": {0: "n"}})


@pytest.mark.parametrize("dtype", ["bool", "int16"])
def test_extremes_of_bools_and_int16(dtype):
    x = ember.tensor([[3, -9, 1, 7], [2, 2, 3, 3], [0, 4, 5, -30000]]).to(getattr(ember, dtype))
    check_export(lambda a: (*a.max(1), *a.min(0, keepdim=True), a.amax(1), *a.aminmax(dim=1)),
                 x, dynamic_batch=True)
    if dtype == "int16":
        check_export(lambda a: (a.argmax(1), a.argmin()), x, dynamic_batch=True)
