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


@pytest.mark.parametrize("dtype", ["float32", "float16", "float64"])
@pytest.mark.parametrize("kwargs", [
    {"kernel_size": 2, "stride": 2, "dilation": 2, "padding": 1},
    {"kernel_size": 2, "stride": 1, "dilation": 2, "padding": 1, "ceil_mode": True},
])
def test_a_window_all_in_the_padding_is_minus_inf(kwargs, dtype):
    # (onnxruntime's MaxPool starts from the lowest finite float: -3.4e38 came out)
    fn = lambda x: F.max_pool2d(x, **kwargs)  # noqa: E731
    proto = ember.onnx.to_model(fn, (ember.randn(1, 1, 7, 6).to(getattr(ember, dtype)),),
                                input_names=["x"], dynamic_axes={"x": {2: "h"}})
    for h in (1, 2, 7):
        x = np.arange(6 * h, dtype=dtype).reshape(1, 1, h, 6)
        np.testing.assert_array_equal(run_onnx(proto, x)[0], eager(fn, ember.tensor(x))[0])
    static = ember.onnx.to_model(fn, (ember.tensor(x[:, :, :1]),))
    np.testing.assert_array_equal(run_onnx(static, x[:, :, :1])[0],
                                  eager(fn, ember.tensor(x[:, :, :1]))[0])


@pytest.mark.parametrize("dtype", ["int32", "int16", "int8", "uint8"])
def test_integer_max_pooling_is_exact(dtype):
    # (int32/int16 failed ONNX's checker: MaxPool takes floats, int8 and uint8; pooled in
    # float64 now, an all-padding window at the dtype's least value as eagerly)
    info = np.iinfo(dtype)
    rng = np.random.default_rng(0)
    for kwargs in ({"kernel_size": 3, "stride": 2, "padding": 1},
                   {"kernel_size": 2, "stride": 2, "dilation": 2, "padding": 1}):
        fn = lambda x, kw=kwargs: F.max_pool2d(x, **kw)  # noqa: E731
        ints = lambda *s: rng.integers(info.min, info.max, s, endpoint=True, dtype=dtype)  # noqa: E731
        for dynamic in ({}, SPATIAL):
            proto = ember.onnx.to_model(fn, (ember.tensor(ints(1, 2, 7, 9)),),
                                        input_names=["x"], dynamic_axes=dynamic)
            for shape in [(1, 2, 7, 9)] + ([(2, 2, 1, 4), (1, 2, 12, 5)] if dynamic else []):
                x = ints(*shape)
                got, want = run_onnx(proto, x)[0], eager(fn, ember.tensor(x))[0]
                assert got.dtype == want.dtype and np.array_equal(got, want)


def test_int64_max_pooling_is_refused_with_the_reason():
    with pytest.raises(ExportError, match="max pooling of int64.*2\\*\\*53"):
        ember.onnx.to_model(lambda x: F.max_pool2d(x, 2), (ember.arange(16).reshape(1, 1, 4, 4),))
