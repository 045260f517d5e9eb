"""logspace with an integer dtype: PyTorch casts the ends to the dtype (toward zero) before
spacing the exponents, so ``logspace(3, 7.5, 5, dtype=int64)`` is 10**3 … 10**7; with one
step it casts ``base ** start`` (``logspace(1.5, 3, 1)`` is 31)."""

import numpy as np
import pytest
import torch

import ember


@pytest.mark.parametrize("start, end, steps, base", [
    (3, 7.5, 5, 10.0), (-2.5, 7.5, 5, 2.0), (-2.5, 7.5, 2, 10.0), (0.9, 3.9, 4, 2.0),
    (1, 4, 4, 3.0), (1.5, 3, 1, 10.0), (2.7, 2.7, 1, 10.0), (-0.5, 3, 1, 2.0), (1.5, 3, 0, 10.0)])
@pytest.mark.parametrize("dtype", ["int64", "int32"])
def test_logspace_integer_dtype_matches_torch(start, end, steps, base, dtype):
    want = torch.logspace(start, end, steps, base=base, dtype=getattr(torch, dtype))
    got = ember.logspace(start, end, steps, base=base, dtype=getattr(ember, dtype))
    assert got.dtype == getattr(ember, dtype)
    np.testing.assert_array_equal(got.numpy(), want.numpy())
