"""A batch-1 Linear's product on numba's threads: the values BLAS gives, only where it applies,
and a forked child that runs BLAS instead."""

import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
import torch

import ember
from ember.backend import compiled, gemm, gemv
from tests.backend.forked import in_forked_child

pytestmark = [pytest.mark.usefixtures("threads_restored", "openmp"),
              pytest.mark.skipif(not compiled.numba_enabled(), reason="numba's kernel")]


@pytest.fixture(scope="module")
def openmp():
    if not compiled.load("ember.backend.gemv_numba").OPENMP:
        pytest.skip("numba's threads are not OpenMP's: BLAS runs the product")


def _layer(k, n, dtype, seed=0):
    rng = np.random.default_rng(seed)
    return rng.standard_normal((1, k)).astype(dtype), rng.standard_normal((n, k)).astype(dtype)


@pytest.mark.parametrize("dtype, rtol", [(np.float32, 2e-5), (np.float64, 1e-12)])
@pytest.mark.parametrize("row", [True, False], ids=["(1, k)", "(k,)"])
def test_a_one_row_product_gives_torchs_values(dtype, rtol, row):
    ember.set_num_threads(2)
    x, w = _layer(784, 1024, dtype)
    x = x if row else x[0]
    out = gemm.matmul(np, x, w.T)
    expected = torch.nn.functional.linear(torch.from_numpy(x), torch.from_numpy(w)).numpy()
    assert out.shape == expected.shape and out.dtype == dtype
    np.testing.assert_allclose(out, expected, rtol=rtol, atol=rtol * 30)


def test_it_writes_into_the_buffer_it_is_given():
    ember.set_num_threads(2)
    x, w = _layer(1024, 512, np.float32)
    out = np.empty((1, 512), np.float32)
    assert gemv.one_row(x, w.T, out) is out
    np.testing.assert_allclose(out, x @ w.T, rtol=2e-5, atol=1e-4)


@pytest.mark.parametrize("case", ["small", "two rows", "weight not transposed", "mixed dtypes",
                                  "integers", "one thread", "read-only", "wrong out",
                                  "read-only out", "out overlapping x"])
def test_other_products_are_left_to_blas(case):
    ember.set_num_threads(1 if case == "one thread" else 2)
    x, w = _layer(16 if case == "small" else 784, 1024, np.float32)
    b, out = w.T, None
    if case == "two rows":
        x = np.concatenate([x, x])
    elif case == "weight not transposed":
        b = np.ascontiguousarray(w.T)
    elif case == "mixed dtypes":
        x = x.astype(np.float64)
    elif case == "integers":
        x, b = x.astype(np.int64), b.astype(np.int64)
    elif case == "read-only":
        x.flags.writeable = False
    elif case == "wrong out":
        out = np.empty((1, 1024), np.float64)
    elif case == "read-only out":
        out = np.empty((1, 1024), np.float32)
        out.flags.writeable = False
    elif case == "out overlapping x":
        x = np.zeros((1, 1024), np.float32)
        b, out = np.ones((1024, 1024), np.float32).T, x
    assert gemv.one_row(x, b, out) is None


def test_numba_turned_off_leaves_it_to_blas(monkeypatch):
    ember.set_num_threads(2)
    monkeypatch.setattr(compiled, "_OFF_BECAUSE", ["test"])
    x, w = _layer(784, 1024, np.float32)
    assert gemv.one_row(x, w.T, None) is None


@pytest.mark.skipif(not hasattr(os, "fork"), reason="fork")
def test_a_child_forked_after_numbas_threads_started_runs_blas():
    # (a fresh process: loading the kernel starts the threads, before any product runs)
    script = """if True:
        import numpy as np, ember
        from ember.backend import compiled, gemm
        from tests.backend.forked import in_forked_child
        ember.set_num_threads(2)
        gemv_kernels = compiled.load("ember.backend.gemv_numba")
        for kernel in list(vars(gemv_kernels).values()):  # (only these: preload() compiles
            compiled.ready(kernel)  # every module, minutes under load with a cold cache)
        import numba.np.ufunc.parallel
        assert numba.np.ufunc.parallel._is_initialized  # (numba's threads run)
        x, w = np.ones((1, 784), np.float32), np.ones((1024, 784), np.float32)
        in_forked_child(lambda: np.allclose(gemm.matmul(np, x, w.T), 784.0))
    """
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True,
                          timeout=300, cwd=Path(__file__).parents[2])
    assert done.returncode == 0, done.stderr[-2000:]


@pytest.mark.skipif(not hasattr(os, "fork"), reason="fork")
def test_a_child_forked_after_the_parent_ran_it_runs_blas():
    ember.set_num_threads(2)
    x, w = _layer(784, 1024, np.float32)
    assert gemv.one_row(x, w.T, None) is not None  # (OpenMP's threads started here)
    in_forked_child(lambda: gemv.one_row(x, w.T, None) is None and np.allclose(
        gemm.matmul(np, x, w.T), x @ w.T, rtol=1e-5, atol=1e-4))


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("bias, relu", [(True, False), (True, True), (False, True)])
def test_a_bias_and_relu_in_the_same_pass_round_as_eagers_calls(dtype, bias, relu):
    ember.set_num_threads(2)
    x, w = _layer(784, 1024, dtype)
    b = np.random.default_rng(1).standard_normal(1024).astype(dtype)
    x, w[:3] = np.abs(x), -0.0  # sums of -0.0: plus -0.0 (relu keeps it), NaN and -inf
    b[:3] = (-0.0, np.nan, -np.inf)
    expected = gemv.one_row(x, w.T, None)
    if bias:
        expected = np.add(expected, b)
    if relu:
        expected = np.maximum(0, expected)  # (eager's relu: -0.0 kept, as torch's)
    got = gemm.one_row(np, x, w.T, b if bias else None, relu)
    assert got.dtype == dtype
    np.testing.assert_array_equal(got, expected)  # (NaN where NaN)
    np.testing.assert_array_equal(np.signbit(got), np.signbit(expected))  # (zeros' signs)
    assert np.signbit(got[0, 0])


@pytest.mark.parametrize("case", ["bias of another length", "bias of another dtype",
                                  "read-only bias", "two rows", "a stack of rows",
                                  "products switched off", "bias of no dimensions",
                                  "bias inside out"])
def test_a_bias_the_kernel_cannot_read_leaves_it_to_the_callers_calls(case, monkeypatch):
    ember.set_num_threads(2)
    x, w = _layer(784, 1024, np.float32)
    b = np.zeros(1024, np.float32)
    if case == "bias of another length":
        b = np.zeros(1023, np.float32)
    elif case == "bias of another dtype":
        b = b.astype(np.float64)
    elif case == "read-only bias":
        b.flags.writeable = False
    elif case == "two rows":
        x = np.concatenate([x, x])
    elif case == "a stack of rows":
        x = x[None]
    elif case == "products switched off":
        monkeypatch.setattr(gemm, "_single_below", 0)  # (set_single_thread_gemm_below(0))
    elif case == "bias of no dimensions":
        x, w = np.ones((1, 1 << 18), np.float32), np.ones((1, 1 << 18), np.float32)
        b = np.ones((), np.float32)  # (for the one column)
    out = None
    if case == "bias inside out":  # (one element on: the threads' blocks would race)
        out = np.zeros((1, 2048), np.float32)[:, :1024]
        b = out.base[0, 1:1025]
    assert gemm.one_row(np, x, w.T, b, True, out=out) is None
