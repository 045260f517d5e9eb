"""ONNX export of ``where`` and ``masked_fill`` against eager in onnxruntime, sign of zero
included: onnxruntime's Where turns a -0 from its first branch into +0 and rewrites
``Where(Not(c), a, b)`` as ``Where(c, b, a)``; the converter works around both."""

from __future__ import annotations

import numpy as np
import pytest

import ember
from tests.export.onnx_helpers import eager, run_onnx

SPECIAL = [0.0, -0.0, 1.0, -2.5, 1e-40, 5e-324, np.inf, -np.inf, np.nan, 3e38, -7e-8]
FLOATS = ["float32", "float64", "float16", "bfloat16"]


def _values(dtype, n=40, seed=0):
    rng = np.random.default_rng(seed)  # (float16: no value that the cast makes inf, see
    special = np.array(SPECIAL * 4)[:n]  # FINDINGS: onnxruntime drops Cast pairs around f16)
    if dtype == "float16":
        special[special == 3e38] = 6e4
    return np.where(rng.random(n) < 0.7, special, rng.standard_normal(n))


def _same(got, want, rtol=0.0):
    assert got.dtype == want.dtype and got.shape == want.shape
    g, w = got.astype(np.float64), want.astype(np.float64)
    np.testing.assert_allclose(g, w, rtol=rtol, atol=0)  # (NaN == NaN here)
    number = ~np.isnan(w)
    np.testing.assert_array_equal(np.signbit(g[number]), np.signbit(w[number]))


def _check(fn, arrays, dtype, n_dynamic=True, rtol=0.0):
    """Exports ``fn`` at the first 7 entries (dynamic length), runs all 40 in onnxruntime."""
    cast = lambda t: t if t.dtype == ember.bool else t.to(getattr(ember, dtype))  # noqa: E731
    def model(*ts):
        out = fn(*(cast(t) for t in ts))
        return out.float() if dtype == "bfloat16" else out  # (onnxruntime returns no bf16)
    names = [f"in{i}" for i in range(len(arrays))]
    tensors = [ember.tensor(a) for a in arrays]
    proto = ember.onnx.to_model(model, tuple(ember.tensor(a[:7]) for a in arrays),
                                input_names=names,
                                dynamic_axes={n: {0: "n"} for n in names} if n_dynamic
                                else None)
    _same(run_onnx(proto, *arrays)[0], eager(model, *tensors)[0], rtol)


@pytest.mark.parametrize("dtype", FLOATS)
@pytest.mark.parametrize("form", ["plain", "not", "ne", "isfinite", "scalar_minus_zero"])
def test_where_keeps_signed_zeros_nan_and_inf(dtype, form):
    x = _values(dtype, seed=1).astype(np.float32 if dtype != "float64" else np.float64)
    y = _values(dtype, seed=2).astype(x.dtype)
    c = np.random.default_rng(3).random(40) < 0.5
    fns = {"plain": lambda c, x, y: ember.where(c, x, y),
           "not": lambda c, x, y: ember.where(~c, x, y),
           "ne": lambda c, x, y: ember.where(x != y, x, y),
           "isfinite": lambda c, x, y: ember.where(ember.isfinite(x), x, y),
           "scalar_minus_zero": lambda c, x, y: ember.where(c, ember.tensor(-0.0).to(x.dtype),
                                                            y)}
    _check(fns[form], [c, x, y], dtype)


@pytest.mark.parametrize("dtype", FLOATS)
@pytest.mark.parametrize("value", [-0.0, 0.0, -np.inf, np.nan])
@pytest.mark.parametrize("negate", [False, True])
def test_masked_fill_keeps_signed_zeros(dtype, value, negate):
    x = _values(dtype, seed=4).astype(np.float32 if dtype != "float64" else np.float64)
    m = np.random.default_rng(5).random(40) < 0.5
    fn = lambda m, x: x.masked_fill(~m if negate else m, value)  # noqa: E731
    _check(fn, [m, x], dtype)


@pytest.mark.parametrize("dtype", ["int8", "uint8", "int16", "int32", "int64", "bool"])
def test_where_and_masked_fill_of_integers_and_bools(dtype):
    rng = np.random.default_rng(6)
    x = rng.integers(0, 100, 40).astype(np.int64)
    y = rng.integers(0, 100, 40).astype(np.int64)
    c = rng.random(40) < 0.5
    _check(lambda c, x, y: ember.where(~c, x, y).masked_fill(c, 1), [c, x, y], dtype)


def test_where_broadcasts_a_minus_zero_row_over_a_dynamic_batch():
    x = np.array([-0.0, 0.0, -0.0, 1.0], np.float32)
    y = np.full((5, 4), -0.0, np.float32)
    c = np.random.default_rng(7).random((5, 4)) < 0.5
    fn = lambda c, y, x: ember.where(c, x, -y)  # noqa: E731
    proto = ember.onnx.to_model(fn, (ember.tensor(c[:3]), ember.tensor(y[:3]), ember.tensor(x)),
                                input_names=["c", "y", "x"],
                                dynamic_axes={"c": {0: "b"}, "y": {0: "b"}})
    _same(run_onnx(proto, c, y, x)[0],
          eager(fn, ember.tensor(c), ember.tensor(y), ember.tensor(x))[0])


def test_where_of_a_constant_without_minus_zero_stays_one_node():
    fn = lambda c, x: ember.where(c, ember.tensor(-np.inf), x)  # noqa: E731
    proto = ember.onnx.to_model(fn, (ember.tensor([True, False]), ember.tensor([-0.0, 1.0])))
    assert [n.op_type for n in proto.graph.node if n.op_type != "Identity"] == ["Where"]


FIRST_BRANCHES = {"abs": ember.abs, "exp": ember.exp, "sigmoid": ember.sigmoid,
                  "softmax": lambda x: ember.softmax(x, 0),
                  "compare_cast": lambda x: (x > 0.5).to(x.dtype),  # (not 0: see _values)
                  "abs_cast": lambda x: ember.abs(x.float()).to(x.dtype)}


@pytest.mark.parametrize("dtype", ["float32", "float64", "float16"])  # (bfloat16: no
@pytest.mark.parametrize("branch", sorted(FIRST_BRANCHES))  # onnxruntime Exp, Abs, ...)
@pytest.mark.parametrize("negate", [False, True])
def test_a_first_branch_that_cannot_be_minus_zero_keeps_one_where(dtype, branch, negate):
    # (the product form, Xor + 2 Where + Mul, about doubled the time of a float where in
    # onnxruntime; it is only needed where the first branch may hold -0)
    made = FIRST_BRANCHES[branch]
    fn = (lambda c, x, y: ember.where(~c, y, made(x))) if negate else \
        (lambda c, x, y: ember.where(c, made(x), y))
    x = _values(dtype, seed=1).astype(np.float32 if dtype != "float64" else np.float64)
    y = _values(dtype, seed=2).astype(x.dtype)
    c = np.random.default_rng(3).random(40) < 0.5
    _check(fn, [c, x, y], dtype, rtol=1e-2 if dtype in ("float16", "bfloat16") else 1e-6)
    cast = lambda t: t if t.dtype == ember.bool else t.to(getattr(ember, dtype))  # noqa: E731
    proto = ember.onnx.to_model(lambda *ts: fn(*(cast(t) for t in ts)),
                                tuple(ember.tensor(a) for a in (c, x, y)))
    ops = [n.op_type for n in proto.graph.node]
    assert ops.count("Where") == 1 and "Xor" not in ops, ops


@pytest.mark.parametrize("made", [ember.sqrt, lambda x: x.double().float(),
                                  lambda x: ember.relu(x.half())])
def test_a_first_branch_that_may_be_minus_zero_keeps_the_product(made):
    # (sqrt(-0) is -0; a cast of a float keeps it; relu keeps it in float16)
    x = np.array([-0.0, 0.0, 4.0, -0.0], dtype=np.float32)
    y = np.array([1.0, -0.0, 2.0, 3.0], dtype=np.float32)
    c = np.array([True, False, True, True])
    _check(lambda c, x, y: ember.where(c, made(x), y), [c, x, y], "float32")
