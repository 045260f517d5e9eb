"""The GEMM kernel choice: small products on one BLAS thread, the thread count restored."""

import numpy as np
import pytest
import torch

import ember
from ember.backend import compiled, gemm, threads

pytestmark = pytest.mark.usefixtures("threads_restored")  # they set 1, 2 or 4


class Watched(np.ndarray):
    """An array that records the BLAS thread count whenever a ufunc (matmul) runs on it."""

    seen: list = []

    def __array_ufunc__(self, ufunc, method, *inputs, **kwargs):
        Watched.seen.append(max(lib.num_threads for lib in threads.blas_libraries()[0]))
        return getattr(ufunc, method)(*(np.asarray(i) for i in inputs), **kwargs)


@pytest.mark.parametrize(("shape", "threads_inside"), [
    ((1, 1024, 1024), 1),     # a GEMV: one thread
    ((8, 32, 32), 2),         # tiny: OpenBLAS keeps it on one thread itself, left alone
    ((512, 512, 512), 2),     # large: all threads
    ((64, 3136, 128), 1),     # mid-sized (the README CNN's 3136 -> 128 Linear): one thread
    ((9, 20000, 32), 1),      # long but skinny (a first conv's weight gradient): one thread
    ((128, 128, 128), 1),     # small and square: one thread
    ((196, 288, 64), 1),      # small and tall (a batch-1 convolution): one thread too
    ((64, 288, 196), 1),      # small and wide: one thread
])
def test_threads_by_product_size(shape, threads_inside):
    ember.set_num_threads(2)
    m, k, n = shape
    rng = np.random.default_rng(0)
    a, b = rng.standard_normal((m, k)), rng.standard_normal((k, n))
    Watched.seen = []
    out = gemm.matmul(np, a.view(Watched), b)
    assert Watched.seen == [threads_inside]
    np.testing.assert_allclose(out, a @ b, rtol=1e-12)
    assert ember.get_num_threads() == 2


def test_the_threshold_is_settable_and_checked():
    ember.set_num_threads(2)
    default = gemm._single_below
    ember.backend.set_single_thread_gemm_below(0)
    try:
        Watched.seen = []
        gemm.matmul(np, np.ones((1, 1024)).view(Watched), np.ones((1024, 1024)))
        assert Watched.seen == [2]
    finally:
        ember.backend.set_single_thread_gemm_below(default)
    with pytest.raises(ValueError, match="set_single_thread_gemm_below"):
        ember.backend.set_single_thread_gemm_below(-1)


@pytest.mark.parametrize(("a_shape", "b_shape"), [
    ((16, 4, 128, 64), (16, 4, 64, 128)),   # attention's scores: the batch split over threads
    ((6, 1, 64, 32), (5, 32, 64)),          # broadcast batch dimensions
    ((3, 2, 96, 80), (3, 2, 80, 96)),       # an odd batch: shares of 1 and 2
    ((1, 4, 64, 64), (1, 4, 64, 64)),       # a leading batch of 1: one call
])
def test_a_batch_of_small_products_is_shared_among_threads(a_shape, b_shape):
    ember.set_num_threads(2)
    rng = np.random.default_rng(1)
    a, b = rng.standard_normal(a_shape), rng.standard_normal(b_shape)
    np.testing.assert_allclose(gemm.matmul(np, a, b), np.matmul(a, b), rtol=1e-12)
    out = np.empty(np.broadcast_shapes(a_shape[:-2], b_shape[:-2]) + (a_shape[-2], b_shape[-1]))
    assert gemm.matmul(np, a, b, out=out) is out
    np.testing.assert_allclose(out, np.matmul(a, b), rtol=1e-12)
    assert ember.get_num_threads() == 2


def _channels_last(shape, dtype):
    n, c, *spatial = shape
    data = np.random.default_rng(3).standard_normal((n, *spatial, c)).astype(dtype)
    return np.moveaxis(data, -1, 1)


@pytest.mark.parametrize(("array", "axes"), [
    (_channels_last((64, 8, 9, 7), np.float32), (0, 2, 3)),     # a conv bias's gradient
    (_channels_last((64, 8, 9, 7), np.float64), (0, 3, 2)),     # axes in any order
    (np.random.default_rng(4).standard_normal((40, 33, 17)), (0, 1)),   # a linear's
    (np.random.default_rng(5).standard_normal((4096, 5)).astype(np.float32), (0,)),
])
@pytest.mark.parametrize("numba", [True, False], ids=["numba", "gemv"])
def test_sum_over_leading_axes_is_one_pass(array, axes, numba, monkeypatch):
    monkeypatch.setattr(compiled, "_OFF_BECAUSE", [None if numba else "test"])
    got = gemm.sum_leading(np, array, axes)
    want = array.astype(np.float64).sum(axis=axes, keepdims=True)
    assert got.shape == want.shape and got.dtype == array.dtype
    tol = 1e-5 if array.dtype == np.float32 else 1e-12
    np.testing.assert_allclose(got, want, rtol=tol, atol=tol * np.abs(array).sum(axis=axes).max())


@pytest.mark.parametrize(("array", "axes"), [
    (np.ones((64, 300), np.float32), (1,)),                     # inner axes: NumPy's sum
    (_channels_last((64, 8, 9, 7), np.float32), (0, 1)),        # not leading in memory
    (np.ones((64, 300), np.int64), (0,)),                       # no BLAS for integers
    (np.ones((8, 8), np.float32), (0,)),                        # too small to pay
    (np.ones((300, 64), np.float32), (0, 1)),                   # everything: NumPy's sum
])
def test_sum_leading_leaves_other_sums_to_numpy(array, axes):
    assert gemm.sum_leading(np, array, axes) is None


def test_bias_gradients_of_channels_last_activations_match_torch():
    # sum_to (a broadcast bias's gradient) and sum over a channels-last conv output
    x = np.random.default_rng(6).standard_normal((16, 6, 10, 10))
    w = np.random.default_rng(7).standard_normal((8, 6, 3, 3))
    b = np.random.default_rng(8).standard_normal(8)
    mine = [ember.from_numpy(a).requires_grad_() for a in (x, w, b)]
    ref = [torch.from_numpy(a).requires_grad_() for a in (x, w, b)]
    out = ember.nn.functional.conv2d(*mine, padding=1)
    want = torch.nn.functional.conv2d(*ref, padding=1)
    (out.square().sum() + out.sum(dim=(0, 2, 3)).square().sum()).backward()
    (want.square().sum() + want.sum(dim=(0, 2, 3)).square().sum()).backward()
    for m, r in zip(mine, ref):
        np.testing.assert_allclose(m.grad.numpy(), r.grad.numpy(), rtol=1e-10)


@pytest.mark.parametrize("dtype", ["float16", "bfloat16"])
def test_half_precision_bias_gradients_add_in_float32_like_torch(dtype):
    # 4096 ones: a half-precision running sum stops at 2048 (float16) or 256 (bfloat16)
    x = ember.ones(4096, 8, dtype=getattr(ember, dtype))
    b = ember.zeros(8, dtype=getattr(ember, dtype), requires_grad=True)
    (x + b).sum().backward()
    with ember.autocast("cpu", dtype=getattr(ember, dtype)):
        linear = ember.nn.Linear(8, 4)
        y = linear(ember.ones(4096, 8))
    y.float().sum().backward()
    assert (b.grad.float().numpy() == 4096).all()
    assert (linear.bias.grad.numpy() == 4096).all()


@pytest.mark.skipif(not compiled.numba_enabled(), reason="numba's kernel")
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_numba_column_sums_add_in_float64_in_row_order(dtype):
    a = np.random.default_rng(10).standard_normal((1027, 300)).astype(dtype)
    in_order = a.astype(np.float64).cumsum(axis=0)[-1:].astype(dtype)  # row by row
    np.testing.assert_array_equal(gemm.sum_leading(np, a, (0,)), in_order)


def test_gemv_sum_leading_over_many_rows_adds_blocks(monkeypatch):
    monkeypatch.setattr(compiled, "_OFF_BECAUSE", ["test"])
    monkeypatch.setattr(gemm, "_GEMV_ROWS", 1000)
    monkeypatch.setattr(gemm, "_ones", {})
    a = np.random.default_rng(9).standard_normal((4321, 7))
    np.testing.assert_allclose(gemm.sum_leading(np, a, (0,)), a.sum(0, keepdims=True),
                               rtol=1e-12)
    assert gemm._ones[a.dtype].size == 1000


def test_one_thread_each_restores_the_count_it_found():
    from threadpoolctl import threadpool_limits

    ember.set_num_threads(2)
    with threadpool_limits(1, user_api="blas"):
        with gemm.one_thread_each():
            pass
        assert max(lib.num_threads for lib in threads.blas_libraries()[0]) == 1


def test_the_one_thread_switch_is_the_libraries_own_count():
    """blas_to_one_thread sets what threadpoolctl reads, and hands back what it found."""
    libs = threads.blas_libraries()[0]
    if not libs:
        pytest.skip("no BLAS library threadpoolctl can see")
    ember.set_num_threads(2)
    found = threads.blas_to_one_thread()
    assert found == [2] * len(libs)
    assert [lib.num_threads for lib in libs] == [1] * len(libs)
    assert threads.blas_to_one_thread() is None  # already one: nothing to give back
    threads.restore_blas_threads(found)
    assert [lib.num_threads for lib in libs] == [2] * len(libs)


def test_sum_leading_of_an_unaligned_array():
    buf = np.zeros(4 * 20000 + 1, np.uint8)
    a = np.frombuffer(buf.data, np.float32, 20000, offset=1).reshape(2000, 10)
    assert not a.flags.aligned
    np.testing.assert_array_equal(gemm.sum_leading(np, a, (0,)), np.zeros((1, 10)))
