"""numba's float32 erf, gelu and gelu's slope (products and sums fused into multiply-adds)
against a float64 reference, over every 1024th float32: the bounds in
:mod:`ember.ops.erf_numba`'s docstring."""

import math

import numpy as np
import pytest
import torch

pytest.importorskip("numba")
erf_numba = pytest.importorskip("ember.ops.erf_numba")


@pytest.fixture(scope="module")
def floats():
    x = np.arange(0, 2**32, 1024, dtype=np.uint64).astype(np.uint32).view(np.float32)
    return x[np.isfinite(x)]


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


def test_numpys_twins_agree_within_the_documented_bounds(floats):
    # numba off runs ember.ops.erf_kernel's NumPy twins: separate roundings, not fused ones.
    # Where gelu(x) is small (x below -3) they differ by many of its ulps, not by a few
    from ember.ops import erf_kernel

    x = floats[np.isfinite(floats)]
    d = x.astype(np.float64)
    mine = {name: _run(getattr(erf_numba, name + "32"), x) for name in ("erf", "gelu",
                                                                        "gelu_slope")}
    twin = {name: np.empty_like(x) for name in mine}
    with np.errstate(over="ignore", invalid="ignore"):
        for i in range(0, x.size, erf_kernel._BLOCK):  # (the block size eager gives them)
            for name, kernel in erf_kernel._NUMPY_KERNELS.items():
                kernel(x[i:i + erf_kernel._BLOCK], twin[name][i:i + erf_kernel._BLOCK])
    twin = {name: values.astype(np.float64) for name, values in twin.items()}
    ulp = np.spacing(np.abs(twin["erf"]).astype(np.float32)).astype(np.float64)
    assert (np.abs(mine["erf"] - twin["erf"]) <= 8 * ulp).all()
    ulp = np.spacing(np.abs(twin["gelu"]).astype(np.float32)).astype(np.float64)
    assert (np.abs(mine["gelu"] - twin["gelu"]) <= 2.6e-7 * np.abs(d) + ulp).all()
    assert np.abs(mine["gelu_slope"] - twin["gelu_slope"]).max() <= 2.4e-7


@pytest.mark.parametrize("numba", [True, False])
def test_erf_stays_within_one_and_gelu_keeps_the_sign_of_x(numba):
    # the fit exceeds 1 by up to 4e-7 on 3.61…4 (4: its clip point): |erf| ≤ 1 as PyTorch's, so
    # erf(x) + 1 ≥ 0 and gelu(x) ≤ 0 for x < 0
    from ember.ops import erf_kernel

    x = np.arange(0x40000000, 0x40A00000, 7, dtype=np.uint32).view(np.float32)  # 2 … 5
    x = np.concatenate([x, -x])
    kernels = {name: getattr(erf_numba, name + "32") if numba else
               erf_kernel._NUMPY_KERNELS[name] for name in ("erf", "gelu")}
    erf, gelu = np.empty_like(x), np.empty_like(x)
    kernels["erf"](x, erf)
    kernels["gelu"](x * np.float32(np.sqrt(2)), gelu)
    assert np.abs(erf).max() == 1
    assert (gelu[x < 0] <= 0).all()


@pytest.mark.parametrize("numba", [True, False])
def test_gelu_of_the_largest_floats_is_finite(numba):
    # x·Φ(x) computed as Φ(x)·x: no overflow of the intermediate (1 + erf)·x past 1.7e38.
    # (PyTorch's own answer depends on its kernel: inf past 1.7e38 with AVX-512, x with AVX2.)
    from ember.ops import erf_kernel

    x = np.array([3e38, -3e38, np.finfo(np.float32).max, 1.7e38, -1.7e38, 1e-40], np.float32)
    kernel = erf_numba.gelu32 if numba else erf_kernel._NUMPY_KERNELS["gelu"]
    got = np.empty_like(x)
    kernel(x, got)
    exact = [v * 0.5 * (1 + math.erf(v / math.sqrt(2))) for v in x.astype(np.float64)]
    np.testing.assert_array_equal(got, np.array(exact, np.float32))
