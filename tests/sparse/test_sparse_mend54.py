"""Sparse reductions take a dtype name as the dense ones do (mend54c; review54c #3: since
``to()`` refuses dtype strings they failed inside ``to`` with a DeviceError)."""

import numpy as np
import pytest
import torch

import ember
from ember.errors import DTypeError

DATA = [[0.0, 2.0], [3.0, 4.0]]

CASES = {
    "sparse.sum": lambda lib, s, dt: lib.sparse.sum(s, dtype=dt),
    "sparse.sum over a dim": lambda lib, s, dt: lib.sparse.sum(s, 0, dtype=dt).to_dense(),
    "sum method": lambda lib, s, dt: s.sum(dtype=dt),
    "sum method over a dim": lambda lib, s, dt: s.sum(1, dtype=dt).to_dense(),
    "sparse.softmax": lambda lib, s, dt: lib.sparse.softmax(s, 1, dtype=dt).to_dense(),
    "sparse.log_softmax": lambda lib, s, dt: lib.sparse.log_softmax(s, 1, dtype=dt).to_dense(),
    "CSR sum method": lambda lib, s, dt: s.to_sparse_csr().sum(dtype=dt),
    "to_dense": lambda lib, s, dt: s.to_dense(dtype=dt) if lib is ember else
    s.to_dense().to(dt),  # (torch's sparse to_dense takes no dtype)
}


@pytest.mark.parametrize("case", list(CASES))
def test_a_dtype_name_reads_as_the_dtype_as_in_dense_reductions(case):
    fn = CASES[case]
    want = fn(torch, torch.tensor(DATA).to_sparse(), torch.float64)  # (torch: dtypes only)
    s = ember.tensor(DATA).to_sparse()
    for dt in ("float64", ember.float64):
        got = fn(ember, s, dt)
        assert got.dtype is ember.float64
        np.testing.assert_allclose(got.numpy(), want.numpy(), rtol=1e-12)
    assert ember.tensor(DATA).sum(dtype="float64").dtype is ember.float64  # the dense rule


@pytest.mark.parametrize(("op", "call"), [
    ("sparse.sum", lambda s: ember.sparse.sum(s, dtype="float6")),
    ("sparse.sum", lambda s: s.sum(dtype="float6")),
    ("sparse.sum", lambda s: s.to_sparse_csr().sum(1, dtype="float6")),
    ("sparse.softmax", lambda s: ember.sparse.softmax(s, 0, dtype="float6")),
    ("sparse.log_softmax", lambda s: ember.sparse.log_softmax(s, 0, dtype="float6")),
    ("to_dense", lambda s: s.to_dense(dtype="float6")),
])
def test_an_unknown_dtype_name_is_refused_naming_the_op(op, call):
    with pytest.raises(DTypeError, match=rf"^{op}: unknown dtype name 'float6'"):
        call(ember.tensor(DATA).to_sparse())
