"""linspace gives PyTorch's exact values (histogram edges and grids then agree bit for bit)."""

import numpy as np
import pytest
import torch

import ember


@pytest.mark.parametrize("dtype", ["float32", "float64", "complex64", "complex128"])
def test_linspace_gives_torch_s_exact_values(dtype):
    # (PyTorch counts half the points up from start and half down from end, one fused
    # multiply-add each: linspace(0, 1, 11)[6] is 0.6, not NumPy's 0.6000000000000001)
    rng = np.random.default_rng(0)
    for _ in range(60):
        steps = int(rng.integers(0, 200))
        a, b = (float(v) for v in rng.normal(size=2) * 10)
        if "complex" in dtype:
            a, b = complex(a, rng.normal()), complex(b, rng.normal())
        want = torch.linspace(a, b, steps, dtype=getattr(torch, dtype)).numpy()
        got = ember.linspace(a, b, steps, dtype=getattr(ember, dtype)).numpy()
        np.testing.assert_array_equal(got, want, err_msg=f"linspace({a}, {b}, {steps})")


@pytest.mark.parametrize("op", ["linspace", "logspace"])
def test_complex_ends_with_a_real_dtype_are_refused_as_torch(op):
    # (the imaginary part was dropped silently, or a bare "float() argument" leaked)
    with pytest.raises(RuntimeError):
        getattr(torch, op)(1j, 2, 5, dtype=torch.float64)
    with pytest.raises(ember.errors.DTypeError, match=f"{op}: complex ends"):
        getattr(ember, op)(1j, 2, 5, dtype=ember.float64)
