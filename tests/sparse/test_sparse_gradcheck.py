"""as_sparse_gradcheck against PyTorch's: sparse inputs (all elements, or masked) and sparse
outputs, for every layout."""

import warnings

import pytest
import torch

import ember
from ember.autograd import gradcheck, gradgradcheck

warnings.filterwarnings("ignore", message="Sparse")
X = [[0.0, 1.0], [2.0, 0.0]]


@pytest.mark.parametrize("layout", ["sparse_coo", "sparse_csr", "sparse_csc", "sparse_bsr"])
@pytest.mark.parametrize("masked", [False, True])
def test_as_sparse_gradcheck_agrees_with_torch(layout, masked):
    kw = {"blocksize": (1, 1)} if layout == "sparse_bsr" else {}
    s = ember.tensor(X, dtype=ember.float64).to_sparse(layout=getattr(ember, layout), **kw)
    d = ember.tensor([[1.0, 2.0], [3.0, 4.0]], dtype=ember.float64, requires_grad=True)
    check = ember.sparse.as_sparse_gradcheck(gradcheck)
    assert check(lambda s, d: s @ d, (s.requires_grad_(True), d), masked=masked)
    assert check(lambda s: s.to_dense() * 3, (s,), masked=masked)
    assert ember.sparse.as_sparse_gradcheck(gradgradcheck)(lambda s, d: s @ d, (s, d),
                                                           masked=masked)
    t = torch.tensor(X, dtype=torch.float64).to_sparse(layout=getattr(torch, layout), **kw)
    tcheck = torch.sparse.as_sparse_gradcheck(torch.autograd.gradcheck)
    assert tcheck(lambda t: t.to_dense() * 3, (t.requires_grad_(True),), masked=masked)
    if layout in ("sparse_coo", "sparse_csr"):  # sparse outputs (PyTorch's CSC/BSR fail)
        assert check(lambda s: s * 2, (s,), masked=masked)
        assert tcheck(lambda t: t * 2, (t,), masked=masked)


def test_a_wrong_gradient_fails():
    s = ember.tensor(X, dtype=ember.float64).to_sparse().requires_grad_(True)
    check = ember.sparse.as_sparse_gradcheck(gradcheck)

    class Wrong(ember.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            return x * 2

        @staticmethod
        def backward(ctx, g):
            return g * 3

    assert not check(lambda s: Wrong.apply(s.to_dense()), (s,), raise_exception=False)
