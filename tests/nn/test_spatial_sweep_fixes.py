"""Fixes from the spatial ops differential sweep against PyTorch (/work/fuzz/spatial45)."""
import numpy as np
import pytest
import torch

import ember
import ember.nn.functional as F
from ember.errors import ShapeError


@pytest.mark.parametrize("mode", ["sum", "mean", "max"])
def test_embedding_bag_include_last_offset_refuses_empty_offsets_as_torch(mode):
    w = np.arange(15.0).reshape(5, 3)
    with pytest.raises(RuntimeError, match="at least 1"):
        torch.nn.functional.embedding_bag(torch.tensor([1, 2]), torch.tensor(w),
                                          torch.tensor([], dtype=torch.int64), mode=mode,
                                          include_last_offset=True)
    with pytest.raises(ShapeError, match="embedding_bag: include_last_offset=True needs at least"):
        F.embedding_bag(ember.tensor([1, 2]), ember.tensor(w),
                        ember.tensor([], dtype=ember.int64), mode=mode, include_last_offset=True)
    # without include_last_offset, empty offsets are no bags, as in torch
    got = F.embedding_bag(ember.tensor([1, 2]), ember.tensor(w),
                          ember.tensor([], dtype=ember.int64), mode=mode)
    assert tuple(got.shape) == (0, 3)
