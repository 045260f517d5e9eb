"""ONNX export of ops on narrow integers that onnxruntime has no kernel for, taken on a wider
integer dtype and cast back (exact; wrapping as eager): clamp (Clip), clamp by tensors
(Max/Min) and relu of int16, constant padding of int16, triu/tril of int8/uint8/int16,
einsum of int8/uint8/int16 (each failed in onnxruntime: 'Could not find an implementation');
relu of any integer dtype as Max (onnxruntime's integer Relu runs at opset 18 only)."""

from __future__ import annotations

import numpy as np
import pytest

import ember
from tests.export.onnx_helpers import check_export

F = ember.nn.functional


def _x(dtype):
    values = np.random.default_rng(0).integers(-9, 9, (3, 4))
    return ember.tensor(np.abs(values) if dtype == "uint8" else values).to(getattr(ember, dtype))


def test_int16_clamp_relu_and_pad():
    x = _x("int16")
    check_export(lambda a: (a.clamp(0, 3), a.clamp(min=1), a.clamp(a.flip(0), a.flip(1) + 2),
                            ember.relu(a), F.pad(a, (1, 2), value=7)), x, dynamic_batch=True,
                 rtol=0, atol=0)


@pytest.mark.parametrize("dtype", ["int8", "uint8", "int16"])
def test_narrow_triangles_and_einsum(dtype):
    x = _x(dtype)
    check_export(lambda a: (a.triu(1), a.tril(-1), ember.einsum("ij,kj->ik", a, a)), x,
                 rtol=0, atol=0)


@pytest.mark.parametrize("opset", [17, 18, 21])
@pytest.mark.parametrize("dtype", ["int64", "int32", "int16", "int8", "uint8"])
def test_integer_relu_at_every_opset(dtype, opset):
    check_export(ember.relu, _x(dtype), opset_version=opset, rtol=0, atol=0)
