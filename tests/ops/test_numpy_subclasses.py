"""NumPy array subclasses (np.matrix, masked arrays) become tensors over their memory as a
plain array, as PyTorch reads them: a matrix's reductions and products are a tensor's."""

from __future__ import annotations

import numpy as np
import pytest
import torch

import ember

MAKERS = [ember.from_numpy, ember.as_tensor, ember.asarray, ember.tensor]


@pytest.mark.parametrize("make", MAKERS)
def test_a_matrix_is_a_plain_2d_tensor(make):
    m = np.matrix([[1.0, 2.0], [3.0, 4.0]])
    t = make(m)
    assert type(t._data) is np.ndarray
    want = torch.as_tensor(m)
    assert t.sum(0).shape == tuple(want.sum(0).shape) == (2,)  # (was (1, 2))
    assert (t * t).tolist() == (want * want).tolist()


@pytest.mark.parametrize("make", MAKERS)
def test_a_masked_array_gives_its_data(make):
    a = np.ma.masked_array([1.0, 2.0, 3.0], mask=[0, 1, 0])
    t = make(a)
    assert t.tolist() == torch.as_tensor(a).tolist() == [1.0, 2.0, 3.0]  # (was [1.0, None, 3.0])


def test_from_numpy_of_a_matrix_still_shares_its_memory():
    m = np.matrix([[1.0, 2.0]])
    t = ember.from_numpy(m)
    m[0, 0] = 7.0
    assert t[0, 0].item() == 7.0
