"""Sparse tensors against PyTorch: construction, layouts, conversion, ops and gradients."""

import warnings

import numpy as np
import pytest
import torch

import ember
from ember.autograd import gradcheck, gradgradcheck
from ember.errors import IndexOutOfRange

warnings.filterwarnings("ignore", message="Sparse")
INDEX = [[0, 1, 1, 0], [2, 0, 2, 2]]  # (0, 2) twice: uncoalesced
VALUES = [3.0, 4.0, 5.0, 6.0]


def pair(requires_grad=False, dtype="float32"):
    e = ember.sparse_coo_tensor(INDEX, ember.tensor(VALUES, dtype=getattr(ember, dtype)),
                                (2, 3), requires_grad=requires_grad)
    t = torch.sparse_coo_tensor(INDEX, torch.tensor(VALUES, dtype=getattr(torch, dtype)),
                                (2, 3), requires_grad=requires_grad)
    return e, t


def close(e, t, atol=1e-6):
    if isinstance(e, ember.sparse.SparseTensor):
        assert e.layout.name == str(t.layout).removeprefix("torch.")
        e, t = e.to_dense(), t.to_dense()
    np.testing.assert_allclose(e.detach().numpy(), t.detach().numpy(), atol=atol)


def test_layouts_and_accessors():
    e, t = pair()
    assert repr(e) == repr(t).replace("torch.", "ember.")
    assert (e.is_sparse, e.is_sparse_csr, e.is_coalesced()) == (True, False, False)
    assert (e.sparse_dim(), e.dense_dim(), e._nnz()) == (2, 0, 4)
    assert ember.zeros(1).layout is ember.strided and not ember.zeros(1).is_sparse
    with pytest.raises(RuntimeError, match="uncoalesced"):
        e.indices()
    c, tc = e.coalesce(), t.coalesce()
    assert c.indices().tolist() == tc.indices().tolist()
    assert c.values().tolist() == tc.values().tolist()
    for layout in ("to_sparse_csr", "to_sparse_csc"):
        ec, tcc = getattr(e, layout)(), getattr(t.coalesce(), layout)()
        assert repr(ec) == repr(tcc).replace("torch.", "ember.")
        assert ec.is_sparse_csr == tcc.is_sparse_csr
        close(ec.to_sparse_coo(), tcc.to_sparse_coo())


def test_construction_and_conversion():
    csr = ember.sparse_csr_tensor([0, 2, 3], [0, 2, 1], [1.0, 2.0, 3.0], (2, 3))
    tcsr = torch.sparse_csr_tensor([0, 2, 3], [0, 2, 1], [1.0, 2.0, 3.0], (2, 3))
    close(csr, tcsr)
    assert csr.crow_indices().tolist() == [0, 2, 3] and csr.col_indices().tolist() == [0, 2, 1]
    csc = ember.sparse_csc_tensor([0, 1, 1, 2], [1, 0], [4.0, 5.0])
    close(csc, torch.sparse_csc_tensor([0, 1, 1, 2], [1, 0], [4.0, 5.0]))
    x = np.array([[0.0, 1.0, 0.0], [2.0, 0.0, 0.0]])
    for layout in (ember.sparse_coo, ember.sparse_csr, ember.sparse_csc):
        tl = getattr(torch, layout.name)
        close(ember.tensor(x).to_sparse(layout=layout), torch.tensor(x).to_sparse(layout=tl))
    hybrid = ember.tensor([[0.0, 0.0], [1.0, 2.0], [0.0, 0.0]]).to_sparse(1)
    thybrid = torch.tensor([[0.0, 0.0], [1.0, 2.0], [0.0, 0.0]]).to_sparse(1)
    assert repr(hybrid) == repr(thybrid).replace("torch.", "ember.")
    assert ember.sparse_coo_tensor([[0, 3]], [1.0, 2.0]).shape == (4,)


def test_errors_name_the_op_and_hint():
    with pytest.raises(IndexOutOfRange, match="out of bounds for dimension 0 of size 3"):
        ember.sparse_coo_tensor([[0, 5]], [1.0, 2.0], (3,))
    e, _ = pair()
    with pytest.raises(NotImplementedError, match=r"exp: .*sparse_coo.*to_dense"):
        e.exp()
    with pytest.raises(ValueError, match="layout"):
        ember.sparse_compressed_tensor([0, 1], [0], [1.0], layout=ember.sparse_coo)


def test_ops_match_torch():
    e, t = pair()
    d = np.random.default_rng(0).standard_normal((3, 2)).astype(np.float32)
    ed, td = ember.tensor(d), torch.tensor(d)
    for s, ts in ((e, t), (e.to_sparse_csr(), t.coalesce().to_sparse_csr())):
        close(ember.sparse.mm(s, ed), torch.sparse.mm(ts, td), 1e-5)
    close(e @ ed, t @ td, 1e-5)
    close(ember.mm(e, ed), torch.mm(t, td), 1e-5)
    close(ember.matmul(e, ed[:, 0]), torch.matmul(t, td[:, 0]), 1e-5)
    close(ember.sparse.addmm(ember.ones(2, 2), e, ed, beta=0.5, alpha=2.0),
          torch.sparse.addmm(torch.ones(2, 2), t, td, beta=0.5, alpha=2.0), 1e-5)
    close(e * 2, t * 2)
    close(-e, -t)
    close((-e).abs(), (-t).abs())
    close(e + e, t + t)
    assert (e.coalesce() + e.coalesce()).is_coalesced()
    close(e.t(), t.t())
    close(ember.ones(2, 3).sparse_mask(e), torch.ones(2, 3).sparse_mask(t))
    assert ember.sparse.sum(e).item() == torch.sparse.sum(t).item()
    for dim in (0, 1, (0, 1)):
        close(ember.sparse.sum(e, dim), torch.sparse.sum(t, dim))
    c, tc = e.coalesce(), t.coalesce()
    for dim in (0, 1):
        close(ember.sparse.softmax(c, dim), torch.sparse.softmax(tc, dim))
        close(ember.sparse.log_softmax(c, dim), torch.sparse.log_softmax(tc, dim))


def test_gradients_match_torch():
    e, t = pair(requires_grad=True)
    d = np.random.default_rng(1).standard_normal((3, 2)).astype(np.float32)
    ed, td = ember.tensor(d, requires_grad=True), torch.tensor(d, requires_grad=True)
    (ember.sparse.mm(e, ed) ** 2).sum().backward()
    (torch.sparse.mm(t, td) ** 2).sum().backward()
    close(e.grad, t.grad, 1e-5)
    close(ed.grad, td.grad, 1e-5)
    assert e.grad._nnz() == t.grad._nnz() == 3
    e.grad, t.grad = None, None
    (e.to_dense() * ember.arange(6.0).reshape(2, 3)).sum().backward()
    (t.to_dense() * torch.arange(6.0).reshape(2, 3)).sum().backward()
    close(e.grad, t.grad)
    v = ember.tensor(VALUES, requires_grad=True)
    tv = torch.tensor(VALUES, requires_grad=True)
    ember.sparse_coo_tensor(INDEX, v, (2, 3)).to_dense().pow(2).sum().backward()
    torch.sparse_coo_tensor(INDEX, tv, (2, 3)).to_dense().pow(2).sum().backward()
    close(v.grad, tv.grad)


def test_gradcheck_float64():
    rows = ember.tensor(INDEX)
    values = ember.tensor(VALUES, dtype=ember.float64, requires_grad=True)
    dense = ember.randn(3, 2, dtype=ember.float64, requires_grad=True)

    def product(v, d):
        return ember.sparse.mm(ember.sparse_coo_tensor(rows, v, (2, 3)), d)

    def softmax(v):
        s = ember.sparse_coo_tensor(rows, v, (2, 3)).coalesce()
        return ember.sparse.log_softmax(s, 1)._values()

    assert gradcheck(product, (values, dense))
    assert gradgradcheck(product, (values, dense))
    assert gradcheck(softmax, (values,))
    assert gradcheck(lambda v: ember.sparse_coo_tensor(rows, v, (2, 3)).to_dense(), (values,))


def test_ember_save_round_trips_every_layout_and_flat_files_refuse(tmp_path):
    rows = ember.tensor([[0, 1, 1], [2, 0, 2]])
    saved = {
        "uncoalesced": ember.sparse_coo_tensor(rows, ember.tensor([3.0, 4.0, 5.0]), (2, 3)),
        "coalesced": ember.eye(3).to_sparse(),
        "hybrid": ember.sparse_coo_tensor(ember.tensor([[0, 2]]), ember.ones(2, 2), (3, 2)),
        "csr": ember.eye(3).to_sparse_csr(), "csc": ember.eye(3).to_sparse_csc(),
        "leaf": ember.sparse_coo_tensor(rows, ember.ones(3), (2, 3), requires_grad=True),
    }
    ember.save(saved, tmp_path / "sparse.ember")
    loaded = ember.load(tmp_path / "sparse.ember")
    for name, s in saved.items():
        back = loaded[name]
        assert back.layout is s.layout and back.shape == s.shape, name
        assert back.requires_grad == s.requires_grad, name
        assert ember.equal(back.to_dense(), s.detach().to_dense()), name
        if s.layout is ember.sparse_coo:
            assert back.is_coalesced() == s.is_coalesced() and back._nnz() == s._nnz(), name
    with pytest.raises(ember.errors.CheckpointError, match=r"sparse tensor.*ember.save"):
        ember.io.save_file({"w": saved["csr"]}, tmp_path / "w.safetensors")


def test_an_optimizer_holding_a_sparse_momentum_buffer_checkpoints(tmp_path):
    emb = ember.nn.Embedding(10, 3, sparse=True)
    opt = ember.optim.SGD(emb.parameters(), lr=0.1, momentum=0.9)
    emb(ember.tensor([1, 2, 2])).sum().backward()
    opt.step()
    ember.save({"model": emb.state_dict(), "optimizer": opt.state_dict()}, tmp_path / "c.ember")
    state = ember.load(tmp_path / "c.ember")
    resumed = ember.nn.Embedding(10, 3, sparse=True)
    resumed.load_state_dict(state["model"])
    opt2 = ember.optim.SGD(resumed.parameters(), lr=0.1, momentum=0.9)
    opt2.load_state_dict(state["optimizer"])
    for model, optimizer in ((emb, opt), (resumed, opt2)):
        optimizer.zero_grad()
        model(ember.tensor([2, 5])).sum().backward()
        optimizer.step()
    assert ember.equal(resumed.weight, emb.weight)


@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_spmm_kernels_match_torch(numba_or_numpy, dtype):
    rng = np.random.default_rng(2)
    index = rng.integers(0, 40, (2, 300))  # unsorted, with repeats and empty rows
    values = rng.standard_normal(300).astype(dtype)
    dense = rng.standard_normal((40, 5)).astype(dtype)
    e = ember.sparse_coo_tensor(index, values, (40, 40))
    t = torch.sparse_coo_tensor(torch.tensor(index), torch.tensor(values), (40, 40))
    for s, ts in ((e, t), (e.coalesce(), t.coalesce())):
        close(ember.sparse.mm(s, ember.tensor(dense)), torch.sparse.mm(ts, torch.tensor(dense)),
              1e-4)


def test_sampled_addmm_and_spdiags_match_torch():
    rng = np.random.default_rng(3)
    a, b = rng.standard_normal((3, 4)), rng.standard_normal((4, 3))
    pattern = np.array([[1.0, 0.0, 2.0], [0.0, 0.0, 3.0], [4.0, 0.0, 0.0]])
    e_in = ember.tensor(pattern).to_sparse_csr()
    t_in = torch.tensor(pattern).to_sparse_csr()
    ea, eb = ember.tensor(a, requires_grad=True), ember.tensor(b, requires_grad=True)
    ta, tb = torch.tensor(a, requires_grad=True), torch.tensor(b, requires_grad=True)
    e_out = ember.sparse.sampled_addmm(e_in, ea, eb, beta=0.5, alpha=2.0)
    t_out = torch.sparse.sampled_addmm(t_in, ta, tb, beta=0.5, alpha=2.0)
    close(e_out, t_out)
    e_out.values().pow(2).sum().backward()
    t_out.values().pow(2).sum().backward()
    close(ea.grad, ta.grad)
    close(eb.grad, tb.grad)
    assert gradcheck(lambda x, y: ember.sparse.sampled_addmm(e_in, x, y).values(),
                     (ea.detach().requires_grad_(), eb.detach().requires_grad_()))
    with pytest.raises(RuntimeError, match="sparse_csr"):
        ember.sparse.sampled_addmm(e_in.to_sparse_coo(), ea, eb)
    diagonals = [[1.0, 2.0, 3.0, 7.0], [4.0, 5.0, 6.0, 8.0]]
    # (torch 2.13 puts a wide matrix's upper diagonals past its last row: (2, 4) with offset 1
    # gets index (2, 3); Ember stops at the last row, as SciPy)
    for offsets, shape in (([0, -1], (3, 3)), ([0, 1], (3, 4)), ([2, -3], (4, 4))):
        e = ember.sparse.spdiags(ember.tensor(diagonals), ember.tensor(offsets), shape)
        t = torch.sparse.spdiags(torch.tensor(diagonals), torch.tensor(offsets), shape)
        assert e._indices().tolist() == t._indices().tolist()
        close(e, t)
    assert ember.sparse.spdiags(ember.tensor(diagonals[:1]), ember.tensor([1]), (2, 4))._indices(
    ).tolist() == [[0, 1], [1, 2]]
    csr = ember.sparse.spdiags(ember.tensor(diagonals), ember.tensor([0, 1]), (3, 4),
                               layout=ember.sparse_csr)
    close(csr, torch.sparse.spdiags(torch.tensor(diagonals), torch.tensor([0, 1]), (3, 4),
                                    layout=torch.sparse_csr))


def test_spmm_jvp_matches_finite_differences():
    rows = ember.tensor(INDEX)
    values = ember.tensor(VALUES, dtype=ember.float64)
    dense = ember.randn(3, 2, dtype=ember.float64)
    dv, dd = ember.randn(4, dtype=ember.float64), ember.randn(3, 2, dtype=ember.float64)

    def product(v, d):
        return ember.sparse.mm(ember.sparse_coo_tensor(rows, v, (2, 3)), d)

    _, tangent = ember.func.jvp(product, (values, dense), (dv, dd))
    eps = 1e-6
    fd = (product(values + eps * dv, dense + eps * dd)
          - product(values - eps * dv, dense - eps * dd)) / (2 * eps)
    np.testing.assert_allclose(tangent.numpy(), fd.numpy(), atol=1e-7)


def test_vmap_of_sparse_products():
    s = ember.sparse_coo_tensor(INDEX, ember.tensor(VALUES, dtype=ember.float64), (2, 3))
    dense = ember.randn(4, 3, 2, dtype=ember.float64)
    out = ember.vmap(lambda d: ember.sparse.mm(s, d))(dense)
    want = ember.stack([ember.sparse.mm(s, dense[i]) for i in range(4)])
    np.testing.assert_allclose(out.numpy(), want.numpy())
    values = ember.randn(5, 4, dtype=ember.float64)
    out = ember.vmap(lambda v: ember.sparse.mm(ember.sparse_coo_tensor(INDEX, v, (2, 3)),
                                               dense[0]))(values)
    want = ember.stack([ember.sparse_coo_tensor(INDEX, v, (2, 3)).to_dense() @ dense[0]
                        for v in values])
    np.testing.assert_allclose(out.numpy(), want.numpy(), atol=1e-12)


@pytest.mark.parametrize("layout", ["sparse_coo", "sparse_csr", "sparse_csc", "sparse_bsr",
                                    "sparse_bsc"])
def test_repr_of_empty_sparse_tensors_matches_torch(layout):
    for dtype in ("float32", "float64", "int32"):  # an empty part names its size, as torch's
        kw = {"blocksize": (1, 2)} if layout in ("sparse_bsr", "sparse_bsc") else {}
        e = ember.zeros(2, 2, dtype=getattr(ember, dtype)).to_sparse(
            layout=getattr(ember, layout), **kw)
        t = torch.zeros(2, 2, dtype=getattr(torch, dtype)).to_sparse(
            layout=getattr(torch, layout), **kw)
        assert repr(e) == repr(t).replace("torch.", "ember.")
