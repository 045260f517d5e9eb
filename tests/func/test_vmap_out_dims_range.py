"""vmap's out_dims out of range is an IndexError, as torch.func's ("Dimension out of range")."""

import numpy as np
import pytest
import torch

import ember


@pytest.mark.parametrize("out_dim", [2, 3, -3, -4])
def test_out_dim_out_of_range_is_an_index_error_as_torch(out_dim):
    a = np.arange(24.0).reshape(2, 3, 4)
    with pytest.raises(IndexError):
        torch.func.vmap(lambda x: x.sum(0), out_dims=out_dim)(torch.tensor(a))
    with pytest.raises(IndexError, match="out_dim .* is out of range for output 0"):
        ember.func.vmap(lambda x: x.sum(0), out_dims=out_dim)(ember.tensor(a))


@pytest.mark.parametrize("out_dim", [-2, -1, 0, 1])
def test_out_dims_in_range_as_torch(out_dim):
    a = np.arange(24.0).reshape(2, 3, 4)
    want = torch.func.vmap(lambda x: x.sum(0), out_dims=out_dim)(torch.tensor(a))
    got = ember.func.vmap(lambda x: x.sum(0), out_dims=out_dim)(ember.tensor(a))
    np.testing.assert_array_equal(got.numpy(), want.numpy())
