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


DTYPE_METHODS = [("float", "float32"), ("double", "float64"), ("half", "float16"),
                 ("bfloat16", "bfloat16"), ("cfloat", "complex64"), ("cdouble", "complex128"),
                 ("bool", "bool"), ("byte", "uint8"), ("char", "int8"), ("short", "int16"),
                 ("int", "int32"), ("long", "int64")]


@pytest.mark.parametrize("layout", ["to_sparse", "to_sparse_csr"])
@pytest.mark.parametrize(("method", "dtype"), DTYPE_METHODS)
def test_sparse_dtype_method_to_its_own_dtype_returns_itself_as_torch(layout, method, dtype):
    # S.float() of a float32 S copied (torch returns S), and bfloat16/cfloat/... were refused.
    for m in (ember, torch):
        s = getattr(m.eye(2), layout)().to(getattr(m, dtype))
        assert getattr(s, method)() is s
        other = getattr(s.to(m.float64 if dtype != "float64" else m.float32), method)()
        assert other.dtype == getattr(m, dtype) and other.layout == s.layout
        np.testing.assert_array_equal(other.to_dense().to(m.float64).numpy(), np.eye(2))
