"""mend60h: fixes of review60h's findings on sweep60h's sparse commits."""

import numpy as np
import pytest
import torch

import ember

DENSE = [[0.0, 1.0, 0.0, 0.0], [2.0, 0.0, 3.0, 0.0]]


@pytest.mark.parametrize("convert", [lambda x: x.to_sparse_bsr((1, 2)),
                                     lambda x: x.to_sparse_bsc((2, 1)),
                                     lambda x: x.to_sparse_bsr((2, 2))])
@pytest.mark.parametrize("dim", [(0, 1), 0, 1, -1])
def test_block_sum_over_dims_equals_the_dense_sum(convert, dim):
    # (torch 2.13 refuses these: "the only compressed sparse format supported ... is CSR";
    # Ember sums them, so its answer must be the dense sum, never block values misread)
    b = convert(ember.tensor(DENSE))
    want = torch.tensor(DENSE).sum(dim).numpy()
    for got in (b.sum(dim), ember.sum(b, dim)):
        got = got if isinstance(got, ember.Tensor) else got.to_dense()
        np.testing.assert_allclose(got.numpy(), want)


@pytest.mark.parametrize("layout", ["coo", "csr", "csc"])
def test_new_zeros_of_a_huge_size_makes_no_dense_tensor(layout):
    s = ember.eye(2).to_sparse(layout=getattr(ember, f"sparse_{layout}"))
    made = s.new_zeros(10**6, 10**6)  # (4 TB dense: built without it, as torch)
    assert (made.layout, tuple(made.shape), made._nnz()) == (s.layout, (10**6, 10**6), 0)


def test_new_zeros_errors_name_new_zeros():
    with pytest.raises(ember.errors.ShapeError, match="new_zeros"):
        ember.eye(2).to_sparse_csr().new_zeros(5)
    with pytest.raises(ember.errors.ShapeError, match="new_zeros"):
        ember.eye(4).to_sparse_bsr((2, 2)).new_zeros(3, 4)


@pytest.mark.parametrize("layout", ["strided", "sparse_coo", "sparse_csr", "sparse_csc"])
def test_new_zeros_layout_keyword_as_torch(layout):
    made = ember.eye(2).to_sparse().new_zeros(2, 3, layout=getattr(ember, layout))
    want = torch.eye(2).to_sparse().new_zeros(2, 3, layout=getattr(torch, layout))
    assert str(made.layout).split(".")[1] == str(want.layout).split(".")[1]
    assert tuple(made.shape) == tuple(want.shape)
    np.testing.assert_array_equal(
        (made if layout == "strided" else made.to_dense()).numpy(), np.zeros((2, 3)))


def test_new_zeros_refuses_unknown_keywords_as_torch():
    s = ember.eye(2).to_sparse()
    with pytest.raises(TypeError, match="foo"):
        s.new_zeros(2, 3, foo=1)
    with pytest.raises(TypeError, match="layout"):
        s.new_zeros(2, 3, layout="csr")
    with pytest.raises(ember.errors.ArgumentError, match="blocksize"):
        s.new_zeros(2, 2, layout=ember.sparse_bsr)
    assert s.new_zeros(2, pin_memory=False)._nnz() == 0
