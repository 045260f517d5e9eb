"""ONNX export of the gamma family, i0, erfc (no ONNX op: composed in float64), gcd and lcm
(Euclid unrolled), checked in onnxruntime against Ember's eager values, poles and infinities
included."""

import numpy as np
import pytest

import ember
from tests.export.onnx_helpers import eager, onnx, run_onnx

POLES = [0.0, -0.0, -1.0, -3.0, np.inf, -np.inf, np.nan]


def points(dtype):
    rng = np.random.default_rng(0)
    spread = np.concatenate([rng.uniform(-30, 30, 300), rng.uniform(-3, 3, 300),
                             np.exp(rng.uniform(-20, 6, 200)), POLES,
                             [1.0, 2.0, 0.5, -2.5, -0.5, 1.4616, 1e-8, -1e-8, 14.99, 15.0,
                              80.0, 100.0]])
    return ember.tensor(spread, dtype=dtype)


def check(fn, x, rtol, atol):
    proto = ember.onnx.to_model(fn, (x,))
    onnx.checker.check_model(proto, full_check=True)
    got, = run_onnx(proto, x.numpy())
    want, = eager(fn, x)
    assert got.dtype == want.dtype
    np.testing.assert_allclose(got, want, rtol=rtol, atol=atol, equal_nan=True)


@pytest.mark.parametrize("dtype", [ember.float32, ember.float64])
@pytest.mark.parametrize("fn", [ember.lgamma, ember.digamma, ember.i0,
                                lambda x: ember.polygamma(1, x),
                                lambda x: ember.polygamma(2, x),
                                lambda x: ember.polygamma(3, x)],
                         ids=["lgamma", "digamma", "i0", "trigamma", "polygamma2", "polygamma3"])
def test_gamma_family_matches_eager(fn, dtype):
    tight = dtype is ember.float64
    check(fn, points(dtype), rtol=1e-9 if tight else 2e-6, atol=1e-9 if tight else 1e-6)


def test_lgamma_zeros_are_exact():
    x = ember.tensor([1.0, 2.0], dtype=ember.float16)
    got, = run_onnx(ember.onnx.to_model(ember.lgamma, (x,)), x.numpy())
    assert not np.signbit(got).any() and (got == 0).all()


@pytest.mark.parametrize("dtype", [ember.float32, ember.float64])
def test_erfc_keeps_its_tail(dtype):
    x = points(dtype)   # erfc(9) = 4e-37: 1 - erf would give 0
    check(ember.erfc, x, rtol=2e-7 if dtype is ember.float32 else 1e-13, atol=0)


@pytest.mark.parametrize("dtype", [ember.int8, ember.int16, ember.int32, ember.int64,
                                   ember.uint8])
@pytest.mark.parametrize("fn", [ember.gcd, ember.lcm], ids=["gcd", "lcm"])
def test_gcd_lcm_match_eager(fn, dtype):
    info = np.iinfo(dtype.np)
    rng = np.random.default_rng(1)
    a = rng.integers(max(info.min, -10**6), min(info.max, 10**6), 200, endpoint=True)
    b = rng.integers(max(info.min, -10**6), min(info.max, 10**6), 200, endpoint=True)
    fib = [1, 2]  # Euclid's worst case: consecutive Fibonacci numbers
    while fib[-1] + fib[-2] <= info.max:
        fib.append(fib[-1] + fib[-2])
    a = np.concatenate([a, [0, 0, 7, fib[-1], info.max, 12]])
    b = np.concatenate([b, [0, 5, 0, fib[-2], info.max - 1, 18]])
    if fn is ember.lcm:  # (small enough not to wrap)
        a, b = a % 1000, b % 1000
    else:  # every pair of edge values (gcd(-6, INT64_MIN) was -2 in ONNX, eager's 2)
        edges = [v for v in [info.min, info.min + 1, -12, -6, -1, 0, 1, 6, 12, info.max - 1,
                             info.max] if info.min <= v]
        pairs = np.array([(p, q) for p in edges for q in edges], dtype=dtype.np)
        a, b = np.concatenate([a, pairs[:, 0]]), np.concatenate([b, pairs[:, 1]])
    x, y = ember.tensor(a.astype(dtype.np)), ember.tensor(b.astype(dtype.np))
    proto = ember.onnx.to_model(fn, (x, y))
    got, = run_onnx(proto, x.numpy(), y.numpy())
    want, = eager(fn, x, y)
    assert got.dtype == want.dtype
    np.testing.assert_array_equal(got, want)
