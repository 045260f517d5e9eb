"""ONNX export of integer powers against eager (and PyTorch) in onnxruntime: by squaring,
each product wrapping as eager (onnxruntime's Pow of integers goes through double: 3**39
came out 11 off, 3**40 saturated to INT64_MIN where eager wraps), a number exponent
unrolled, a tensor one bit by bit, negative exponents 1, ±1 or 0 as in PyTorch."""

from __future__ import annotations

import numpy as np
import pytest
import torch

import ember
from tests.export.onnx_helpers import check_export

BASES = [3, 3, 5, 7, -3, 2, 1, -1, -1, 0, 0, 2, 3, -2, 127, -128]
EXPONENTS = [39, 40, 27, 22, 39, 63, -5, -3, -4, -1, 0, 64, 100, 65, 2, 3]


@pytest.mark.parametrize("dtype", ["int64", "int32", "int16", "int8", "uint8"])
def test_tensor_exponent_matches_eager_and_torch(dtype):
    exponents = np.abs(EXPONENTS) if dtype == "uint8" else EXPONENTS
    base, exponent = (ember.tensor(v).to(getattr(ember, dtype)) for v in (BASES, exponents))
    check_export(lambda b, e: (b ** e, b[:, None] ** e[None, :4]), base, exponent,
                 rtol=0, atol=0)
    reference = torch.from_numpy(base.numpy()) ** torch.from_numpy(exponent.numpy())
    np.testing.assert_array_equal((base ** exponent).numpy(), reference.numpy())


@pytest.mark.parametrize("dtype", ["int64", "int32", "int8", "uint8"])
@pytest.mark.parametrize("exponent", [0, 1, 2, 3, 39, 64, 100])
def test_number_exponent_matches_eager(dtype, exponent):
    base = ember.tensor(BASES).to(getattr(ember, dtype))
    check_export(lambda b: b ** exponent, base, dynamic_batch=True, rtol=0, atol=0)


@pytest.mark.parametrize("exponent", [0, 1, 5])
def test_number_exponent_has_no_unused_initializer(exponent):
    """(A constant 1 was made for every number exponent and used only for x**0: onnxruntime
    warned of the unused initializer in every session.)"""
    proto = ember.onnx.to_model(lambda b: b ** exponent, (ember.tensor(BASES),))
    read = {name for node in proto.graph.node for name in node.input}
    assert [i.name for i in proto.graph.initializer if i.name not in read] == []
