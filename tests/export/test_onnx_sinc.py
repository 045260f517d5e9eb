"""ember.sinc exported to ONNX (sin(pi x) / (pi x), 1 at 0) against eager in onnxruntime."""

from __future__ import annotations

import numpy as np
import pytest

import ember
from tests.export.onnx_helpers import eager, run_onnx

VALUES = [0.0, -0.0, 0.5, -0.5, 1.0, 2.0, -3.0, 1e-8, -1e-30, 0.25, 7.3, 1e4, 1e30,
          np.inf, -np.inf, np.nan]


@pytest.mark.parametrize("dtype", ["float16", "float32", "float64"])
def test_sinc_matches_eager(dtype):
    a = np.array(VALUES, dtype=np.float32).astype(dtype)
    a = np.concatenate([a, np.random.default_rng(0).standard_normal(64).astype(dtype) * 4])
    x = ember.tensor(a)
    proto = ember.onnx.to_model(lambda t: ember.sinc(t), (x,))
    got, want = run_onnx(proto, a)[0], eager(lambda t: ember.sinc(t), x)[0]
    assert got.dtype == want.dtype
    tol = {"float16": 1e-3, "float32": 1e-6, "float64": 1e-15}[dtype]
    np.testing.assert_allclose(got, want, rtol=tol, atol=tol)


def test_sinc_of_an_integer_tensor_is_float():
    a = np.array([-2, 0, 1, 3], dtype=np.int64)
    proto = ember.onnx.to_model(lambda t: ember.sinc(t), (ember.tensor(a),))
    want = eager(lambda t: ember.sinc(t), ember.tensor(a))[0]
    np.testing.assert_allclose(run_onnx(proto, a)[0], want, rtol=1e-6, atol=1e-7)
