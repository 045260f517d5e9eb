"""ONNX export of softmax and log_softmax (and other reductions of 0-d tensors) against eager
in onnxruntime: float64 log_softmax of slices with NaN and infinities (onnxruntime's float64
LogSoftmax dropped the NaN: 46.05 where eager and PyTorch give NaN), and 0-d inputs (ONNX's
checker refused the graph)."""

from __future__ import annotations

import pytest

import ember
from tests.export.onnx_helpers import check_export

NAN, INF = float("nan"), float("inf")
ROWS = [[1.0, NAN, -INF, 3.0, INF, 0.0, -0.0, 2.0], [NAN, NAN, 1.0, 1.0, -1.0, 5.0, INF, -INF],
        [1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 7.0, 8.0], [-INF] * 8, [INF] * 8,
        [1e300, -1e300, 0.0, 0.0, 0.0, 0.0, 0.0, 1.0]]


@pytest.mark.parametrize("dim", [0, 1, -1])
def test_float64_log_softmax_propagates_nan(dim):
    x = ember.tensor(ROWS, dtype=ember.float64)
    check_export(lambda a: a.log_softmax(dim), x, dynamic_batch=True, rtol=1e-14, atol=0)


@pytest.mark.parametrize("dtype", ["float16", "float32", "float64"])
@pytest.mark.parametrize("value", [1.0, NAN, INF, -INF])
def test_softmax_of_a_0d_tensor(value, dtype):
    x = ember.tensor(value, dtype=getattr(ember, dtype))
    check_export(lambda a: (a.softmax(0), a.log_softmax(-1)), x)


@pytest.mark.parametrize("opset", [17, 18])
@pytest.mark.parametrize("value", [1.5, NAN])
def test_other_reductions_of_a_0d_tensor(value, opset):
    """(topk, kthvalue, var and std of a 0-d tensor failed ONNX's checker; at opset 17 var's
    reductions took an empty ``axes`` attribute, a ValueError in onnx.)"""
    x = ember.tensor(value)
    check_export(lambda a: (*a.topk(1), *a.kthvalue(1), a.var(), a.std(correction=0),
                            a.var(0, keepdim=True)), x, opset_version=opset)
