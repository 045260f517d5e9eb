"""mend60h2: fixes of rm60h's findings on mend60h's sparse commits."""

import pytest
import torch

import ember


@pytest.mark.parametrize("make", [lambda: ember.eye(2).to_sparse(),
                                  lambda: ember.eye(2).to_sparse_csr(),
                                  lambda: ember.eye(4).to_sparse_bsr((2, 2))])
@pytest.mark.parametrize("size", [(-1, 3), (-2, 4), (2, -2)])
def test_new_zeros_refuses_negative_sizes_as_torch(make, size):
    with pytest.raises(RuntimeError):  # (torch: "negative dimension" / "overflow")
        torch.eye(2).to_sparse().new_zeros(*size)
    with pytest.raises(ember.errors.ShapeError, match=r"new_zeros: .*non-negative.*-"):
        make().new_zeros(*size)
