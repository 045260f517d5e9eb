"""embedding's float16/bfloat16 backward by numba's kernel gives the bits of its NumPy
twin (one rounded add a lookup, in order), specials and subnormals included; where a NaN
meets a NaN, which one's sign and payload the sum keeps varies with the column in NumPy."""

import numpy as np
import pytest

import ember
import ember.nn.functional as EF
from ember.backend import compiled


def _grad(numba, dtype, idx, g, pad, freq):
    saved = compiled.numba_enabled()
    compiled.use_numba(numba)
    try:
        w = ember.zeros(6, g.shape[-1], dtype=getattr(ember, dtype)).requires_grad_()
        EF.embedding(ember.tensor(idx), w, padding_idx=pad, scale_grad_by_freq=freq).backward(
            ember.tensor(g).to(w.dtype))
        return w.grad.float().numpy(), w.grad.numpy().view(np.uint16)
    finally:
        compiled.use_numba(saved)


@pytest.mark.skipif(not compiled.numba_enabled(), reason="numba's kernels are off")
@pytest.mark.parametrize("dtype", ["float16", "bfloat16"])
@pytest.mark.parametrize("dim,freq,pad", [(1, False, None), (31, True, 2), (32, False, None),
                                          (45, True, None), (70, False, 0)])
def test_numba_half_embedding_grad_is_numpys(dtype, dim, freq, pad):
    rng = np.random.default_rng(dim)
    idx = rng.integers(0, 6, size=(90, 3))
    g = rng.standard_normal((90, 3, dim)) * 10.0 ** rng.integers(-9, 6, size=(90, 3, 1))
    g[rng.random(g.shape) < 0.03] = np.inf
    g[rng.random(g.shape) < 0.03] = -np.inf
    g[rng.random(g.shape) < 0.01] = np.nan
    (fast, fast_bits), (numpy, numpy_bits) = (_grad(on, dtype, idx, g, pad, freq)
                                              for on in (True, False))
    assert np.array_equal(np.isnan(fast), np.isnan(numpy))
    assert np.array_equal(fast_bits[~np.isnan(fast)], numpy_bits[~np.isnan(numpy)])
    g[np.isnan(g)] = 0.0  # (no NaN to meet a NaN: every bit)
    assert np.array_equal(_grad(True, dtype, idx, g, pad, freq)[1],
                          _grad(False, dtype, idx, g, pad, freq)[1])
