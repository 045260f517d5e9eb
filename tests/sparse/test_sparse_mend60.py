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


def _uncoalesced_batch(lib, values):
    index = [[1, 0, 1, 1], [0, 1, 0, 2], [2, 0, 2, 3]]  # ((1, 0, 2) twice)
    return lib.sparse_coo_tensor(index, values, (2, 3, 4))  # (n != m: a wrong column map fails)


def test_bmm_is_one_block_diagonal_product(monkeypatch):
    import ember.sparse.ops as sparse_ops

    calls, real = [], sparse_ops.mm
    monkeypatch.setattr(sparse_ops, "mm", lambda *a: calls.append(a) or real(*a))
    ember.bmm(_uncoalesced_batch(ember, [1.0, 2.0, 3.0, 4.0]), ember.ones(2, 4, 2))
    assert len(calls) == 1  # (before: one mm per matrix of the batch, a Python loop)


@pytest.mark.parametrize("coalesce", [False, True])
def test_bmm_values_and_gradients_as_torch(coalesce):
    results = []
    for lib in (ember, torch):
        v = lib.tensor([1.0, 2.0, 3.0, -4.0], dtype=lib.float64, requires_grad=True)
        s = _uncoalesced_batch(lib, v)
        s = s.coalesce() if coalesce else s
        d = lib.arange(24.0, dtype=lib.float64).reshape(2, 4, 3).requires_grad_()
        out = lib.bmm(s, d)
        (out * lib.arange(18.0, dtype=lib.float64).reshape(2, 3, 3)).sum().backward()
        results.append([out.detach().numpy(), v.grad.numpy(), d.grad.numpy()])
    for got, want in zip(*results):
        np.testing.assert_allclose(got, want)


def test_bmm_gradcheck_float64():
    v = ember.tensor([1.0, 2.0, 3.0, -4.0], dtype=ember.float64, requires_grad=True)
    d = ember.randn(2, 4, 2, dtype=ember.float64, requires_grad=True)
    assert ember.autograd.gradcheck(lambda v, d: ember.bmm(_uncoalesced_batch(ember, v), d),
                                    (v, d))


def test_type_of_the_own_dtype_is_self_as_torch():
    s, t = ember.eye(2).to_sparse(), torch.eye(2).to_sparse()
    for e_arg, t_arg in ((ember.float32, torch.float32),
                         ("torch.sparse.FloatTensor", "torch.sparse.FloatTensor")):
        assert (s.type(e_arg) is s) == (t.type(t_arg) is t) is True
    assert s.type(ember.float64).dtype == ember.float64


def test_is_same_size_of_a_non_tensor_is_a_type_error_as_torch():
    s = ember.eye(2).to_sparse()
    with pytest.raises(TypeError, match="is_same_size.*other.*int"):
        s.is_same_size(3)
    assert s.is_same_size(ember.zeros(2, 2)) and not s.is_same_size(ember.zeros(2).to_sparse())
