"""``full`` with a dtype still wants a number as the fill value (session-63 sweep, vs torch)."""

import numpy as np
import pytest
import torch

import ember


@pytest.mark.parametrize("fill_value", [None, [1.0], [5.0, 6.0], "1", (2.0,)])
def test_full_with_a_dtype_refuses_a_fill_value_that_is_not_a_number(fill_value):
    # (with a dtype, None made an uninitialised tensor and [5, 6] filled (2,) with 5 and 6)
    with pytest.raises(TypeError):
        torch.full((2,), fill_value, dtype=torch.float32)
    with pytest.raises(TypeError, match="full\\(\\): argument 'fill_value' must be a number"):
        ember.full((2,), fill_value, dtype=ember.float32)


@pytest.mark.parametrize("fill_value", [2, 2.5, True, np.float32(3.0), np.int64(-1)])
def test_full_with_a_dtype_takes_numbers_as_torch(fill_value):
    ours = ember.full((2,), fill_value, dtype=ember.uint8 if fill_value == -1 else ember.float32)
    theirs = torch.full((2,), fill_value, dtype=torch.uint8 if fill_value == -1 else torch.float32)
    assert ours.tolist() == theirs.tolist()
