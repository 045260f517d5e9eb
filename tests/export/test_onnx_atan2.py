"""ONNX export of ``atan2`` (no ONNX op: ``atan(y / x)`` with its quadrants, signed zeros and
infinities written out) against eager in onnxruntime."""

from __future__ import annotations

import numpy as np
import pytest

import ember
from tests.export.onnx_helpers import eager, run_onnx


@pytest.mark.parametrize("dtype", ["float32", "float16"])
def test_atan2_on_every_pair_of_special_values(dtype):
    special = np.array([0.0, -0.0, 1.0, -1.0, 2.5, -3e-30, 1e30, np.inf, -np.inf, np.nan])
    y, x = (a.ravel() for a in np.meshgrid(special, special, indexing="ij"))
    rng = np.random.default_rng(0)
    y = np.concatenate([y, rng.standard_normal(500) * 10]).astype(dtype)
    x = np.concatenate([x, rng.standard_normal(500) * 10]).astype(dtype)
    fn = lambda a, b: ember.atan2(a, b)  # noqa: E731
    proto = ember.onnx.to_model(fn, (ember.tensor(y[:7]), ember.tensor(x[:7])),
                                input_names=["y", "x"],
                                dynamic_axes={"y": {0: "n"}, "x": {0: "n"}})
    got = run_onnx(proto, y, x)[0]
    want = eager(fn, ember.tensor(y), ember.tensor(x))[0]
    assert got.dtype == want.dtype
    np.testing.assert_allclose(got, want, rtol=1e-6, atol=0)
    number = ~np.isnan(want)
    np.testing.assert_array_equal(np.signbit(got[number]), np.signbit(want[number]))


def test_atan2_broadcasts_and_promotes_ints():
    y = ember.tensor([[1], [-2], [0]])
    x = ember.tensor([-1.0, 0.0, 3.0])
    fn = lambda a, b: ember.atan2(a, b)  # noqa: E731
    proto = ember.onnx.to_model(fn, (y, x))
    np.testing.assert_allclose(run_onnx(proto, y.numpy(), x.numpy())[0], eager(fn, y, x)[0],
                               rtol=1e-6)
