"""adaptive_max_pool1d/2d/3d to sizes that do not divide the input's (windows of unequal,
overlapping sizes), values and indices, in onnxruntime against eager."""

from __future__ import annotations

import numpy as np
import pytest

import ember
import ember.nn.functional as F
from tests.export.onnx_helpers import eager, run_onnx

CASES = [  # (pool, input shape, output size)
    (F.adaptive_max_pool1d, (2, 3, 7), 3),
    (F.adaptive_max_pool1d, (1, 2, 5), 4),
    (F.adaptive_max_pool2d, (2, 3, 8, 8), (3, 5)),
    (F.adaptive_max_pool2d, (1, 2, 7, 5), (4, 2)),
    (F.adaptive_max_pool2d, (2, 2, 6, 6), (3, 3)),  # (even: one MaxPool as before)
    (F.adaptive_max_pool3d, (1, 2, 5, 4, 6), (2, 3, 4)),
]


def _with_specials(shape, seed):
    a = np.random.default_rng(seed).standard_normal(shape).astype(np.float32)
    flat = a.reshape(-1)
    flat[::7] = np.nan
    flat[3::11] = -np.inf
    flat[5::13] = flat[4::13][: flat[5::13].size]  # (ties)
    a[0, 0] = -np.inf  # (a plane of -inf)
    return a


@pytest.mark.parametrize("pool, shape, size", CASES)
@pytest.mark.parametrize("special", [False, True])
def test_uneven_adaptive_max_pool_matches_eager(pool, shape, size, special):
    def fn(x):
        return pool(x, size, return_indices=True)

    a = _with_specials(shape, 1) if special else \
        np.random.default_rng(0).standard_normal(shape).astype(np.float32)
    proto = ember.onnx.to_model(fn, (ember.tensor(a),), input_names=["x"],
                                dynamic_axes={"x": {0: "b"}})
    for feed in (a, np.concatenate([a, a[:1] * 2])):
        got, want = run_onnx(proto, feed), eager(fn, ember.tensor(feed))
        np.testing.assert_array_equal(got[1], want[1])
        np.testing.assert_array_equal(got[0], want[0])
