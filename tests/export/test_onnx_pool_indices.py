"""ONNX export of max pooling's indices (``return_indices=True``, ``max_unpool``) against
eager in onnxruntime: ties, NaN, windows of -inf, padding, dilation, ceil_mode."""

from __future__ import annotations

import numpy as np
import pytest

import ember
import ember.nn.functional as F
from ember.onnx import ExportError
from tests.export.test_onnx_scatter import check_feeds


def _spiky(shape, seed):
    """Small integers as floats (ties), a tenth NaN, a third -inf."""
    rng = np.random.default_rng(seed)
    a = rng.integers(-2, 3, shape).astype(np.float32)
    u = rng.random(shape)
    a[u < 0.1] = np.nan
    a[u > 0.67] = -np.inf
    return ember.tensor(a)


@pytest.mark.parametrize("nd", [1, 2, 3])
@pytest.mark.parametrize("kwargs", [
    {"kernel_size": 2},
    {"kernel_size": 3, "stride": 2, "padding": 1},
    {"kernel_size": 3, "stride": 2, "padding": 1, "ceil_mode": True},
    {"kernel_size": 2, "stride": 1, "dilation": 2},
])
def test_max_pool_indices(nd, kwargs):
    pool = (F.max_pool1d, F.max_pool2d, F.max_pool3d)[nd - 1]
    shape = (2, 3) + (7, 6, 5)[:nd]
    fn = lambda x: pool(x, return_indices=True, **kwargs)  # noqa: E731
    check_feeds(fn, [(_spiky(shape, seed),) for seed in range(4)])
    ints = ember.tensor(np.random.default_rng(9).integers(0, 3, shape).astype(np.uint8))
    check_feeds(fn, [(ints,)])


def test_max_unpool_and_adaptive_indices_with_a_dynamic_batch():
    def unpool(x):
        return F.max_unpool2d(*F.max_pool2d(x, 2, return_indices=True), 2)

    check_feeds(unpool, [(_spiky((2, 3, 4, 6), 0),), (_spiky((5, 3, 4, 6), 1),)],
                dynamic={0: {0: "b"}})
    check_feeds(lambda x: F.adaptive_max_pool2d(x, (2, 3), return_indices=True),
                [(_spiky((2, 3, 4, 6), seed),) for seed in range(3)])


def test_padding_past_the_kernel_is_refused_with_the_reason():
    fn = lambda x: F.max_pool1d(x, 2, stride=3, padding=1, dilation=2, ceil_mode=True,  # noqa: E731
                                return_indices=True)
    with pytest.raises(ExportError, match="max_pool_indices.*not below the kernel size"):
        ember.onnx.to_model(fn, (ember.randn(1, 1, 3),))
