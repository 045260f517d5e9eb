"""mend62a: sparse fixes from a review of session 62's sparse commits, compared with torch."""

import math
import warnings

import numpy as np
import pytest
import torch

import ember

INF, NAN = math.inf, math.nan
TIES = [  # (crow, col, values, dense): ties, unsorted columns, NaN, infinities, empty rows
    ([0, 2], [0, 1], [1.0, 1.0], [[2.0], [2.0]]),
    ([0, 2], [1, 0], [1.0, 1.0], [[2.0], [2.0]]),
    ([0, 3], [2, 0, 1], [1.0, 1.0, 1.0], [[2.0], [2.0], [2.0]]),
    ([0, 3], [2, 0, 1], [1.0, NAN, 1.0], [[2.0], [2.0], [2.0]]),
    ([0, 3], [2, 0, 1], [1.0, NAN, NAN], [[2.0], [2.0], [2.0]]),
    ([0, 2], [0, 1], [INF, INF], [[2.0], [2.0]]),
    ([0, 2], [0, 1], [-INF, -INF], [[2.0], [2.0]]),
    ([0, 2], [0, 1], [-INF, 1.0], [[2.0], [2.0]]),
    ([0, 0, 2], [0, 1], [1.0, 1.0], [[2.0, 1.0], [2.0, 3.0]]),
    ([0, 3, 4], [0, 1, 2, 1], [2.0, 1.0, 2.0, 1.0], [[1.0, 2.0], [2.0, 2.0], [1.0, 2.0]]),
]


@pytest.mark.parametrize("reduce", ["amax", "amin", "max", "min"])
@pytest.mark.parametrize("case", TIES)
def test_sparse_mm_amax_amin_grad_goes_to_the_first_winner_as_torch(reduce, case):
    # The gradient of tied products was split evenly (S=[[1, 1]], D=[[2], [2]] gave
    # S.grad [[1, 1]], torch [[2, 0]]); a non-winning infinite factor gave NaN.
    crow, col, values, dense = case
    results = []
    for m in (ember, torch):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            s = m.sparse_csr_tensor(m.tensor(crow), m.tensor(col),
                                    m.tensor(values, dtype=m.float64),
                                    (len(crow) - 1, len(dense))).requires_grad_()
        d = m.tensor(dense, dtype=m.float64, requires_grad=True)
        out = m.sparse.mm(s, d, reduce)
        (out * (m.arange(out.numel(), dtype=m.float64).reshape(out.shape) + 1)).sum().backward()
        results.append([out.detach().numpy(), s.grad.values().numpy(),
                        s.grad.col_indices().numpy(), d.grad.numpy()])
    for e, t in zip(*results):
        np.testing.assert_array_equal(e, t)
