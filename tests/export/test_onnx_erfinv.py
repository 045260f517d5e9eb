"""ONNX export of ``erfinv`` (no ONNX op: Giles' polynomials in float64) against eager in
onnxruntime over float32's whole range, up to the ulps next to ±1."""

from __future__ import annotations

import numpy as np
import pytest

import ember
from ember.onnx import ExportError
from tests.export.onnx_helpers import eager, run_onnx


@pytest.mark.parametrize(("dtype", "ulps"), [("float32", 2), ("float16", 1)])
def test_erfinv_within_ulps_of_eager(dtype, ulps):
    edge = np.nextafter(np.array([1, -1], dtype), np.array(0, dtype))
    y = np.concatenate([np.linspace(-1, 1, 200_001), 1 - np.logspace(-8, -1, 500), edge,
                        [-0.0, 0.0, 1.0, -1.0, 1.5, -1.5, np.nan]]).astype(dtype)
    fn = lambda t: ember.erfinv(t)  # noqa: E731
    proto = ember.onnx.to_model(fn, (ember.tensor(y[:5]),), input_names=["y"],
                                dynamic_axes={"y": [0]})
    got, want = run_onnx(proto, y)[0], eager(fn, ember.tensor(y))[0]
    assert got.dtype == want.dtype
    finite = np.isfinite(want)
    np.testing.assert_array_equal(got[~finite], want[~finite])  # (±inf at ±1, NaN past)
    np.testing.assert_array_equal(np.signbit(got[finite]), np.signbit(want[finite]))
    off = np.abs(got[finite].astype(np.float64) - want[finite])
    assert (off <= ulps * np.spacing(np.abs(want[finite]))).all()


def test_float64_erfinv_is_refused_with_the_reason():
    with pytest.raises(ExportError, match="erfinv of float64.*compute erfinv in float32"):
        ember.onnx.to_model(lambda t: ember.erfinv(t), (ember.tensor([0.5], dtype="float64"),))
