"""Max pooling of integer input in ONNX: ONNX's MaxPool takes floats, int8 and uint8, so
int16/int32 pool in float64, exact; int64 is refused by name, as float64 holds it exactly
only up to 2**53 (docs/onnx.md); eager refuses uint16/uint32/uint64, as PyTorch does.
(review49c finding 8)"""

from __future__ import annotations

import numpy as np
import pytest

import ember
import ember.nn.functional as F
from ember.export.errors import ExportError
from tests.export.onnx_helpers import eager, run_onnx

POOLS = {
    "adaptive": lambda x: F.adaptive_max_pool2d(x, (3, 4), return_indices=True),
    "adaptive_values": lambda x: F.adaptive_max_pool2d(x, (2, 3)),
    "indices": lambda x: F.max_pool2d(x, 2, return_indices=True),
}


@pytest.mark.parametrize("dtype", ["int32", "int16", "uint8"])
@pytest.mark.parametrize("pool", POOLS)
def test_integer_max_pools_match_eager(pool, dtype):
    a = np.random.default_rng(0).integers(0 if dtype == "uint8" else -99, 99,
                                          (2, 3, 5, 7)).astype(dtype)
    x = ember.tensor(a)
    got = run_onnx(ember.onnx.to_model(POOLS[pool], (x,)), a)
    want = eager(POOLS[pool], x)
    for g, w in zip(got, want, strict=True):
        assert g.dtype == w.dtype
        np.testing.assert_array_equal(g, w)


@pytest.mark.parametrize("pool", POOLS)
def test_int64_max_pools_are_refused_naming_the_dtype(pool):
    x = ember.tensor(np.arange(2 * 3 * 5 * 7).reshape(2, 3, 5, 7).astype(np.int64))
    with pytest.raises(ExportError, match=r"max pooling.* of int64: ONNX's MaxPool takes"):
        ember.onnx.to_model(POOLS[pool], (x,))
