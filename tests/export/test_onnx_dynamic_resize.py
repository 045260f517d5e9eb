"""ONNX export of ``interpolate`` over dynamic spatial sizes: eager's taps computed at run
time, against eager in onnxruntime at sizes other than the traced (equal taps: the values
agree to rounding)."""

from __future__ import annotations

import numpy as np
import pytest
import torch

import ember
import ember.nn as nn
import ember.nn.functional as F
from ember.onnx import ExportError
from tests.export.onnx_helpers import eager, run_onnx

SPATIAL = {"x": {0: "b", 2: "h", 3: "w"}}


@pytest.mark.parametrize("kwargs", [
    {"scale_factor": 2, "mode": "nearest"},
    {"scale_factor": 1.7, "mode": "nearest"},
    {"scale_factor": (0.5, 1.3), "mode": "nearest-exact"},
    {"scale_factor": 2, "mode": "bilinear"},
    {"scale_factor": 0.6, "mode": "bilinear"},
    {"scale_factor": 1.5, "mode": "bilinear", "align_corners": True},
    {"size": (4, 7), "mode": "bilinear"},
    {"size": (4, 7), "mode": "nearest"},
])
@pytest.mark.parametrize("dtype", ["float32", "float16"])
def test_interpolate_over_dynamic_sizes(kwargs, dtype):
    fn = lambda x: F.interpolate(x, **kwargs)  # noqa: E731
    example = ember.randn(1, 2, 5, 6).to(getattr(ember, dtype))
    proto = ember.onnx.to_model(fn, (example,), input_names=["x"], dynamic_axes=SPATIAL)
    rng = np.random.default_rng(0)
    for shape in [(1, 2, 5, 6), (2, 2, 9, 4), (1, 2, 3, 11), (3, 2, 16, 16)]:
        x = rng.standard_normal(shape).astype(dtype)
        got, want = run_onnx(proto, x)[0], eager(fn, ember.tensor(x))[0]
        assert got.shape == want.shape
        np.testing.assert_allclose(got, want, rtol=1e-6 if dtype == "float32" else 1e-3,
                                   atol=1e-6 if dtype == "float32" else 1e-3)


@pytest.mark.parametrize("mode", ["nearest", "nearest-exact"])
@pytest.mark.parametrize(("dtype", "high"), [("int32", 2**31 - 1), ("int64", 2**62)])
def test_nearest_interpolate_of_integers_above_2_24_is_exact(mode, dtype, high):
    # (the values were gathered through float32: 16777217 came out as 16777216)
    fn = lambda x: F.interpolate(x, scale_factor=(2, 0.7), mode=mode)  # noqa: E731
    rng = np.random.default_rng(0)
    example = ember.tensor(rng.integers(2**24, high, (1, 2, 5, 6), dtype=dtype))
    proto = ember.onnx.to_model(fn, (example,), input_names=["x"], dynamic_axes=SPATIAL)
    for shape in [(1, 2, 5, 6), (2, 2, 9, 4), (1, 2, 3, 11)]:
        x = rng.integers(2**24, high, shape, dtype=dtype)
        x[0, 0, 0, 0] = 16777217
        got, want = run_onnx(proto, x)[0], eager(fn, ember.tensor(x))[0]
        assert got.dtype == want.dtype and np.array_equal(got, want)


def test_an_upsampling_decoder_with_a_dynamic_image_size():
    model = nn.Sequential(nn.Conv2d(1, 2, 3, padding=1), nn.Upsample(scale_factor=2,
                                                                     mode="bilinear"),
                          nn.Conv2d(2, 1, 3, padding=1)).eval()
    proto = ember.onnx.to_model(model, (ember.randn(1, 1, 6, 5),), input_names=["x"],
                                dynamic_axes=SPATIAL)
    x = np.random.default_rng(1).standard_normal((2, 1, 9, 7)).astype(np.float32)
    np.testing.assert_allclose(run_onnx(proto, x)[0], eager(model, ember.tensor(x))[0],
                               rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize(("kwargs", "why"), [
    ({"scale_factor": 2, "mode": "bicubic"}, "mode 'cubic' over a dynamic size"),
    ({"scale_factor": 2.5, "mode": "bilinear", "recompute_scale_factor": True},
     "without recompute_scale_factor"),
])
def test_what_cannot_follow_a_dynamic_size_is_refused_with_the_reason(kwargs, why):
    with pytest.raises(ExportError, match=why):
        ember.onnx.to_model(lambda x: F.interpolate(x, **kwargs), (ember.randn(1, 1, 5, 6),),
                            input_names=["x"], dynamic_axes=SPATIAL)


def test_a_scale_that_leaves_the_traced_size_unchanged_names_interpolate():
    # (floor(9 * 1.1) = 9: eager skips the resample there; the error named no op)
    fn = lambda x: F.interpolate(x, scale_factor=1.1)  # noqa: E731
    with pytest.raises(ExportError, match="one more: resample at .*test_onnx_dynamic_resize"
                                          ".*skip resampling"):
        ember.onnx.to_model(fn, (ember.randn(1, 1, 9, 10),), input_names=["x"],
                            dynamic_axes={"x": {2: "h", 3: "w"}})


@pytest.mark.parametrize(("kwargs", "traced", "runs"), [
    ({"scale_factor": 1.1, "mode": "linear"}, (20,), [(6,), (9,), (30,)]),
    ({"scale_factor": 1.1, "mode": "bilinear"}, (20, 20), [(6, 6), (6, 20)]),
    ({"scale_factor": (1.1, 2.0), "mode": "bilinear"}, (20, 20), [(6, 6)]),
    ({"scale_factor": 1.1, "mode": "trilinear"}, (12, 12, 12), [(6, 6, 6)]),
    ({"scale_factor": 1.1, "mode": "nearest"}, (20,), [(6,), (30,)]),
    ({"scale_factor": 1.1, "mode": "nearest"}, (12, 12, 12), [(6, 6, 6)]),
    ({"scale_factor": 1.1, "mode": "nearest"}, (20, 20), [(6, 6)]),
    ({"scale_factor": 2.4, "mode": "nearest"}, (5, 5), [(2, 2), (1, 1), (7, 7)]),
])
def test_sizes_a_scale_keeps_or_doubles_follow_eager_and_torch(kwargs, traced, runs):
    # (traced where the scale resamples; run where eager copies a kept axis or, 2-D nearest,
    # reads i // 2 on a doubled one: the graph resampled by 1 / scale there)
    fn = lambda x: F.interpolate(x, **kwargs)  # noqa: E731
    axes = {"x": {i: f"d{i}" for i in range(2, 2 + len(traced))}}
    rng = np.random.default_rng(0)
    example = ember.tensor(rng.standard_normal((1, 2) + traced).astype("float32"))
    proto = ember.onnx.to_model(fn, (example,), input_names=["x"], dynamic_axes=axes)
    for spatial in runs:
        x = rng.standard_normal((1, 2) + spatial).astype("float32")
        got = run_onnx(proto, x)[0]
        want = torch.nn.functional.interpolate(torch.tensor(x), **kwargs).numpy()
        np.testing.assert_allclose(got, eager(fn, ember.tensor(x))[0], rtol=1e-6, atol=1e-6)
        np.testing.assert_allclose(got, want, rtol=1e-6, atol=1e-6)


@pytest.mark.parametrize(("kwargs", "counts"), [
    ({"scale_factor": 2, "mode": "bilinear"}, (55, 0, 4)),  # (no size is kept: no copy branch)
    ({"scale_factor": 0.5, "mode": "bilinear"}, (55, 0, 4)),
    ({"scale_factor": 1.5, "mode": "bilinear"}, (63, 2, 6)),  # (6 * 1.5 -> 9, but 1 -> 1)
    ({"scale_factor": 2, "mode": "nearest"}, (29, 0, 2)),  # (nor doubled apart from i // 2)
    ({"scale_factor": 3, "mode": "nearest"}, (29, 0, 2)),
    ({"scale_factor": 2.4, "mode": "nearest"}, (37, 2, 2)),  # (2 * 2.4 -> 4; none kept)
    ({"scale_factor": 2, "mode": "nearest-exact"}, (31, 0, 2)),  # (no unused Equal)
])
def test_branches_no_size_can_take_are_left_out(kwargs, counts):
    # (nodes, Where (each with its Equal), Gather: they were in every graph, bilinear x2 had
    # (63, 2, 6), not (55, 0, 4); nearest-exact's unread Equal made 33 nodes)
    proto = ember.onnx.to_model(lambda x: F.interpolate(x, **kwargs), (ember.randn(1, 1, 6, 5),),
                                input_names=["x"], dynamic_axes=SPATIAL)
    ops = [n.op_type for n in proto.graph.node]
    assert ops.count("Where") == ops.count("Equal")
    assert (len(ops), ops.count("Where"), ops.count("Gather")) == counts


@pytest.mark.parametrize("kwargs", [{"scale_factor": 20.5}, {"size": 82}, {"scale_factor": 41.0},
                                    {"size": 123}])
@pytest.mark.parametrize("mode", ["nearest", "nearest-exact"])
@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("nd", [1, 3])
def test_1d_3d_nearest_over_a_dynamic_size_takes_the_generic_index(kwargs, mode, dtype, nd):
    # (the graph floored (o + 0.5)·ratio, the 2-D kernel's index: 2 -> 41·2 nearest-exact
    # read o = 20 from 0, eager and torch 1) mend62c
    if nd == 3 and "size" in kwargs:
        kwargs = {"size": (2, 3, kwargs["size"])}
    fn = lambda x: F.interpolate(x, mode=mode, **kwargs)  # noqa: E731
    lead = (1, 2) + (2, 3)[:nd - 1]
    example = ember.zeros(*lead, 3, dtype=getattr(ember, dtype))
    proto = ember.onnx.to_model(fn, (example,), input_names=["x"],
                                dynamic_axes={"x": {nd + 1: "n"}})
    for n in (2, 4, 5, 8):
        x = np.broadcast_to(np.arange(n, dtype=dtype), lead + (n,)).copy()
        got, want = run_onnx(proto, x)[0], eager(fn, ember.tensor(x))[0]
        ref = torch.nn.functional.interpolate(torch.tensor(x), mode=mode, **kwargs).numpy()
        np.testing.assert_array_equal(want, ref)
        np.testing.assert_array_equal(got, want)
