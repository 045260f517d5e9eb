"""ONNX export of average pooling and grouped convolutions (both unfold to columns) over
dynamic spatial sizes: the window counts read off the unfold's Conv at run time, against
eager in onnxruntime at sizes other than the traced."""

from __future__ import annotations

import numpy as np
import pytest

import ember
import ember.nn as nn
import ember.nn.functional as F
from ember.onnx import ExportError
from tests.export.onnx_helpers import eager, run_onnx

SPATIAL = {"x": {0: "b", 2: "h", 3: "w"}}


def _check(fn, example, shapes, rtol=1e-5):
    proto = ember.onnx.to_model(fn, (example,), input_names=["x"], dynamic_axes=SPATIAL)
    rng = np.random.default_rng(0)
    for shape in shapes:
        x = rng.standard_normal(shape).astype(np.float32)
        np.testing.assert_allclose(run_onnx(proto, x)[0], eager(fn, ember.tensor(x))[0],
                                   rtol=rtol, atol=1e-6)


@pytest.mark.parametrize("kwargs", [
    {"kernel_size": 2},
    {"kernel_size": 3, "stride": 2, "padding": 1},
    {"kernel_size": (2, 3), "stride": (1, 2)},
])
def test_avg_pool_over_dynamic_sizes(kwargs):
    _check(lambda x: F.avg_pool2d(x, **kwargs), ember.randn(1, 2, 7, 8),
           [(1, 2, 7, 8), (2, 2, 10, 5), (1, 2, 13, 16)])


def test_a_grouped_conv_after_a_pool_over_dynamic_sizes():
    model = nn.Sequential(nn.MaxPool2d(2), nn.Conv2d(4, 6, 3, groups=2)).eval()
    _check(model, ember.randn(1, 4, 9, 11), [(1, 4, 9, 11), (2, 4, 12, 9), (1, 4, 16, 17)])


def test_border_dependent_divisors_are_refused_with_the_reason():
    with pytest.raises(ExportError, match="depends on the size of a dynamic axis"):
        ember.onnx.to_model(lambda x: F.avg_pool2d(x, 3, 2, padding=1, count_include_pad=False),
                            (ember.randn(1, 2, 7, 8),), input_names=["x"],
                            dynamic_axes=SPATIAL)


def test_window_counts_equal_in_every_trace_on_two_axes_are_refused():
    # H' and W' are (2, 3, 5) in the three traces: W' was read from H''s Conv (a Reshape
    # error at (10, 50)), or, once not, guessed as the batch + 1
    with pytest.raises(ExportError, match="of two that differ"):
        ember.onnx.to_model(lambda x: F.avg_pool2d(x, (4, 9), (4, 9)),
                            (ember.randn(1, 2, 10, 24),), input_names=["x"],
                            dynamic_axes={"x": {0: "b", 2: "h", 3: "w"}})
