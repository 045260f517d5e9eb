"""MKL's GEMM for large products (the optional ``mkl`` package; the test extra installs it)."""

import os
import subprocess
import sys

import numpy as np
import pytest

import ember
from ember.backend import gemm, mkl_gemm

pytestmark = pytest.mark.usefixtures("threads_restored")
needs_mkl = pytest.mark.skipif(not mkl_gemm.available(), reason="the mkl package is absent")
rng = np.random.default_rng(0)


def _matrix(rows, cols, dtype, layout):
    """A matrix in C order, Fortran order, or as rows of a wider one (leading dim > cols)."""
    if layout == "C":
        return rng.standard_normal((rows, cols)).astype(dtype)
    if layout == "F":
        return np.asfortranarray(rng.standard_normal((rows, cols)).astype(dtype))
    return rng.standard_normal((rows, cols + 7)).astype(dtype)[:, 3:3 + cols]


@needs_mkl
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("left", ["C", "F", "wide"])
@pytest.mark.parametrize("right", ["C", "F", "wide"])
def test_products_match_numpy_for_every_layout(dtype, left, right):
    a, b = _matrix(70, 50, dtype, left), _matrix(50, 30, dtype, right)
    got = mkl_gemm.matmul(a, b)
    assert got.dtype == dtype and got.flags.c_contiguous
    np.testing.assert_allclose(got, a @ b, rtol=1e-5 if dtype == np.float32 else 1e-12,
                               atol=1e-4 if dtype == np.float32 else 1e-12)


@needs_mkl
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_stacks_match_numpy(dtype):
    qkv = rng.standard_normal((3, 10, 48)).astype(dtype)  # attention's heads: strided views
    q = qkv[..., :16].reshape(3, 10, 2, 8).transpose(0, 2, 1, 3)
    k = qkv[..., 16:32].reshape(3, 10, 2, 8).transpose(0, 2, 3, 1)
    shared = np.broadcast_to(rng.standard_normal((8, 5)).astype(dtype), (3, 2, 8, 5))
    into = np.full((3, 10, 2, 10), np.nan, dtype).transpose(0, 2, 1, 3)  # heads-first view
    tolerance = 1e-5 if dtype == np.float32 else 1e-12
    for left, right, out in [(q, k, None), (q, shared, None), (q, k, into)]:
        got = mkl_gemm.matmul(left, right, out)
        assert out is None or got is out
        np.testing.assert_allclose(got, left @ right, rtol=tolerance, atol=tolerance)


@needs_mkl
def test_writes_into_out_with_a_row_stride():
    a, b = _matrix(40, 20, np.float32, "C"), _matrix(20, 10, np.float32, "F")
    buffer = np.full((40, 16), 7.0, np.float32)
    out = buffer[:, 2:12]
    assert mkl_gemm.matmul(a, b, out) is out
    np.testing.assert_allclose(out, a @ b, rtol=1e-5, atol=1e-5)
    assert (buffer[:, :2] == 7).all() and (buffer[:, 12:] == 7).all()  # nothing else written


@needs_mkl
def test_leaves_to_numpy_what_it_cannot_run():
    a, b = _matrix(8, 6, np.float32, "C"), _matrix(6, 4, np.float32, "C")
    overlapping = np.zeros((8, 8), np.float32)
    cases = [(a, b.astype(np.float64), None),  # mixed dtypes
             (a.astype(np.int64), b.astype(np.int64), None),
             (a.astype(np.complex64), b.astype(np.complex64), None),
             (a[None], b, None),  # a stack times a matrix (the caller broadcasts)
             (np.stack([a, a]), np.stack([b, b, b])[:2, :, :2][:, :5], None),  # k differs
             (np.stack([a, a]), np.stack([b, b]), np.zeros((1, 8, 4), np.float32)),
             (np.stack([a, a]), np.stack([b, b]),
              np.broadcast_to(np.zeros((8, 4), np.float32), (2, 8, 4))),  # out overlaps itself
             (a[:, ::2], b[:3], None),  # no unit stride
             (a[::-1], b, None),  # a negative stride
             (a[:, :0], b[:0], None),  # empty
             (overlapping, overlapping, overlapping),  # out is an input
             (a, b, np.zeros((8, 4), np.float64)),  # out of another dtype
             (a, b, np.zeros((4, 8), np.float32).T)]  # out in column order
    for left, right, out in cases:
        assert mkl_gemm.matmul(left, right, out) is None


@needs_mkl
@pytest.mark.parametrize(("shape", "threads_inside"), [
    ((512, 256, 512), 2),  # 2²⁶ multiply-adds: on all threads
    ((64, 3136, 128), 1),  # mid-sized: on one thread, as OpenBLAS would run it
    ((9, 20000, 32), 1),  # skinny: one thread
    ((8, 128, 64, 128), 2),  # a stack of small products: shared among MKL's threads
])
def test_ember_products_run_in_mkl_on_the_chosen_threads(shape, threads_inside, monkeypatch):
    seen = []
    real = mkl_gemm.matmul

    def watched(*args):
        seen.append({lib.internal_api: lib.num_threads
                     for lib in ember.backend.threads.blas_libraries()[0]}["mkl"])
        return real(*args)

    monkeypatch.setattr(mkl_gemm, "matmul", watched)
    ember.set_num_threads(2)
    *batch, m, k, n = shape
    x, w = ember.randn(*batch, m, k), ember.randn(*batch, k, n)
    np.testing.assert_allclose((x @ w).numpy(), x.numpy() @ w.numpy(), rtol=1e-4, atol=1e-3)
    assert seen == [threads_inside] and ember.get_num_threads() == 2
    seen.clear()
    ember.randn(64, 32) @ ember.randn(32, 16)  # tiny: NumPy's call, the per-op fast path
    assert not seen


@needs_mkl
def test_thread_settings_reach_mkl():
    before = ember.get_num_threads()
    try:
        ember.set_num_threads(1)
        found = {lib["internal_api"]: lib["num_threads"] for lib in ember.backend.blas_info()}
        assert found["mkl"] == 1
    finally:
        ember.set_num_threads(before)
    assert ember.backends.mkl.is_available()


def test_ember_mkl_0_leaves_every_product_to_numpy():
    code = ("import numpy as np; from ember.backend import gemm, mkl_gemm, threads; "
            "a = np.ones((512, 256), np.float32); "
            "print(mkl_gemm.available(), [lib['internal_api'] for lib in threads.blas_info()], "
            "gemm.matmul(np, a, a.T)[0, 0])")
    env = dict(os.environ, EMBER_MKL="0")
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True,
                         timeout=120, check=True).stdout
    assert out.split()[0] == "False" and "'mkl'" not in out and out.split()[-1] == "256.0"


def test_gemm_falls_back_where_mkl_declines():
    a = np.ones((512, 256), np.float32)[:, ::2]  # no unit stride: NumPy's product
    np.testing.assert_array_equal(gemm.matmul(np, a, np.ones((128, 512), np.float32)), 128.0)
