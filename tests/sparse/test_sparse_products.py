"""Sparse @ sparse, elementwise arithmetic with sparse operands, and the row products
(hspmm, smm, sspaddmm, saddmm, dsmm), against PyTorch, with float64 gradient checks."""

import warnings

import numpy as np
import pytest
import torch

import ember
from ember.autograd import gradcheck, gradgradcheck

warnings.filterwarnings("ignore", message="Sparse")
A = [[0.0, 2.0, 0.0], [3.0, 0.0, 4.0], [0.0, 0.0, 0.0]]
B = [[1.0, 0.0], [0.0, 0.0], [0.0, 5.0]]
UNCOALESCED = ([[1, 0, 1], [0, 1, 0]], [1.0, 2.0, 3.0], (3, 3))


def both(x, layout="sparse_coo"):
    return (ember.tensor(x, dtype=ember.float64).to_sparse(layout=getattr(ember, layout)),
            torch.tensor(x, dtype=torch.float64).to_sparse(layout=getattr(torch, layout)))


def dense(x):
    return (x.to_dense() if x.layout not in (ember.strided, torch.strided) else x).detach()


def check(e, t):
    assert e.layout.name == str(t.layout).removeprefix("torch.")
    if e.layout is ember.sparse_coo:
        assert e.is_coalesced() == t.is_coalesced()
        assert e._nnz() == t._nnz()
    np.testing.assert_allclose(dense(e).numpy(), dense(t).numpy())


@pytest.mark.parametrize("layout", ["sparse_coo", "sparse_csr", "sparse_csc"])
def test_sparse_times_sparse_matches_torch(layout):
    (ea, ta), (eb, tb) = both(A, layout), both(B, layout)
    e, t = ea @ eb, ta @ tb
    check(e, t)
    assert e._nnz() == t._nnz()
    e = ember.sparse.mm(ea, eb)  # sparse.mm keeps CSC, as PyTorch's
    assert e.layout.name == str(torch.sparse.mm(ta, tb).layout).removeprefix("torch.")
    # (PyTorch 2.13's sparse.mm of two CSC matrices returns no entries: compare with its @)
    np.testing.assert_allclose(e.to_dense().numpy(), (ta @ tb).to_dense().numpy())
    ecancel = ember.tensor([[1.0, 1.0]]).to_sparse() @ ember.tensor([[1.0], [-1.0]]).to_sparse()
    assert ecancel._nnz() == 1  # a structural product that cancels stays, as PyTorch's
    ind, val, size = UNCOALESCED
    check(ember.sparse_coo_tensor(ind, val, size) @ ember.tensor(B).to_sparse(),
          torch.sparse_coo_tensor(ind, val, size) @ torch.tensor(B).to_sparse())


def test_sparse_times_sparse_gradients():
    (ea, ta), (eb, tb) = both(A), both(B)
    for x in (ea, ta, eb, tb):
        x.requires_grad_(True)
    (ea @ eb).to_dense().pow(2).sum().backward()
    (ta @ tb).to_dense().pow(2).sum().backward()
    for e, t in ((ea, ta), (eb, tb)):  # (PyTorch's reaches elements outside the leaf's
        # pattern; Ember's, as for sparse @ dense, is the gradient at the leaf's entries)
        mask = t.detach().to_dense().numpy() != 0
        np.testing.assert_allclose(e.grad.to_dense().numpy(), t.grad.to_dense().numpy() * mask)
    for layout in ("sparse_coo", "sparse_csr"):
        sa, sb = both(A, layout)[0], both(B, layout)[0]

        def product(va, vb, sa=sa, sb=sb):
            left = ember.sparse.SparseTensor(sa.layout, sa.shape, sa._index, va, True)
            right = ember.sparse.SparseTensor(sb.layout, sb.shape, sb._index, vb, True)
            return (left @ right).to_dense()
        va, vb = (s._values().clone().requires_grad_(True) for s in (sa, sb))
        assert gradcheck(product, (va, vb))
        assert gradgradcheck(product, (va, vb))
    with pytest.raises(RuntimeError, match="COO with COO, or CSR or CSC with CSR or CSC"):
        both(A)[0] @ both(B, "sparse_csr")[0]
    with pytest.raises(ember.errors.ShapeError, match="cannot be multiplied"):
        both(A)[0] @ both(B)[0].t()


def test_add_and_sub_with_dense_match_torch():
    (es, ts), ed = both(A), ember.tensor(np.arange(9.0).reshape(3, 3), requires_grad=True)
    td = torch.tensor(np.arange(9.0).reshape(3, 3), requires_grad=True)
    check(ed + es, td + ts)
    check(ed - es, td - ts)
    check(ember.add(ed, es, alpha=2), torch.add(td, ts, alpha=2))
    ecsr, tcsr = both(A, "sparse_csr")
    check(ecsr + ed, tcsr + td)
    check(ed + ecsr, td + tcsr)
    with pytest.raises(RuntimeError, match=r"add\(sparse, dense\) is not supported"):
        es + ed
    with pytest.raises(RuntimeError, match="same size"):
        ember.ones(3) + es
    check(es - es, ts - ts)
    v = es._values().clone().requires_grad_(True)
    assert gradcheck(lambda v, d: d + ember.sparse.SparseTensor(es.layout, es.shape, es._index,
                                                               v, True), (v, ed))


def test_mul_and_div_match_torch():
    (es, ts), d = both(A), np.arange(1.0, 10.0).reshape(3, 3)
    ed, td = ember.tensor(d), torch.tensor(d)
    check(es * ed, ts * td)
    check(ed * es, td * ts)
    check(es * ember.tensor([1.0, 2.0, 3.0], dtype=ember.float64),
          ts * torch.tensor([1.0, 2.0, 3.0], dtype=torch.float64))
    check(es * 2, ts * 2)
    check(es / 2, ts / 2)
    check(es * es, ts * ts)
    ind, val, size = UNCOALESCED
    eu = ember.sparse_coo_tensor(ind, ember.tensor(val, dtype=ember.float64), size)
    tu = torch.sparse_coo_tensor(ind, torch.tensor(val, dtype=torch.float64), size)
    check(es * eu, ts * tu)
    check(eu * eu, tu * tu)
    check(eu * ed, tu * td)
    ecsr, tcsr = both(A, "sparse_csr")
    check(ecsr * ed, tcsr * td)
    check(ecsr * ecsr, tcsr * tcsr)
    check(eu.pow(2), tu.pow(2))
    check(es ** -1, ts ** -1)
    with pytest.raises(RuntimeError, match="zeroth power"):
        es ** 0
    with pytest.raises(RuntimeError, match="scalar or zero-dim dense tensor divisor"):
        es / ed
    with pytest.raises(NotImplementedError, match="exp: not supported"):
        ember.exp(es)
    v = es._values().clone().requires_grad_(True)
    w = ember.tensor(d, requires_grad=True)
    assert gradcheck(lambda v, w: (ember.sparse.SparseTensor(es.layout, es.shape, es._index, v,
                                                             True) * w).to_dense(), (v, w))
    assert gradcheck(lambda v: (ember.sparse.SparseTensor(es.layout, es.shape, es._index, v,
                                                          True) * es).to_dense(), (v,))


@pytest.mark.parametrize("name", ["hspmm", "smm", "dsmm"])
def test_row_products_match_torch(name):
    (es, ts), d = both(A), np.arange(6.0).reshape(3, 2)
    e, t = getattr(ember, name)(es, ember.tensor(d)), getattr(torch, name)(ts, torch.tensor(d))
    check(e, t)
    if e.layout is ember.sparse_coo:
        np.testing.assert_array_equal(e._indices().numpy(), t._indices().numpy())
        np.testing.assert_allclose(e._values().numpy(), t._values().numpy())
    v = es._values().clone().requires_grad_(True)
    w = ember.tensor(d, requires_grad=True)
    fn = getattr(ember, name)
    assert gradcheck(lambda v, w: dense_of(fn(ember.sparse.SparseTensor(
        es.layout, es.shape, es._index, v, True), w)), (v, w))


def dense_of(x):
    return x.to_dense() if isinstance(x, ember.sparse.SparseTensor) else x


@pytest.mark.parametrize("name", ["sspaddmm", "saddmm"])
def test_sspaddmm_matches_torch(name):
    (es, ts), d = both(A), np.arange(6.0).reshape(3, 2)
    (ei, ti) = both([[1.0, 0.0], [0.0, 0.0], [0.0, 2.0]])
    e = getattr(ember, name)(ei, es, ember.tensor(d), beta=2, alpha=3)
    t = getattr(torch, name)(ti, ts, torch.tensor(d), beta=2, alpha=3)
    check(e, t)
    np.testing.assert_array_equal(e._indices().numpy(), t._indices().numpy())
    np.testing.assert_allclose(e._values().numpy(), t._values().numpy())
    with pytest.raises(RuntimeError, match="sparse COO"):
        ember.sspaddmm(ei, es.to_sparse_csr(), ember.tensor(d))


def test_bool_dense_with_sparse_is_not_a_truth_value():
    # a sparse operand once met NumPy's bool conversion as a true scalar: d + s was all True
    m = [[True, False], [False, True]]
    ed, td = ember.tensor([[False, False], [True, False]]), torch.tensor([[False, False],
                                                                         [True, False]])
    for layout in ("sparse_coo", "sparse_csr"):
        es = ember.tensor(m).to_sparse(layout=getattr(ember, layout))
        ts = torch.tensor(m).to_sparse(layout=getattr(torch, layout))
        check(ed + es, td + ts)
    check(ed * ember.tensor(m).to_sparse(), td * torch.tensor(m).to_sparse())
    with pytest.raises(NotImplementedError, match="sparse"):
        bool(ember.eye(2).to_sparse())


def test_sparse_sum_checks_density_bool_and_alpha_as_dense_add():
    h = np.zeros((3, 3, 2))
    h[0, 1] = [1.0, 2.0]
    with pytest.raises(RuntimeError, match="same density"):
        ember.tensor(h).to_sparse(2) + ember.tensor(h).to_sparse(1)
    eb = ember.eye(2, dtype=ember.bool).to_sparse()
    with pytest.raises(ember.errors.DTypeError, match="two bool tensors"):
        eb - eb
    with pytest.raises(ember.errors.DTypeError, match="with a bool tensor"):
        ember.eye(2).to_sparse() - eb
    ei = ember.eye(2, dtype=ember.int64).to_sparse()
    with pytest.raises(ember.errors.DTypeError, match=r"\(int64 and int64\), alpha must not"):
        ember.add(ei, ei, alpha=2.5)
    (e32, t32), (e64, t64) = both(A), both(A)
    e32, t32 = e32.float(), t32.float()
    check(ember.add(e32, e64, alpha=3), torch.add(t32, t64, alpha=3))
    assert ember.add(e32, e64, alpha=3).dtype is ember.float64


def test_floor_division_of_sparse_by_scalar_matches_torch():
    m = [[0, 5], [-7, 0]]
    es, ts = ember.tensor(m).to_sparse(), torch.tensor(m).to_sparse()
    check(ember.div(es, 2, rounding_mode="floor"), torch.div(ts, 2, rounding_mode="floor"))
    check(ember.floor_divide(es, 2), torch.floor_divide(ts, 2))
    check(es // 2, ts // 2)
    check(ember.div(es, 2, rounding_mode="trunc"), torch.div(ts, 2, rounding_mode="trunc"))
    with pytest.raises(RuntimeError, match="scalar or zero-dim dense tensor divisor"):
        es // ember.ones(2, 2)


def test_sparse_times_sparse_of_two_layouts_raises():
    coo, csr = both(A)[0], both(A, "sparse_csr")[0]
    for a, b in ((coo, csr), (csr, coo)):  # (PyTorch raises too; the result's layout is moot)
        with pytest.raises(RuntimeError, match="same shape, layout"):
            a * b
