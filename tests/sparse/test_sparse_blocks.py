"""Block layouts (BSR, BSC) against PyTorch: construction, accessors, conversions, repr,
products and their gradients."""

import warnings

import numpy as np
import pytest
import torch

import ember
from ember.autograd import gradcheck, gradgradcheck

warnings.filterwarnings("ignore", message="Sparse")
X = [[1.0, 2.0, 0.0, 0.0], [3.0, 4.0, 0.0, 0.0], [0.0, 0.0, 0.0, 5.0], [0.0, 0.0, 6.0, 0.0]]
SOURCES = ["dense", "sparse_coo", "sparse_csr", "sparse_csc", "sparse_bsr", "sparse_bsc"]


def make(lib, source, dtype="float64"):
    x = lib.tensor(X, dtype=getattr(lib, dtype))
    if source == "dense":
        return x
    kw = {"blocksize": (2, 1)} if source in ("sparse_bsr", "sparse_bsc") else {}
    return x.to_sparse(layout=getattr(lib, source), **kw)


def same(e, t):
    assert e.layout.name == str(t.layout).removeprefix("torch."), (e.layout, t.layout)
    if e.layout is not ember.strided and e.layout is not ember.sparse_coo:
        parts = ("crow_indices", "col_indices") if e.layout.name in ("sparse_csr", "sparse_bsr") \
            else ("ccol_indices", "row_indices")
        for part in parts:
            np.testing.assert_array_equal(getattr(e, part)().numpy(), getattr(t, part)().numpy())
        np.testing.assert_allclose(e.values().detach().numpy(), t.values().detach().numpy())
    dense = (lambda x: x) if e.layout is ember.strided else (lambda x: x.to_dense())
    np.testing.assert_allclose(dense(e).detach().numpy(), dense(t).detach().numpy())


@pytest.mark.parametrize("target", ["sparse_bsr", "sparse_bsc"])
@pytest.mark.parametrize("source", SOURCES)
def test_conversions_to_blocks_match_torch(source, target):
    if source == target:  # PyTorch refuses to change the blocksize
        with pytest.raises(RuntimeError, match=r"blocksize changed from \(2, 1\) to \(2, 2\)"):
            make(ember, source).to_sparse(layout=getattr(ember, target), blocksize=(2, 2))
        return
    e = make(ember, source).to_sparse(layout=getattr(ember, target), blocksize=(2, 2))
    if source in ("sparse_bsr", "sparse_bsc"):
        source = "dense"
    t = make(torch, source).to_sparse(layout=getattr(torch, target), blocksize=(2, 2))
    same(e, t)
    assert repr(e) == repr(t).replace("torch.", "ember.")


@pytest.mark.parametrize("source", ["sparse_bsr", "sparse_bsc"])
def test_conversions_from_blocks(source):
    e, t = make(ember, source), make(torch, source)
    same(e.to_dense(), t.to_dense())
    same(e.to_sparse_bsr((2, 1)), t.to_sparse_bsr((2, 1)))
    coo = e.to_sparse()  # the blocks' elements, zeros included, in block order
    assert not coo.is_coalesced() and coo._nnz() == e._nnz() * 2
    if source == "sparse_bsr":  # (PyTorch 2.13's BSC to COO fails)
        same(coo, t.to_sparse())
        np.testing.assert_array_equal(coo._indices().numpy(), t.to_sparse()._indices().numpy())
        np.testing.assert_array_equal(coo._values().numpy(), t.to_sparse()._values().numpy())
    one_row = ember.tensor(X).to_sparse_bsr((1, 2)).to_sparse()
    assert one_row.is_coalesced() and \
        torch.tensor(X).to_sparse_bsr((1, 2)).to_sparse().is_coalesced()
    for layout in ("sparse_csr", "sparse_csc"):  # (PyTorch 2.13 refuses these)
        converted = e.to_sparse(layout=getattr(ember, layout))
        assert converted.layout is getattr(ember, layout) and converted._nnz() == coo._nnz()
        np.testing.assert_array_equal(converted.to_dense().numpy(), np.array(X))
    same(e.t(), t.t())
    same(e * 2, t * 2)
    same(e + e, t + t)


def test_constructors_accessors_and_errors():
    crow, col, values = [0, 1, 2], [0, 1], np.arange(12.0).reshape(2, 2, 3)
    e = ember.sparse_bsr_tensor(crow, col, ember.tensor(values))
    t = torch.sparse_bsr_tensor(crow, col, torch.tensor(values))
    same(e, t)
    assert repr(e) == repr(t).replace("torch.", "ember.")
    assert (e.shape, e.sparse_dim(), e.dense_dim(), e._nnz()) == ((4, 6), 2, 0, 2)
    assert not e.is_sparse and not e.is_sparse_csr
    e = ember.sparse_bsc_tensor(crow, col, ember.tensor(values), (4, 6))
    same(e, torch.sparse_bsc_tensor(crow, col, torch.tensor(values), (4, 6)))
    same(ember.sparse_compressed_tensor(crow, col, ember.tensor(values), layout=ember.sparse_bsr),
         torch.sparse_compressed_tensor(crow, col, torch.tensor(values),
                                        layout=torch.sparse_bsr))
    with pytest.raises(RuntimeError, match="ccol_indices"):
        ember.tensor(X).to_sparse_bsr((2, 2)).ccol_indices()
    with pytest.raises(RuntimeError, match=r"divisible by given blocksize \(3, 3\)"):
        ember.tensor(X).to_sparse_bsr(3)
    with pytest.raises(RuntimeError, match="without a blocksize"):
        ember.tensor(X).to_sparse(layout=ember.sparse_bsr)
    with pytest.raises(RuntimeError, match="blocksize is for the block layouts"):
        ember.tensor(X).to_sparse(layout=ember.sparse_csr, blocksize=(2, 2))
    with pytest.raises(ember.errors.ShapeError, match=r"values \(nnz, R, C\)"):
        ember.sparse_bsr_tensor(crow, col, [1.0, 2.0])
    with pytest.raises(RuntimeError, match="0 <= col_indices < ncols"):
        ember.sparse_bsr_tensor(crow, [0, 2], ember.tensor(values), (4, 6))


@pytest.mark.parametrize("source", ["sparse_bsr", "sparse_bsc"])
def test_block_products_and_gradients(source):
    s = make(ember, source)
    d = ember.tensor(np.random.default_rng(0).standard_normal((4, 3)), requires_grad=True)
    vals = s.values().detach().requires_grad_(True)
    maker = ember.sparse_bsr_tensor if source == "sparse_bsr" else ember.sparse_bsc_tensor
    rebuilt = maker(*s._index, vals, s.shape)
    out = rebuilt @ d
    # PyTorch 2.13 has no CPU product for BSC or non-square blocks, nor any BSR backward on
    # the CPU: compare with its dense product
    td = torch.tensor(d.detach().numpy(), requires_grad=True)
    tdense = torch.tensor(X, dtype=torch.float64, requires_grad=True)
    tout = tdense @ td
    np.testing.assert_allclose(out.detach().numpy(), tout.detach().numpy())
    out.pow(2).sum().backward()
    tout.pow(2).sum().backward()
    np.testing.assert_allclose(d.grad.numpy(), td.grad.numpy())
    mask = maker(*s._index, ember.ones_like(vals), s.shape).to_dense().numpy()
    np.testing.assert_allclose(maker(*s._index, vals.grad, s.shape).to_dense().numpy(),
                               tdense.grad.numpy() * mask)  # the gradient at each block
    np.testing.assert_allclose((s @ ember.ones(4, dtype=ember.float64)).numpy(),
                               np.array(X).sum(1))
    assert gradcheck(lambda v, x: maker(*s._index, v, s.shape) @ x,
                     (vals.detach().requires_grad_(), d.detach().requires_grad_()))
    assert gradgradcheck(lambda v, x: maker(*s._index, v, s.shape) @ x,
                         (vals.detach().requires_grad_(), d.detach().requires_grad_()))
    assert gradcheck(lambda v: maker(*s._index, v, s.shape).to_dense(),
                     (vals.detach().requires_grad_(),))


def test_square_block_product_matches_torch():
    e, t = make(ember, "dense").to_sparse_bsr(2), make(torch, "dense").to_sparse_bsr(2)
    d = np.random.default_rng(1).standard_normal((4, 2))
    np.testing.assert_allclose((e @ ember.tensor(d)).numpy(), (t @ torch.tensor(d)).numpy())


def test_block_tensors_save_and_load(tmp_path):
    for layout in ("sparse_bsr", "sparse_bsc"):
        s = make(ember, layout)
        ember.save({"s": s}, tmp_path / "s.pt")
        back = ember.load(tmp_path / "s.pt")["s"]
        assert back.layout is s.layout and back.values().shape == s.values().shape
        np.testing.assert_array_equal(back.to_dense().numpy(), s.to_dense().numpy())


@pytest.mark.parametrize("layout,blocksize", [("sparse_bsr", (4, 4)), ("sparse_bsc", (4, 4)),
                                              ("sparse_bsr", (2, 2)), ("sparse_bsc", (2, 2)),
                                              ("sparse_csc", None), ("sparse_bsc", (2, 1))])
def test_one_block_to_coo_is_coalesced_as_torch(layout, blocksize):
    x = np.zeros((4, 4))
    x[0, 0], x[1, 1] = 1.0, 2.0  # one 2x2 block; two 2x1 blocks; two CSC entries
    kw = {"blocksize": blocksize} if blocksize else {}
    one = np.eye(4) * (np.arange(4) == 0)  # one entry, in one block of any blocksize
    for m in (x, one, np.ones((4, 4))):
        e = ember.tensor(m).to_sparse(layout=getattr(ember, layout), **kw).to_sparse()
        t = torch.tensor(m).to_sparse(layout=getattr(torch, layout), **kw).to_sparse()
        assert e.is_coalesced() == t.is_coalesced()


def test_batched_compressed_conversions_raise_clearly():
    for layout in ("sparse_csr", "sparse_csc", "sparse_bsr", "sparse_bsc"):
        kw = {"blocksize": (1, 1)} if layout in ("sparse_bsr", "sparse_bsc") else {}
        with pytest.raises(RuntimeError, match="no batched or hybrid compressed tensors"):
            ember.ones(2, 2, 2).to_sparse(layout=getattr(ember, layout), **kw)
