"""ONNX export of max pooling with dynamic spatial axes: MaxPool counts the windows itself,
floor or ceil_mode as the traces show, against eager in onnxruntime at sizes other than the
traced ones."""

from __future__ import annotations

import numpy as np
import pytest

import ember
import ember.nn as nn
import ember.nn.functional as F
from ember.onnx import ExportError
from tests.export.onnx_helpers import eager, run_onnx

SPATIAL = {"x": {0: "b", 2: "h", 3: "w"}}


@pytest.mark.parametrize("kwargs", [
    {"kernel_size": 2},
    {"kernel_size": 3, "stride": 1, "padding": 1},
    {"kernel_size": 3, "stride": 2, "padding": 1, "ceil_mode": True},
    {"kernel_size": 2, "ceil_mode": True},
    {"kernel_size": 3, "stride": 2, "dilation": 2},
])
def test_max_pool_of_dynamic_spatial_axes_at_other_sizes(kwargs):
    fn = lambda x: F.max_pool2d(x, **kwargs)  # noqa: E731
    proto = ember.onnx.to_model(fn, (ember.randn(1, 2, 7, 8),), input_names=["x"],
                                dynamic_axes=SPATIAL)
    rng = np.random.default_rng(0)
    for h in range(5, 12):
        for w in (5, 6, 9, 10):
            x = rng.standard_normal((2, 2, h, w)).astype(np.float32)
            x[rng.random(x.shape) < 0.05] = np.nan
            got, want = run_onnx(proto, x)[0], eager(fn, ember.tensor(x))[0]
            np.testing.assert_array_equal(got, want)


def test_a_cnn_with_a_dynamic_image_size():
    model = nn.Sequential(nn.Conv2d(1, 4, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2),
                          nn.Conv2d(4, 4, 3), nn.AdaptiveAvgPool2d(1),
                          nn.Flatten()).eval()
    proto = ember.onnx.to_model(model, (ember.randn(1, 1, 12, 9),), input_names=["x"],
                                dynamic_axes=SPATIAL)
    for shape in [(1, 1, 12, 9), (3, 1, 17, 10), (2, 1, 8, 8)]:
        x = np.random.default_rng(1).standard_normal(shape).astype(np.float32)
        np.testing.assert_allclose(run_onnx(proto, x)[0], eager(model, ember.tensor(x))[0],
                                   rtol=1e-5, atol=1e-6)


def test_windows_that_fit_at_every_traced_size_are_refused_with_the_reason():
    with pytest.raises(ExportError, match="cannot tell ceil_mode from floor"):
        ember.onnx.to_model(lambda x: F.max_pool2d(x, 2), (ember.randn(1, 2, 6, 8),),
                            input_names=["x"], dynamic_axes={"x": {0: "b", 2: "h"}})


def test_an_output_size_equal_in_the_first_two_traces_is_declared_dynamic():
    # traced at h = 8 and 9 (H' = 4 both times) and 11 (5): it was declared {1, 2, 4, 4}
    fn = lambda x: F.max_pool2d(x, 2)  # noqa: E731
    proto = ember.onnx.to_model(fn, (ember.randn(1, 2, 8, 8),), input_names=["x"],
                                dynamic_axes={"x": {2: "h"}})
    dims = proto.graph.output[0].type.tensor_type.shape.dim
    assert [d.dim_value for d in dims[:2]] + [dims[3].dim_value] == [1, 2, 4]
    assert dims[2].dim_param and not dims[2].dim_value
    x = np.random.default_rng(0).standard_normal((1, 2, 13, 8)).astype(np.float32)
    np.testing.assert_array_equal(run_onnx(proto, x)[0], eager(fn, ember.tensor(x))[0])
