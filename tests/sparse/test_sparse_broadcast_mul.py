"""``dense * sparse`` where the sparse operand broadcasts to a larger shape (``D(2, 3) *
S(3,)``, ``D.mul_(S)``) was refused ("Ember does not make a larger sparse result"); torch
repeats the COO pattern along the new sparse dimensions. Along a sparse dimension of size 1
torch 2.13 does not repeat it (``D(2, 2, 3) * S(1, 3)`` leaves row 1 zero, where
``D * S.to_dense()`` does not): Ember's equals ``D * S.to_dense()`` there, torch's dense form."""

import numpy as np
import pytest
import torch

import ember


def _coo(lib, index, values, size, coalesced):
    s = lib.sparse_coo_tensor(lib.tensor(index, dtype=lib.int64),
                              lib.tensor(values, dtype=lib.float64), size)
    return s.coalesce() if coalesced else s


CASES = [  # (dense shape, sparse index, values, sparse size)
    ((2, 3), [[0, 2]], [3.0, 5.0], (3,)),
    ((2, 3), [[2, 0, 2]], [3.0, 5.0, 1.0], (3,)),  # (uncoalesced: a repeated entry)
    ((2, 2, 3), [[0, 0], [1, 2]], [3.0, -5.0], (1, 3)),
    ((4, 3, 2), [[1, 2]], [[1.0, 2.0], [3.0, 4.0]], (3, 2)),  # (hybrid: a dense dim)
    ((2, 3), [[]], [], (3,)),
]


@pytest.mark.parametrize("coalesced", [True, False])
@pytest.mark.parametrize("case", CASES, ids=str)
def test_dense_times_a_broadcast_sparse_as_torch(case, coalesced):
    shape, index, values, size = case
    d = np.arange(np.prod(shape), dtype=np.float64).reshape(shape) - 3
    outs = []
    for lib in (ember, torch):
        s = _coo(lib, index, values, size, coalesced)
        dense = lib.tensor(d)
        r, flipped = dense * s, s * dense
        inplace = dense.clone()
        inplace.mul_(s)
        # (is_coalesced: an uncoalesced s gave an uncoalesced product; torch coalesces s)
        outs.append((r.layout is lib.sparse_coo, r.shape == flipped.shape, r.is_coalesced(),
                     flipped.is_coalesced(), r.to_dense().tolist(),
                     flipped.to_dense().tolist(), inplace.tolist()))
    expected = (dense * s.to_dense()).tolist()
    assert outs[0] == outs[1][:4] + (expected,) * 3
    if 1 not in size:  # (torch's own sparse product: see the module docstring)
        assert outs[0] == outs[1]


def test_the_broadcast_product_s_gradients():
    d = ember.tensor(np.linspace(-1, 1, 6).reshape(2, 3), requires_grad=True)
    v = ember.tensor([3.0, 5.0], dtype=ember.float64, requires_grad=True)
    assert ember.autograd.gradcheck(
        lambda d, v: (d * ember.sparse_coo_tensor(ember.tensor([[0, 2]]), v, (3,))).to_dense(),
        (d, v))
    w = ember.tensor([3.0, 5.0, -1.0], dtype=ember.float64, requires_grad=True)
    assert ember.autograd.gradcheck(  # (uncoalesced: the repeated entry summed first)
        lambda d, w: (d * ember.sparse_coo_tensor(ember.tensor([[2, 0, 2]]), w, (3,)))
        .to_dense(), (d, w))


def test_a_dense_dim_that_would_broadcast_is_still_refused():
    s = _coo(ember, [[1, 2]], [[1.0], [3.0]], (3, 1), True)  # (sparse_dim 1, dense (1,))
    with pytest.raises(ember.errors.ShapeError, match="along its sparse dimensions"):
        ember.ones(3, 4, dtype=ember.float64) * s
