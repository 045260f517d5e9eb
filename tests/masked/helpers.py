"""Shared inputs for the masked tests: a small float64 tensor with a mask that masks out one
row fully, and a comparison with torch's results."""

import numpy as np
import torch

import ember

DATA = np.array([[0.3, -1.2, 2.5, 0.7], [1.1, 0.4, -0.6, 2.2], [-0.5, 1.9, 0.8, -1.4]])
MASK = np.array([[True, False, True, True], [False, False, False, False],
                 [True, True, False, True]])


def assert_close(e: ember.Tensor, t: torch.Tensor) -> None:
    """Equal dtypes, shapes and values (nan where torch has nan)."""
    assert str(e.dtype).split(".")[-1] == str(t.dtype).split(".")[-1], (e.dtype, t.dtype)
    got, want = np.asarray(e.detach().numpy()), t.detach().numpy()
    assert got.shape == want.shape, (got.shape, want.shape)
    np.testing.assert_allclose(got, want, rtol=1e-6, atol=1e-9, equal_nan=True)
