"""``range`` (inclusive, deprecated), ``norm_except_dim`` and ``from_file`` against PyTorch."""

import os
import warnings

import numpy as np
import pytest
import torch

import ember


@pytest.mark.parametrize("args", [(1, 4), (0, 1, 0.25), (4, 1, -1), (0, 1, 0.3), (2, 2)])
def test_range_includes_its_end_and_warns_as_torch(args):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        expected = torch.range(*args)
    with pytest.warns(UserWarning, match="deprecated"):
        got = ember.range(*args)
    assert got.dtype is ember.float32
    np.testing.assert_allclose(got.numpy(), expected.numpy())


def test_range_takes_a_dtype_and_refuses_a_wrong_direction():
    with pytest.warns(UserWarning):
        assert ember.range(1, 3, dtype=ember.int64).tolist() == [1, 2, 3]
    with pytest.warns(UserWarning), pytest.raises(ValueError, match="sign of step"):
        ember.range(3, 1)


@pytest.mark.parametrize("pow, dim", [(2, 0), (2, 1), (1, 2), (3, -1), (2, -2)])
def test_norm_except_dim_matches_torch_with_gradients(pow, dim):
    x = torch.randn(2, 3, 4, dtype=torch.float64, requires_grad=True)
    e = ember.tensor(x.detach().numpy(), requires_grad=True)
    ours, theirs = ember.norm_except_dim(e, pow, dim), torch.norm_except_dim(x, pow, dim)
    assert tuple(ours.shape) == tuple(theirs.shape)
    np.testing.assert_allclose(ours.detach().numpy(), theirs.detach().numpy(), rtol=1e-12)
    ours.sum().backward()
    theirs.sum().backward()
    np.testing.assert_allclose(e.grad.numpy(), x.grad.numpy(), rtol=1e-10)
    assert ember.autograd.gradcheck(lambda v: ember.norm_except_dim(v, pow, dim), (e,))


def test_from_file_shares_writes_with_the_file_only_when_shared(tmp_path):
    path = str(tmp_path / "values.bin")
    shared = ember.from_file(path, shared=True, size=4)
    assert os.path.getsize(path) == 16 and shared.tolist() == [0.0] * 4
    shared.add_(2)
    shared[1] = 7
    np.testing.assert_array_equal(np.fromfile(path, dtype=np.float32), [2, 7, 2, 2])
    private = ember.from_file(path, size=4)
    private.add_(1)
    np.testing.assert_array_equal(private.numpy(), [3, 8, 3, 3])
    np.testing.assert_array_equal(np.fromfile(path, dtype=np.float32), [2, 7, 2, 2])
    np.testing.assert_array_equal(ember.from_file(path, size=2, dtype=ember.float64).numpy(),
                                  torch.from_file(path, size=2, dtype=torch.float64).numpy())
    assert ember.from_file(path).numel() == 0


def test_from_file_refuses_a_short_or_missing_file(tmp_path):
    path = str(tmp_path / "short.bin")
    np.zeros(2, np.float32).tofile(path)
    with pytest.raises(ember.errors.OpError, match="8 bytes, fewer than the 40"):
        ember.from_file(path, size=10)
    with pytest.raises(FileNotFoundError, match="shared=True"):
        ember.from_file(str(tmp_path / "none.bin"), size=1)
