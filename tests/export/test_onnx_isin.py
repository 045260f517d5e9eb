"""ONNX export of isin (it had no converter) against eager in onnxruntime: every element
against every test element in the promoted dtype, NaN in nothing, an empty test set, invert,
a dynamic batch."""

from __future__ import annotations

import pytest

import ember
from tests.export.onnx_helpers import check_export

ELEMENTS = [[1.0, 2.0, float("nan")], [4.0, 2.0, -0.0]]
TESTS = [2.0, float("nan"), 0.0, 7.0]


@pytest.mark.parametrize("dtype", ["float32", "float16", "float64", "int64", "int16", "uint8"])
def test_isin_matches_eager(dtype):
    a, b = (ember.tensor(v).nan_to_num(3.0).to(getattr(ember, dtype))
            for v in (ELEMENTS, TESTS))
    if a.dtype.is_floating_point:
        a, b = ember.tensor(ELEMENTS).to(a.dtype), ember.tensor(TESTS).to(a.dtype)
    check_export(lambda x, y: (ember.isin(x, y), ember.isin(x, y, invert=True)), a, b,
                 dynamic_batch=True)
    check_export(lambda x: (ember.isin(x, b[:0]), ember.isin(x, 2), ember.isin(x[0, 0], b)), a)


def test_isin_of_mixed_dtypes():
    check_export(ember.isin, ember.tensor([[1, 2], [3, 4]]), ember.tensor([2.0, 3.5]))
    # (eager promotes both to one dtype before the primitive: uint8 200 and int8 -56 meet
    # as int16, unequal; in either's own dtype they would be equal)
    check_export(ember.isin, ember.tensor([200, 3], dtype=ember.uint8),
                 ember.tensor([-56, 3], dtype=ember.int8), rtol=0, atol=0)
