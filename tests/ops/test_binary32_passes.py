"""float32 binary ops computed wider and rounded once by numba's one-pass kernels (NumPy's
loops where numba is off): logaddexp, hypot and copysign, against exact or IEEE references."""

import numpy as np
import pytest

import ember


@pytest.mark.skipif(np.finfo(np.longdouble).eps > 1e-18, reason="needs an extended long double")
def test_float32_logaddexp_is_rounded_once_from_float64(numba_or_numpy):
    """float32 logaddexp is computed in float64 and rounded once (numba's pass, NumPy's float64
    loop alike): within 0.5 ulp + 3e-16·max(|x|, |y|) of the exact value, the float64 sum's own
    cancellation where ``exp(x) + exp(y)`` is about 1 (the result near 0), where NumPy's and
    PyTorch's float32 loops are off by up to 100%; NumPy's float64 loop's bits but near 0."""
    rng = np.random.default_rng(0)
    a, b = (rng.standard_normal(20000).astype(np.float32) * 10 for _ in range(2))
    near = rng.uniform(-3, -0.05, 2000)
    a[:2000] = near
    b[:2000] = np.log1p(-np.exp(near)) + rng.standard_normal(2000) * 1e-5
    b[2000:2500] = -a[2000:2500] + rng.standard_normal(500).astype(np.float32) * 1e-3
    a[3000:3010] = [np.inf, -np.inf, np.nan, 0.0, -0.0, np.inf, -np.inf, 1e-45, 88.0, -120.0]
    b[3000:3010] = [np.inf, -np.inf, 1.0, -0.0, 0.0, -np.inf, 3.0, -1e-45, 88.0, 0.0]
    a[3010], b[3010] = -0.32783896, -1.274678  # (exact 4.549083e-15; PyTorch gives 0)
    exact = np.logaddexp(a.astype(np.longdouble), b.astype(np.longdouble))
    got = ember.logaddexp(ember.from_numpy(a), ember.from_numpy(b)).numpy()
    np.testing.assert_array_equal(np.isnan(got), np.isnan(exact))
    finite = np.isfinite(exact)
    infinite = ~finite & ~np.isnan(exact)
    np.testing.assert_array_equal(got[infinite], exact[infinite])
    e, big = exact[finite], np.maximum(np.abs(a), np.abs(b))[finite].astype(np.longdouble)
    ulp = np.spacing(np.abs(e).astype(np.float32)).astype(np.longdouble)
    assert (np.abs(got[finite] - e) <= 0.5 * ulp + 3e-16 * big).all()
    far = finite.copy()
    far[finite] = np.abs(e) > 1e-4 * big
    wide = np.logaddexp(a.astype(np.float64), b.astype(np.float64)).astype(np.float32)
    np.testing.assert_array_equal(got[far], wide[far])


@pytest.mark.parametrize("other_kind", ["full", "inf", "-2.5", "-0.0"])
def test_float32_hypot_is_sqrt_of_the_float64_sum_rounded_once(numba_or_numpy, other_kind):
    """float32 hypot over 1024 elements takes numba's pass (ember.ops.binary32_numba), under
    that NumPy's ``hypotf``: finite pairs bit for bit against ``sqrt`` in float64 rounded once
    (IEEE arithmetic alone, no C library's ``hypotf``: glibc ≤ 2.34 clears NaN's sign, musl
    rounds the sum to float32), the rest by class (inf where either is infinite, NaN otherwise;
    signaling NaNs left out, the C library decides those)."""
    rng = np.random.default_rng(0)
    a, b = (rng.integers(0, 2**32, 50000, dtype=np.uint64).astype(np.uint32).view(np.float32)
            for _ in range(2))
    special = np.float32([np.inf, -np.inf, np.nan, -np.nan, 0, -0.0, 1, 1e-45, 3.4e38, -3.4e38])
    a[:100], b[:100] = (g.ravel() for g in np.meshgrid(special, special))
    other = {"full": b, "inf": np.float32([np.inf]), "-2.5": np.float32([-2.5]),
             "-0.0": np.float32([-0.0])}[other_kind]
    x, y = np.broadcast_arrays(a, other)
    got = ember.hypot(ember.from_numpy(a), ember.from_numpy(other)).numpy()
    finite = np.isfinite(x) & np.isfinite(y)
    x64, y64 = x[finite].astype(np.float64), y[finite].astype(np.float64)
    want = np.sqrt(x64 * x64 + y64 * y64).astype(np.float32)
    np.testing.assert_array_equal(got[finite].view(np.uint32), want.view(np.uint32))
    bits = lambda v: v.view(np.uint32)  # noqa: E731
    signaling = lambda v: (bits(v) & 0x7FC00000 == 0x7F800000) & (bits(v) & 0x3FFFFF != 0)  # noqa: E731
    quiet = ~finite & ~signaling(x) & ~signaling(y)
    infinite = np.isinf(x) | np.isinf(y)
    np.testing.assert_array_equal(got[quiet & infinite], np.float32(np.inf))
    assert np.isnan(got[quiet & ~infinite]).all()


@pytest.mark.parametrize("other_kind", ["full", "inf", "-2.5", "-0.0"])
def test_float32_copysign_pass_gives_numpy_s_bits(numba_or_numpy, other_kind):
    """float32 copysign over 16384 elements takes numba's pass (ember.ops.binary32_numba), a
    bit operation: NumPy's bits at random bit patterns and specials (NaN's sign too), with a
    one-element second operand too."""
    rng = np.random.default_rng(0)
    a, b = (rng.integers(0, 2**32, 50000, dtype=np.uint64).astype(np.uint32).view(np.float32)
            for _ in range(2))
    special = np.float32([np.inf, -np.inf, np.nan, 0, -0.0, 1, 1e-45, 3.4e38, -3.4e38])
    a[:81], b[:81] = (g.ravel() for g in np.meshgrid(special, special))
    other = {"full": b, "inf": np.float32([np.inf]), "-2.5": np.float32([-2.5]),
             "-0.0": np.float32([-0.0])}[other_kind]
    got = ember.copysign(ember.from_numpy(a), ember.from_numpy(other)).numpy()
    np.testing.assert_array_equal(got.view(np.uint32), np.copysign(a, other).view(np.uint32))
