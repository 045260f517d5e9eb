"""ONNX export of signbit, copysign's sign bits, bit shifts, logit, diagonal and logsumexp
against eager in onnxruntime: special values, every integer width, dynamic axes."""

from __future__ import annotations

import numpy as np
import pytest

import ember
from tests.export.onnx_helpers import eager, run_onnx

FLOATS = np.array([0.0, -0.0, 1.5, -2.0, 1e-40, -1e-45, 3e38, -3e38, np.inf, -np.inf])


def dynamic(fn, *args, **kwargs):
    names = [f"x{i}" for i in range(len(args))]
    return ember.onnx.to_model(fn, args, input_names=names,
                               dynamic_axes={n: {0: "n"} for n in names}, **kwargs)


@pytest.mark.parametrize("opset", [18, 26])
@pytest.mark.parametrize("dtype", ["float32", "float64", "float16"])
def test_signbit_reads_negative_zero_and_infinities(dtype, opset):
    x = ember.tensor(FLOATS).to(getattr(ember, dtype))
    proto = dynamic(lambda t: ember.signbit(t), x[:4], opset_version=opset)
    np.testing.assert_array_equal(run_onnx(proto, x.numpy())[0], np.signbit(x.numpy()))


def test_signbit_of_nan_is_its_bit_from_opset_26_and_false_before():
    x = np.array([np.nan, -np.nan, 1.0], dtype=np.float32)
    fn = lambda t: ember.signbit(t)  # noqa: E731
    new = ember.onnx.to_model(fn, ember.tensor(x), opset_version=26)
    np.testing.assert_array_equal(run_onnx(new, x)[0], [False, True, False])
    old = ember.onnx.to_model(fn, ember.tensor(x))
    np.testing.assert_array_equal(run_onnx(old, x)[0], [False, False, False])


@pytest.mark.parametrize("dtype", ["bool", "uint8", "int8", "int16", "int32", "int64"])
def test_signbit_of_integers(dtype):
    x = ember.tensor(np.array([0, 1, -1, 5, -128], dtype=np.int64)).to(getattr(ember, dtype))
    fn = lambda t: ember.signbit(t)  # noqa: E731
    np.testing.assert_array_equal(run_onnx(dynamic(fn, x[:3]), x.numpy())[0], eager(fn, x)[0])


@pytest.mark.parametrize("dtype", ["float32", "float64", "float16"])
def test_copysign_copies_the_bits_from_opset_26(dtype):
    a, b = (g.ravel() for g in np.meshgrid(np.append(FLOATS, [np.nan, -np.nan]),
                                           np.append(FLOATS, [np.nan, -np.nan]), indexing="ij"))
    a, b = (ember.tensor(v.astype(dtype)) for v in (a, b))
    fn = lambda x, y: ember.copysign(x, y)  # noqa: E731
    got = run_onnx(dynamic(fn, a[:5], b[:5], opset_version=26), a.numpy(), b.numpy())[0]
    want = eager(fn, a, b)[0]
    np.testing.assert_array_equal(got, want)
    np.testing.assert_array_equal(np.signbit(got), np.signbit(want))  # (NaN's too)


@pytest.mark.parametrize("dtype", ["uint8", "int8", "int16", "int32", "int64"])
@pytest.mark.parametrize("op", ["<<", ">>"])
def test_shifts_of_every_width_and_amount(op, dtype):
    info = np.iinfo(getattr(np, dtype))
    bits = info.bits
    values = np.array([0, 1, 3, info.max, info.min, info.max // 3, info.min + 7, 100], np.int64)
    values = values.astype(dtype)
    amounts = np.arange(-2 if info.min < 0 else 0, bits + 3).astype(dtype)
    a, s = (ember.tensor(g.ravel()) for g in np.meshgrid(values, amounts, indexing="ij"))
    fn = (lambda x, y: x << y) if op == "<<" else (lambda x, y: x >> y)
    for opset in (17, 18):
        proto = dynamic(fn, a[:6], s[:6], opset_version=opset)
        got = run_onnx(proto, a.numpy(), s.numpy())[0]
        want = eager(fn, a, s)[0]
        assert got.dtype == want.dtype
        np.testing.assert_array_equal(got, want)


def test_shift_by_a_python_int_broadcasts():
    a = ember.tensor([[1, -8], [7, -1]], dtype=ember.int32)
    for fn in (lambda x: x << 3, lambda x: x >> 1, lambda x: 1 << x.abs()):
        proto = ember.onnx.to_model(fn, a)
        np.testing.assert_array_equal(run_onnx(proto, a.numpy())[0], eager(fn, a)[0])


@pytest.mark.parametrize("dtype", ["float32", "float64", "float16"])
@pytest.mark.parametrize("eps", [None, 1e-6, 0.25, 0.0])
def test_logit_with_and_without_eps(eps, dtype):
    x = np.array([0.0, -0.0, 1.0, 0.5, 1e-7, 1 - 1e-7, 0.2, 0.9, -0.5, 1.5, np.inf, -np.inf,
                  np.nan, 1e-40, 0.999])
    x = ember.tensor(x.astype(dtype))
    fn = lambda t: ember.logit(t, eps)  # noqa: E731
    got = run_onnx(dynamic(fn, x[:4]), x.numpy())[0]
    want = eager(fn, x)[0]
    assert got.dtype == want.dtype
    np.testing.assert_allclose(got, want, rtol={"float16": 1e-3}.get(dtype, 1e-6), atol=0)


def test_logit_of_integers_is_float32():
    x = ember.tensor([0, 1, 2])
    fn = lambda t: ember.logit(t)  # noqa: E731
    np.testing.assert_array_equal(run_onnx(ember.onnx.to_model(fn, x), x.numpy())[0],
                                  eager(fn, x)[0])


@pytest.mark.parametrize("offset", [0, 1, -2, 5, -7])
@pytest.mark.parametrize("dims", [(0, 1), (1, 0), (2, 0), (-1, 1)])
def test_diagonal_with_a_dynamic_batch(dims, offset):
    x = ember.tensor(np.arange(2 * 4 * 5).reshape(2, 4, 5).astype(np.float32))
    fn = lambda t: t.diagonal(offset, *dims) * 2  # noqa: E731
    proto = ember.onnx.to_model(fn, x, input_names=["x"], dynamic_axes={"x": {0: "b"}})
    for shape in ((2, 4, 5), (3, 4, 5)):
        y = ember.tensor(np.random.default_rng(0).standard_normal(shape).astype(np.float32))
        np.testing.assert_array_equal(run_onnx(proto, y.numpy())[0], eager(fn, y)[0])


@pytest.mark.parametrize("offset", [0, 2, -1])
def test_diagonal_over_dynamic_matrix_sizes(offset):
    x = ember.tensor(np.arange(3 * 4 * 6).reshape(3, 4, 6).astype(np.int64))
    fn = lambda t: t.diagonal(offset, 1, 2)  # noqa: E731
    proto = ember.onnx.to_model(fn, x, input_names=["x"],
                                dynamic_axes={"x": {1: "h", 2: "w"}})
    for shape in ((3, 4, 6), (3, 7, 3), (3, 2, 9), (3, 1, 1)):
        y = ember.tensor(np.arange(np.prod(shape)).reshape(shape))
        np.testing.assert_array_equal(run_onnx(proto, y.numpy())[0], eager(fn, y)[0])


def test_diagonal_of_bools_and_an_empty_diagonal():
    x = ember.tensor(np.eye(3, 4, 1, dtype=bool))
    for fn in (lambda t: t.diagonal(1), lambda t: t.diagonal(9), lambda t: ember.diag(t)):
        proto = ember.onnx.to_model(fn, x)
        np.testing.assert_array_equal(run_onnx(proto, x.numpy())[0], eager(fn, x)[0])


def test_logsumexp_rows_of_infinities_and_nan_with_a_dynamic_batch():
    rows = np.array([[-np.inf] * 4, [np.inf, 1.0, 2.0, 3.0], [np.nan, 0.0, 1.0, 2.0],
                     [1e30, 1e30, -1e30, 0.0], [-1e30, -1e30, -1e30, -1e30],
                     [0.0, -0.0, 1e-30, -88.0], [-np.inf, 5.0, -np.inf, -np.inf]],
                    dtype=np.float32)
    for fn in (lambda t: ember.logsumexp(t, 1), lambda t: ember.logsumexp(t, 1, keepdim=True)):
        proto = dynamic(fn, ember.tensor(rows[:3]))
        got = run_onnx(proto, rows)[0]
        want = eager(fn, ember.tensor(rows))[0]
        np.testing.assert_allclose(got, want, rtol=1e-6, atol=0)


def test_logsumexp_along_a_dynamic_axis():
    x = np.array([[-np.inf] * 5, [1, 2, np.inf, 0, 0], [np.nan, 1, 2, 3, 4]], np.float32)
    fn = lambda t: ember.logsumexp(t, 1)  # noqa: E731
    proto = ember.onnx.to_model(fn, ember.tensor(x[:, :3]), input_names=["t"],
                                dynamic_axes={"t": {1: "n"}})
    for k in (3, 5, 1):
        np.testing.assert_allclose(run_onnx(proto, x[:, :k])[0],
                                   eager(fn, ember.tensor(x[:, :k]))[0], rtol=1e-6)
