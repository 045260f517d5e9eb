"""The GEMM kernel choice: small products on one BLAS thread, the thread count restored."""

import numpy as np
import pytest

import ember
from ember.backend import gemm, threads


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
    ((9, 20000, 32), 1),      # long but skinny (a first conv's weight gradient): one thread
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
    ember.backend.set_single_thread_gemm_below(0)
    try:
        Watched.seen = []
        gemm.matmul(np, np.ones((1, 1024)).view(Watched), np.ones((1024, 1024)))
        assert Watched.seen == [2]
    finally:
        ember.backend.set_single_thread_gemm_below(1 << 22)
    with pytest.raises(ValueError, match="set_single_thread_gemm_below"):
        ember.backend.set_single_thread_gemm_below(-1)


@pytest.mark.parametrize(("a_shape", "b_shape"), [
    ((16, 4, 128, 64), (16, 4, 64, 128)),   # attention's scores: the batch split over threads
    ((6, 1, 64, 32), (5, 32, 64)),          # broadcast batch dimensions
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
