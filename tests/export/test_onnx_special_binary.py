"""ONNX export of two-argument special functions without an ONNX op (logaddexp,
logaddexp2, hypot, xlogy, fmax, fmin, copysign, heaviside) against eager in onnxruntime, on
every pair of special values, at the traced size and another (a dynamic axis)."""

from __future__ import annotations

import numpy as np
import pytest

import ember
from tests.export.onnx_helpers import eager, run_onnx

SPECIAL = [0.0, -0.0, 1.0, -1.0, 0.5, 2.5, -3e-30, 1e-40, 1e30, -1e38, 60.0, -700.0, np.inf,
           -np.inf, np.nan]
RTOL = {"float64": 1e-15, "float32": 3e-7, "float16": 1e-3, "bfloat16": 8e-3}
OPS = {"logaddexp": ember.logaddexp, "logaddexp2": ember.logaddexp2, "hypot": ember.hypot,
       "xlogy": ember.xlogy, "fmax": ember.fmax, "fmin": ember.fmin,
       "copysign": ember.copysign, "heaviside": ember.heaviside}


def pairs(dtype):
    a, b = (g.ravel() for g in np.meshgrid(SPECIAL, SPECIAL, indexing="ij"))
    rng = np.random.default_rng(1)
    a = np.concatenate([a, rng.standard_normal(300) * 10, rng.standard_normal(100) * 1e3])
    b = np.concatenate([b, rng.standard_normal(300) * 10, rng.standard_normal(100) * 1e3])
    return (ember.tensor(v).to(getattr(ember, dtype)) for v in (a, b))


def exported(fn, a, b, **kwargs):
    proto = ember.onnx.to_model(fn, (a[:7], b[:7]), input_names=["a", "b"],
                                dynamic_axes={"a": {0: "n"}, "b": {0: "n"}}, **kwargs)
    return run_onnx(proto, a.numpy(), b.numpy())[0]


def assert_close(got, want, rtol, signed_zeros=True):
    assert got.dtype == want.dtype and got.shape == want.shape
    got, want = got.astype(np.float64), want.astype(np.float64)
    np.testing.assert_array_equal(np.isnan(got), np.isnan(want))
    number = ~np.isnan(want)
    np.testing.assert_allclose(got[number], want[number], rtol=rtol, atol=0)
    if signed_zeros:
        np.testing.assert_array_equal(np.signbit(got[number]), np.signbit(want[number]))


@pytest.mark.parametrize("dtype", ["float32", "float64", "float16", "bfloat16"])
@pytest.mark.parametrize("name", sorted(OPS))
def test_special_binary_on_every_pair_of_special_values(name, dtype):
    a, b = pairs(dtype)
    fn = lambda x, y: OPS[name](x, y)  # noqa: E731
    if dtype == "bfloat16":  # (fed as float32: bfloat16 inputs are not retraced resized)
        a, b = a.float(), b.float()
        fn = lambda x, y: OPS[name](x.bfloat16(), y.bfloat16()).float()  # noqa: E731
    got = exported(fn, a, b)
    want = eager(fn, a, b)[0]
    if name in ("fmax", "fmin"):  # (±0 against ∓0: either, as in NumPy and C)
        tie = (a.numpy().astype(np.float64) == 0) & (b.numpy().astype(np.float64) == 0)
        got, want = got[~tie], want[~tie]
    assert_close(got, want, RTOL[dtype])



def test_logaddexp_is_stable_far_apart_and_near_each_other():
    a = ember.tensor([1000.0, -1000.0, 1e-8, 88.0, -88.0, 0.0], dtype=ember.float32)
    b = ember.tensor([999.0, -1000.0, -1e-8, -88.0, 88.0, -30.0], dtype=ember.float32)
    for fn in (ember.logaddexp, ember.logaddexp2):
        assert_close(exported(fn, a, b), eager(fn, a, b)[0], 3e-7)


def test_float32_logaddexp_near_zero_is_computed_in_float64_as_eagerly():
    # exp(a) + exp(b) ≈ 1: the result near 0, where float32 steps lose every digit (up to
    # 22% apart from eager's float64 rounded once before the export did so too)
    rng = np.random.default_rng(3)
    a = rng.uniform(-3, -0.05, 500)
    b = np.log1p(-np.exp(a)) + rng.standard_normal(500) * 1e-4
    a, b = (ember.tensor(v.astype(np.float32)) for v in (a, b))
    a[:2], b[:2] = -0.16220288, -1.899208
    assert_close(exported(ember.logaddexp, a, b), eager(ember.logaddexp, a, b)[0], 3e-7)


@pytest.mark.parametrize("dtype", ["bool", "uint8", "int8", "int16", "int32", "int64"])
@pytest.mark.parametrize("name", ["fmax", "fmin", "heaviside"])
def test_integer_selections(name, dtype):
    rng = np.random.default_rng(2)
    info = np.iinfo(getattr(np, dtype)) if dtype != "bool" else None
    lo, hi = (0, 2) if info is None else (info.min, info.max)
    a, b = (ember.tensor(rng.integers(lo, hi, 60, endpoint=True).astype(dtype))
            for _ in range(2))
    a[:5] = 0
    fn = lambda x, y: OPS[name](x, y)  # noqa: E731
    np.testing.assert_array_equal(exported(fn, a, b), eager(fn, a, b)[0])


def test_ints_promote_and_broadcast():
    a = ember.tensor([[1], [0], [-3]])
    b = ember.tensor([0.5, -0.0, 2.0])
    for name in ("xlogy", "copysign", "hypot", "logaddexp"):
        fn = lambda x, y: OPS[name](x.float() if name in ("hypot", "logaddexp") else x, y)  # noqa: E731,B023
        proto = ember.onnx.to_model(fn, (a, b))
        assert_close(run_onnx(proto, a.numpy(), b.numpy())[0], eager(fn, a, b)[0], 3e-7)


@pytest.mark.parametrize("dtype", ["int16", "bfloat16"])
def test_maximum_and_minimum_where_onnxruntime_has_no_max(dtype):
    wanted = getattr(ember, dtype)
    fed = ember.int16 if dtype == "int16" else ember.float32  # (onnxruntime takes no bfloat16)
    a = ember.tensor([-300.0, 7.0, 0.5, 12.0]).to(wanted).to(fed)
    b = ember.tensor([5.0, -2.0, 0.25, 12.0]).to(wanted).to(fed)
    for op in (ember.maximum, ember.minimum):
        fn = lambda x, y: op(x.to(wanted), y.to(wanted)).float()  # noqa: E731,B023
        proto = ember.onnx.to_model(fn, (a, b))
        np.testing.assert_array_equal(run_onnx(proto, a.numpy(), b.numpy())[0], eager(fn, a, b)[0])


@pytest.mark.parametrize("dtype", ["float32", "float64", "int64", "bool"])
@pytest.mark.parametrize("kw", [{}, dict(equal_nan=True), dict(rtol=0.1, atol=0.0),
                                dict(rtol=0.0, atol=np.inf), dict(atol=1.0)])
def test_isclose_matches_torch_on_special_values(dtype, kw):
    """isclose had no converter (ExportError naming it)."""
    import torch

    a, b = (t.numpy() for t in pairs("float64"))
    if dtype == "bool":
        a, b = a > 0, b > 0
    elif dtype == "int64":
        a, b = np.nan_to_num(a).clip(-1e6, 1e6).round(), np.nan_to_num(b).clip(-1e6, 1e6).round()
    a, b = a.astype(dtype), b.astype(dtype)
    proto = ember.onnx.to_model(lambda x, y: ember.isclose(x, y, **kw),
                                (ember.tensor(a), ember.tensor(b)))
    want = torch.isclose(torch.tensor(a), torch.tensor(b), **kw).numpy()
    np.testing.assert_array_equal(run_onnx(proto, a, b)[0], want)


@pytest.mark.parametrize("dtype", ["float16", "bfloat16", "float32", "int64"])
@pytest.mark.parametrize("rtol,atol", [(1e-3, 1e-3), (0.0, 1.0), (0.1, 1e-5), (1e-7, 1 - 1e-9)])
def test_isclose_rounds_in_the_dtype_as_torch_at_the_tolerance_edge(dtype, rtol, atol):
    """The converter computed in float64, as eager did; torch rounds each step in the dtype
    (float16 isclose(-0.000374, 0.0006266, 1e-3, 1e-3) is True)."""
    import torch

    rng = np.random.default_rng(0)
    b = rng.standard_normal(4000) * 10.0 ** rng.uniform(-8, 4, 4000)
    a = b + rng.choice([-1, 1], 4000) * (atol + rtol * np.abs(b)) * rng.uniform(0.99, 1.01, 4000)
    if dtype == "int64":
        a = np.round(b * 2.0 ** rng.integers(0, 40, 4000))
        b = a + rng.integers(-3, 4, 4000)
    x, y = (torch.tensor(v).to(getattr(torch, dtype)) for v in (a, b))
    fed = "float32" if dtype == "bfloat16" else dtype  # (onnxruntime takes no bfloat16)
    ex, ey = (v.to(getattr(torch, fed)).numpy() for v in (x, y))
    wanted = getattr(ember, dtype)
    proto = ember.onnx.to_model(lambda p, q: ember.isclose(p.to(wanted), q.to(wanted), rtol, atol),
                                (ember.tensor(ex), ember.tensor(ey)))
    np.testing.assert_array_equal(run_onnx(proto, ex, ey)[0],
                                  torch.isclose(x, y, rtol, atol).numpy())
