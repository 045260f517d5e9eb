"""numba's float32 erf, gelu and gelu's slope (products and sums fused into multiply-adds)
against a float64 reference, over every 1024th float32: the bounds in
:mod:`ember.ops.erf_numba`'s docstring."""

import numpy as np
import pytest
import torch

pytest.importorskip("numba")
erf_numba = pytest.importorskip("ember.ops.erf_numba")


@pytest.fixture(scope="module")
def floats():
    x = np.arange(0, 2**32, 1024, dtype=np.uint64).astype(np.uint32).view(np.float32)
    return x[np.abs(x) < 1e38]  # (gelu overflows past 1.7e38, as NumPy's twin)


def _run(kernel, x):
    out = np.empty_like(x)
    kernel(x, out)
    return out.astype(np.float64)


def _erf(d):
    return torch.special.erf(torch.from_numpy(d)).numpy()


def test_erf_is_within_its_fits_bound(floats):
    assert np.abs(_run(erf_numba.erf32, floats) - _erf(floats.astype(np.float64))).max() < 3.8e-7


def test_gelu_is_within_one_ulp_plus_erfs_error_times_x(floats):
    d = floats.astype(np.float64)
    exact = d * 0.5 * (1 + _erf(d / np.sqrt(2)))
    ulp = np.spacing(np.abs(exact).astype(np.float32)).astype(np.float64)
    assert (np.abs(_run(erf_numba.gelu32, floats) - exact) <= 2e-7 * np.abs(d) + ulp).all()


def test_gelu_slope_is_within_its_bound(floats):
    d = floats.astype(np.float64)
    with np.errstate(over="ignore"):
        exact = 0.5 * (1 + _erf(d / np.sqrt(2))) + d * np.exp(-0.5 * d * d) / np.sqrt(2 * np.pi)
    assert np.abs(_run(erf_numba.gelu_slope32, floats) - exact).max() < 2.3e-7


def test_specials():
    x = np.array([0.0, -0.0, np.inf, -np.inf, np.nan, 4.0, -4.0, 1e30, -1e30], np.float32)
    np.testing.assert_array_equal(_run(erf_numba.erf32, x), [0, -0.0, 1, -1, np.nan, 1, -1, 1, -1])
    np.testing.assert_array_equal(_run(erf_numba.gelu32, x)[[0, 2, 4, 7, 8]],
                                  [0, np.inf, np.nan, np.float32(1e30), -0.0])
    np.testing.assert_array_equal(_run(erf_numba.gelu_slope32, x)[[0, 4, 7, 8]],
                                  [0.5, np.nan, 1, 0])
