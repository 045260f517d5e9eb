"""The complex reciprocal's numba loop against its NumPy passes (both PyTorch's bits:
``tests/ops/test_complex.py::test_complex_reciprocal_bits_as_torch``)."""

import numpy as np
import pytest

import ember
from ember.backend import compiled
from ember.ops.complex_reciprocal import _in_loop, _in_passes
from tests.ops.test_complex import _EDGES, _REPROS


@pytest.mark.parametrize("dtype", ["complex64", "complex128"])
def test_complex_reciprocal_loop_gives_the_passes_bits(dtype):
    """numba's one-pass loop gives the NumPy passes' bits (NaN payloads included): random bit
    patterns (subnormals, infinities, NaNs), scales 1e-200..1e200 and the edge pairs, of a
    strided array too (and the review repros); and ``reciprocal`` gives them with numba off."""
    if not compiled.numba_enabled():
        pytest.skip("numba is off")
    rng = np.random.default_rng(5)
    ints = np.uint32 if dtype == "complex64" else np.uint64
    bits = rng.integers(0, np.iinfo(ints).max, size=20000, dtype=ints, endpoint=True)
    with np.errstate(all="ignore"):
        z = np.concatenate([bits.view(dtype)] + [
            ((rng.normal(size=500) + 1j * rng.normal(size=500)) * s).astype(dtype)
            for s in (1e-200, 1e-30, 1e-3, 1.0, 1e30, 1e200)] + [
            np.array([complex(a, b) for a in _EDGES for b in _EDGES] + _REPROS, dtype)])
    for x in (z, z[:2000].reshape(40, 50)[:, ::3]):
        loop, passes = _in_loop(np, x), _in_passes(np, x)
        assert loop.shape == passes.shape and np.array_equal(loop.view(ints), passes.view(ints))
    saved = compiled.numba_enabled()
    try:
        compiled.use_numba(False)
        off = ember.tensor(z).reciprocal().numpy()
    finally:
        compiled.use_numba(saved)
    assert np.array_equal(off.view(ints), _in_loop(np, z).view(ints))
