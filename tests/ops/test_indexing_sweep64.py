"""Indexing sweep (session 64) against PyTorch 2.13: a range as an index, index_select of a
0-d tensor."""

import numpy as np
import pytest
import torch

import ember


def _x(m):
    return m.arange(20.0).reshape(4, 5)


@pytest.mark.parametrize("key", [lambda: range(0, 4, 2), lambda: (range(2), range(1, 3)),
                                 lambda: (slice(None), range(0)), lambda: (1, range(4, 0, -2))])
def test_range_index_reads_and_writes_as_torch(key) -> None:
    # (a range was refused: "cannot index with an object of type range")
    want, got = _x(torch)[key()], _x(ember)[key()]
    assert tuple(got.shape) == tuple(want.shape)
    np.testing.assert_array_equal(got.numpy(), want.numpy())
    t, e = _x(torch), _x(ember)
    t[key()] = -1.0
    e[key()] = -1.0
    np.testing.assert_array_equal(e.numpy(), t.numpy())


@pytest.mark.parametrize("index", [[0, 0], []])
def test_index_select_of_a_0d_tensor_takes_one_index(index: list) -> None:
    # (two indices gave the one value back silently; torch refuses)
    with pytest.raises(RuntimeError, match="Index to scalar can have only 1 value"):
        torch.tensor(1.0).index_select(0, torch.tensor(index, dtype=torch.int64))
    with pytest.raises(IndexError, match="index_select: indexing a 0-d tensor takes exactly one"):
        ember.tensor(1.0).index_select(0, ember.tensor(index, dtype=ember.int64))
    got = ember.tensor(2.0).index_select(0, ember.tensor([0]))
    assert got.shape == () and got.item() == 2.0
