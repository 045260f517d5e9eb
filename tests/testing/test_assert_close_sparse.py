"""assert_close of sparse tensors (COO, CSR, CSC, BSR, BSC) against PyTorch's: the same
passes, failures and messages, without coalescing; other layouts with check_layout=False."""

import itertools
import warnings

import numpy as np
import pytest
import torch

import ember

_DENSE = [np.array([[1.0, 0], [2, 3]]), np.array([[1.0, 0], [2, 3 + 1e-3]]),
          np.array([[1.0, 1], [2, 3]]), np.array([[0.0, 1], [2, 3]]),
          np.array([[1.0, 0], [2, np.nan]])]
_LAYOUTS = ["coo", "csr", "csc", "bsr", "bsc", "dense"]


def _make(lib, values, layout, dtype="float32"):
    t = lib.tensor(values, dtype=getattr(lib, dtype))
    return {"coo": t.to_sparse, "csr": t.to_sparse_csr, "csc": t.to_sparse_csc,
            "bsr": lambda: t.to_sparse_bsr((1, 1)), "bsc": lambda: t.to_sparse_bsc((1, 1)),
            "dense": lambda: t}[layout]()


def _outcome(lib, compare):
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # (PyTorch's beta-state warnings)
            compare(lib)
        return "passed"
    except (AssertionError, TypeError, ValueError) as e:
        return f"{type(e).__name__}: {e}".replace("torch.", "").replace("ember.", "")


@pytest.mark.parametrize("layout", _LAYOUTS[:-1])
def test_sparse_comparisons_and_messages_match_torch(layout):
    for (a, b), other, options, dtype in itertools.product(
            itertools.product(_DENSE, _DENSE), _LAYOUTS,
            ({}, {"check_layout": False}, {"equal_nan": True}, {"check_dtype": False}),
            ("float32", "float64")):
        def compare(lib, a=a, b=b, other=other, options=options, dtype=dtype):
            lib.testing.assert_close(_make(lib, a, layout), _make(lib, b, other, dtype),
                                     **options)
        assert _outcome(ember, compare) == _outcome(torch, compare), (other, options, dtype)


@pytest.mark.parametrize("case", [
    lambda lib: lib.testing.assert_close(  # (uncoalesced: not coalesced first, as PyTorch)
        lib.sparse_coo_tensor([[0, 0, 1]], [1.0, 2.0, 3.0], (3,)),
        lib.sparse_coo_tensor([[0, 1]], [3.0, 3.0], (3,))),
    lambda lib: lib.testing.assert_close(
        lib.sparse_coo_tensor([[0, 0, 1]], [1.0, 2.0, 3.0], (3,)),
        lib.sparse_coo_tensor([[0, 1]], [3.0, 3.0], (3,)).to_dense(), check_layout=False),
    lambda lib: lib.testing.assert_close(lib.sparse_coo_tensor([[0, 1]], [1.0, 2.0], (3,)),
                                         lib.sparse_coo_tensor([[0, 2]], [1.0, 2.0], (3,))),
    lambda lib: lib.testing.assert_close(  # (hybrid: fewer sparse dims)
        lib.sparse_coo_tensor([[0, 1], [0, 1]], [1.0, 2.0], (3, 3)),
        lib.sparse_coo_tensor([[0, 1]], [[1.0, 0, 0], [0, 2, 0]], (3, 3))),
    lambda lib: lib.testing.assert_close({"a": lib.ones(2).to_sparse()},
                                         {"a": lib.zeros(2).to_sparse()}),
    lambda lib: lib.testing.assert_close(lib.ones(2).to_sparse(), lib.zeros(2).to_sparse(),
                                         msg="custom"),
    lambda lib: lib.testing.assert_close(lib.ones(2, 2).to_sparse_csr(),
                                         lib.ones(2, 2).to_sparse_csr(), check_stride=True),
])
def test_sparse_special_cases_match_torch(case):
    assert _outcome(ember, case) == _outcome(torch, case)


def test_sparse_against_a_list_is_a_type_error():
    with pytest.raises(TypeError, match="No comparison pair"):
        ember.testing.assert_close(ember.ones(2).to_sparse(), [1.0, 1.0])
