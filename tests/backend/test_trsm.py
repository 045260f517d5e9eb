"""BLAS trsm (ember/backend/trsm.py) under linalg.solve_triangular: it is used (NumPy's LU
was O(n³), ~1000× torch's time at 256×256 with one column), and matches torch's values and
gradients, batched, broadcast, under vmap and jit."""

import ctypes

import numpy as np
import pytest
import torch

import ember
from ember.backend import parallel, threads, trsm


def _case(batch, n, k, dtype, seed=0):
    rng = np.random.default_rng(seed)
    a = rng.standard_normal(batch + (n, n)) / np.sqrt(n) + 2 * np.eye(n)
    b = rng.standard_normal(batch + (n, k))
    if np.dtype(dtype).kind == "c":
        a, b = a + 0.5j * rng.standard_normal(a.shape), b - 1j * rng.standard_normal(b.shape)
    return a.astype(dtype), b.astype(dtype)


def test_solve_triangular_runs_on_trsm(monkeypatch):
    # it must answer, not only be asked: an OpenBLAS whose trsm is not found (a renamed
    # symbol) would bring the O(n³) LU path back silently; skipped only without OpenBLAS
    if not any(lib.internal_api == "openblas" for lib in threads.blas_libraries()[0]):
        pytest.skip("no OpenBLAS loaded")
    answers = []
    real = trsm.solve
    monkeypatch.setattr(trsm, "solve", lambda *args: answers.append(real(*args)) or answers[-1])
    a, b = _case((), 64, 1, np.float32)
    ember.linalg.solve_triangular(ember.tensor(a), ember.tensor(b), upper=False)
    assert answers and answers[0] is not None  # (the LU path: no call, or None)


@pytest.mark.parametrize("dtype", [np.float32, np.float64, np.complex128])
@pytest.mark.parametrize("upper", [False, True])
@pytest.mark.parametrize("left", [True, False])
@pytest.mark.parametrize("unit", [False, True])
@pytest.mark.parametrize("shapes", [((), (), 40, 3), ((3,), (2, 3), 33, 1), ((), (), 5, 0)])
def test_solve_triangular_matches_torch(dtype, upper, left, unit, shapes):
    a_batch, b_batch, n, k = shapes
    a, _ = _case(a_batch, n, k, dtype)
    _, b = _case(b_batch, n, k, dtype, seed=1)
    b = b if left else np.swapaxes(b, -1, -2)
    out = [lib.linalg.solve_triangular(lib.tensor(a), lib.tensor(b), upper=upper, left=left,
                                       unitriangular=unit).numpy() for lib in (ember, torch)]
    tol = 1e-5 if dtype == np.float32 else 1e-12
    np.testing.assert_allclose(out[0], out[1], rtol=tol, atol=tol)


def test_gradients_through_trsm_match_finite_differences():
    a, b = _case((), 32, 2, np.float64)
    x, y = ember.tensor(a, requires_grad=True), ember.tensor(b, requires_grad=True)
    for left in (True, False):
        assert ember.autograd.gradcheck(
            lambda s, t, left=left: ember.linalg.solve_triangular(
                s, t if left else t.mT, upper=True, left=left), (x, y))


def test_vmap_and_jit_through_trsm():
    a, b = _case((3,), 40, 2, np.float64)
    ea, eb = ember.tensor(a), ember.tensor(b)
    want = np.stack([ember.linalg.solve_triangular(ea[i], eb[i], upper=False).numpy()
                     for i in range(3)])
    got = ember.func.vmap(lambda s, t: ember.linalg.solve_triangular(s, t, upper=False))(ea, eb)
    np.testing.assert_allclose(got.numpy(), want, rtol=1e-13)
    fast = ember.jit.compile(lambda s, t: ember.linalg.solve_triangular(s, t, upper=False))
    np.testing.assert_allclose(fast(ea, eb).numpy(), want, rtol=1e-13)


@pytest.mark.parametrize("batch, n, k", [((), 32, 32), ((), 16, 64), ((40,), 64, 8)])
def test_small_or_batched_solves_run_on_one_blas_thread(monkeypatch, batch, n, k):
    # OpenBLAS splits even these over its threads (each call waking them: 46 against 10 µs at
    # 32×32, k=32, under load); gemm's rule keeps them on one, and off inside Ember's pool
    toggled = []
    real = threads.blas_to_one_thread
    monkeypatch.setattr(threads, "blas_to_one_thread", lambda: toggled.append(1) or real())
    a, b = _case(batch, n, k, np.float64)
    x = trsm.solve(np, np.tril(a), b, False)
    assert toggled and x is not None
    np.testing.assert_allclose(np.tril(a) @ x, b, atol=1e-10)
    toggled.clear()
    parallel.run([lambda: trsm.solve(np, np.tril(a), b, False), lambda: None])
    assert not toggled


@pytest.mark.parametrize("suffix, config, expected", [
    ("64_", b"OpenBLAS 0.3.31 USE64BITINT DYNAMIC_ARCH", ctypes.c_int64),
    ("", b"OpenBLAS 0.3.31 DYNAMIC_ARCH", ctypes.c_int),
    ("", None, ctypes.c_int), ("_64", None, ctypes.c_int64),
    ("", b"OpenBLAS 0.3.31 USE64BITINT", None),  # (ILP64 without a suffix: not called)
    ("64_", b"OpenBLAS 0.3.31 DYNAMIC_ARCH", None)])
def test_integer_width_checks_openblas_config(suffix, config, expected):
    assert trsm._index_type(suffix, config) is expected


@pytest.mark.parametrize("failure", ["load", "lookup"])
def test_lookup_failures_fall_back_to_the_lu_path(monkeypatch, failure):
    def fail(*args):
        raise (OSError if failure == "load" else AttributeError)("no such library")
    monkeypatch.setattr(trsm, "_found", None)
    monkeypatch.setattr(*((ctypes, "CDLL") if failure == "load" else (threads, "blas_libraries")),
                        fail)
    a, b = _case((), 40, 3, np.float64)
    assert trsm.solve(np, a, b, False) is None
    out = [lib.linalg.solve_triangular(lib.tensor(a), lib.tensor(b), upper=False).numpy()
           for lib in (ember, torch)]
    np.testing.assert_allclose(out[0], out[1], rtol=1e-12, atol=1e-12)
