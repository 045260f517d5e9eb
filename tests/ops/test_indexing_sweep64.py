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


def _scatter_reduce_grads(m, reduce: str, include_self: bool) -> list:
    nan, inf = float("nan"), float("inf")
    a = m.tensor([1.0, nan, 3.0, -inf, 0.0, -0.0], dtype=m.float64, requires_grad=True)
    src = m.tensor([nan, 2.0, inf, 5.0, 4.0, 4.0], dtype=m.float64, requires_grad=True)
    index = m.tensor([0, 0, 2, 2, 4, 4])
    a.scatter_reduce(0, index, src, reduce, include_self=include_self).sum().backward()
    return [a.grad.numpy(), src.grad.numpy()]


@pytest.mark.parametrize("reduce,include_self", [("prod", False), ("amax", True),
                                                 ("amin", True), ("amax", False)])
def test_scatter_reduce_grads_at_nan_and_inf_as_torch(reduce: str, include_self: bool) -> None:
    # (prod without self gave a left-out inf/nan self entry a NaN gradient, not 0; amax/amin
    # gave an entry of a NaN result 0, where torch gives NaN)
    want = _scatter_reduce_grads(torch, reduce, include_self)
    got = _scatter_reduce_grads(ember, reduce, include_self)
    np.testing.assert_array_equal(got[0], want[0])
    if include_self:  # (without self, torch still counts self's ties: 1/3 where 1/2 is right)
        np.testing.assert_array_equal(got[1], want[1])
    else:
        np.testing.assert_array_equal(np.isnan(got[1]), np.isnan(want[1]))
