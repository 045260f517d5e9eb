"""Sorting flags and creation arguments against PyTorch (mendsort): bool linspace/logspace of
at most one point, bool-only sort/topk flags, full's tensor fill values."""

import numpy as np
import pytest
import torch

import ember


@pytest.mark.parametrize("steps", [0, 1])
@pytest.mark.parametrize("start, end", [(0, 1), (1, 0), (0, 0), (0.5, 3), (-1, 2), (1000, 2000),
                                        (-1000, 1), (1e-4, 2), (True, False)])
@pytest.mark.parametrize("op, base", [("linspace", None), ("logspace", 10), ("logspace", 0),
                                      ("logspace", -1), ("logspace", 0.5)])
def test_bool_linspace_and_logspace_of_at_most_one_point_are_torch_s(steps, start, end, op,
                                                                      base):
    # (one point is start, or base ** start, cast to bool: logspace(0, 1, 1) is [True]; Ember
    # refused bool for any number of steps)
    kwargs = {} if base is None else {"base": base}
    want = getattr(torch, op)(start, end, steps, dtype=torch.bool, **kwargs)
    got = getattr(ember, op)(start, end, steps, dtype=ember.bool, **kwargs)
    assert got.dtype is ember.bool and got.shape == tuple(want.shape)
    np.testing.assert_array_equal(got.numpy(), want.numpy())


@pytest.mark.parametrize("op", ["linspace", "logspace"])
def test_bool_linspace_and_logspace_of_two_points_stay_refused(op):
    with pytest.raises(NotImplementedError, match="Bool"):
        getattr(torch, op)(0, 1, 2, dtype=torch.bool)
    with pytest.raises(ember.errors.DTypeError, match="not implemented for bool"):
        getattr(ember, op)(0, 1, 2, dtype=ember.bool)
