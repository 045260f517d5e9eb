"""ONNX export of a dynamic batch traced at 1 beside one channel: the gather's batch and
channel grids are one shared (1, 1, 1) constant in the trace, and a batch traced at 1 looks
like the 1 of an index vector (against eager in onnxruntime at other batch sizes)."""

from __future__ import annotations

import numpy as np
import pytest

import ember
import ember.nn.functional as F
from tests.export.onnx_helpers import eager, run_onnx


def _adaptive_values(x):
    return F.adaptive_max_pool2d(x, (3, 5), return_indices=True)[0]


def _adaptive_both(x):
    values, indices = F.adaptive_max_pool2d(x, (3, 3), return_indices=True)
    return values, indices


def _max_pool_both(x):
    return F.max_pool2d(x, 2, return_indices=True)


def _gather(x):
    return x.gather(2, (x.abs() * 3).long().clamp(max=7))


@pytest.mark.parametrize("fn", [_adaptive_values, _adaptive_both, _max_pool_both, _gather])
@pytest.mark.parametrize("example", [(1, 1, 8, 8), (1, 2, 8, 8), (2, 1, 8, 8)])
def test_pooling_indices_of_a_dynamic_batch_traced_at_one(fn, example):
    # (refused: "a constant of shape (1, 1, 1) depends on the size of a dynamic axis"; with
    # the grids told apart, the channel grid still looked like an index vector: (9, 1, 3, 3)
    # at a batch of 3)
    proto = ember.onnx.to_model(fn, (ember.randn(*example),), input_names=["x"],
                                dynamic_axes={"x": {0: "b"}})
    for n in (3, 1, 2):
        x = np.random.default_rng(n).standard_normal((n, *example[1:])).astype(np.float32)
        for got, want in zip(run_onnx(proto, x), eager(fn, ember.tensor(x))):
            np.testing.assert_array_equal(got, want)
