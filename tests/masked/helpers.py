"""Shared inputs for the masked tests: a small float64 tensor, a mask with one fully masked-out
row, and the conversions to torch."""

import numpy as np
import torch

import ember

DATA = np.array([[0.3, -1.2, 2.5, 0.7], [1.1, 0.4, -0.6, 2.2], [-0.5, 1.9, 0.8, -1.4]])
MASK = np.array([[True, False, True, True], [False, False, False, False],
                 [True, True, False, True]])


def to_torch(x: ember.Tensor) -> torch.Tensor:
    return torch.from_numpy(np.array(x.detach().numpy()))


def assert_close(e: ember.Tensor, t: torch.Tensor, where: np.ndarray | None = None) -> None:
    """Values and dtypes equal (nan where torch has nan), optionally only at ``where``."""
    assert str(e.dtype).split(".")[-1] == str(t.dtype).split(".")[-1], (e.dtype, t.dtype)
    got, want = np.asarray(e.detach().numpy()), t.detach().numpy()
    assert got.shape == want.shape, (got.shape, want.shape)
    if where is not None:
        got, want = got[where], want[where]
    np.testing.assert_allclose(got, want, rtol=1e-6, atol=1e-9, equal_nan=True)
