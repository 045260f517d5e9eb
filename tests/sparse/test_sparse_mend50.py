"""mend50sparse: sparse indexing (select), fill_, clamp_, ``S.data = other`` and the T/H
attributes without AttributeError fallbacks, against PyTorch 2.13."""

import warnings

import numpy as np
import pytest
import torch

import ember
from ember.autograd import gradcheck
from ember.errors import IndexOutOfRange, OpError

warnings.filterwarnings("ignore", message="Sparse")
X = [[0.0, 2.0, 0.0], [3.0, 0.0, 4.0], [5.0, 6.0, 0.0]]
TO = ["to_sparse", "to_sparse_csr", "to_sparse_csc"]


def _same(a, b, what):
    assert a.layout.name == str(b.layout).split(".")[1], what
    assert tuple(a.shape) == tuple(b.shape), what
    if b.layout == torch.strided:
        np.testing.assert_array_equal(a.detach().numpy(), b.detach().numpy())
        return
    np.testing.assert_array_equal(a._indices().numpy(), b._indices().numpy())
    np.testing.assert_array_equal(a._values().detach().numpy(), b._values().detach().numpy())
    assert a.is_coalesced() == b.is_coalesced(), what


@pytest.mark.parametrize("to", TO)
def test_indexing_selects_as_torch(to):
    s, t = getattr(ember.tensor(X), to)(), getattr(torch.tensor(X), to)()
    for key in [0, 1, -1, 2, (1, 2), (0, 0), (slice(None), 1), (..., 0), (1, ...),
                ember.tensor(1)]:
        tkey = torch.tensor(1) if isinstance(key, ember.Tensor) else key
        _same(s[key], t[tkey], (to, key))
    _same(ember.select(s, 1, 2), torch.select(t, 1, 2), "ember.select")


def test_indexing_uncoalesced_and_hybrid_as_torch():
    pairs = [(f([[1, 0, 1], [0, 0, 0]], [1.0, 2.0, 3.0], (2, 2)), [1, (slice(None), 0), (1, 0),
                                                                  (0, 1)])
             for f in (ember.sparse_coo_tensor, torch.sparse_coo_tensor)]
    (s, keys), (t, _) = pairs
    for key in keys:
        _same(s[key], t[key], key)
    s, t = (lib.arange(24.0).reshape(3, 4, 2).to_sparse(2) for lib in (ember, torch))
    for key in [1, (1, 2), (slice(None), slice(None), 1), (1, 2, 1), (..., 1)]:
        _same(s[key], t[key], key)


def test_indexing_a_coo_tensor_works_where_the_index_lives(monkeypatch):
    s, t = ember.tensor(X).to_sparse(), torch.tensor(X).to_sparse()
    _no_host_copy(monkeypatch)
    got = [s[1], s[:, 0], s[2, 1]]
    monkeypatch.undo()
    for a, b in zip(got, [t[1], t[:, 0], t[2, 1]]):
        _same(a, b, "no host copy")


def test_indexing_refuses_what_torch_refuses():
    s = ember.tensor(X).to_sparse()
    with pytest.raises(IndexOutOfRange, match="select: index 3"):
        s[3]
    with pytest.raises(IndexOutOfRange, match="too many indices"):
        s[0, 0, 0]
    for key in [slice(0, 1), [0, 1], ember.tensor([0, 1]), ..., (slice(None), slice(None))]:
        with pytest.raises(NotImplementedError, match="indexing with"):
            s[key]


@pytest.mark.parametrize("to", ["to_sparse", "to_sparse_csr"])
def test_indexing_gradients_float64(to):
    index = [[0, 1, 1, 2, 2], [1, 0, 2, 0, 1]]
    w = [1.0, 2.0, 3.0]

    def ember_grad():
        v = ember.tensor([2.0, 3.0, 4.0, 5.0, 6.0], dtype=ember.float64, requires_grad=True)
        s = getattr(ember.sparse_coo_tensor(index, v, (3, 3)), to)()
        out = s[1].to_dense() * ember.tensor(w, dtype=ember.float64)
        (out.sum() + s[2, 1] * 7).backward()
        return v.grad.numpy()

    # (torch has no backward for select of a sparse tensor: its dense equivalent)
    v = torch.tensor([2.0, 3.0, 4.0, 5.0, 6.0], dtype=torch.float64, requires_grad=True)
    d = torch.zeros(3, 3, dtype=torch.float64).index_put(tuple(torch.tensor(index)), v, True)
    ((d[1] * torch.tensor(w, dtype=torch.float64)).sum() + d[2, 1] * 7).backward()
    np.testing.assert_array_equal(ember_grad(), v.grad.numpy())
    values = ember.tensor([2.0, 3.0, 4.0], dtype=ember.float64, requires_grad=True)
    assert gradcheck(lambda v: ember.sparse_coo_tensor(
        [[0, 1, 1], [1, 0, 2]], v, (2, 3))[1].to_dense() ** 2, (values,))
    assert gradcheck(lambda v: ember.sparse_coo_tensor(
        [[0, 1, 1], [1, 0, 0]], v, (2, 3))[1, 0] ** 2, (values,))


@pytest.mark.parametrize("to", ["to_sparse_csr", "to_sparse_csc", "to_sparse_bsr"])
def test_fill_on_compressed_layouts_as_torch(to):
    args = ((1, 1),) if to == "to_sparse_bsr" else ()
    s, t = (getattr(lib.tensor(X), to)(*args) for lib in (ember, torch))
    assert s.fill_(7) is s
    t.fill_(7)
    np.testing.assert_array_equal(s.to_dense().numpy(), t.to_dense().numpy())
    i, ti = (lib.tensor(X).int().to_sparse_csr() for lib in (ember, torch))
    np.testing.assert_array_equal(i.fill_(2.7).values().numpy(), ti.fill_(2.7).values().numpy())
    leaf = ember.tensor(X).to_sparse_csr().requires_grad_()
    with pytest.raises(RuntimeError, match="leaf"):
        leaf.fill_(1)


def test_fill_and_clamp_refused_where_torch_refuses():
    s = ember.tensor(X).to_sparse()
    with pytest.raises(NotImplementedError, match="fill_: .*compressed layouts only"):
        s.fill_(1)
    for x in (s, ember.tensor(X).to_sparse_csr()):
        for call in (x.clamp_, x.clamp, lambda *a, x=x: ember.clamp(x, *a)):
            with pytest.raises(NotImplementedError, match="clamp"):
                call(0, 3)


@pytest.mark.parametrize("to", ["to_sparse", "to_sparse_csr"])
def test_data_assignment_as_torch(to):
    s, t = (getattr(lib.tensor(X), to)().requires_grad_() for lib in (ember, torch))
    o, to_ = (getattr(lib.tensor([[1.0, 0.0, 0.0, 2.0]]), to)() for lib in (ember, torch))
    s.data, t.data = o, to_
    assert s.requires_grad and s.is_leaf and s.shape == (1, 4)
    np.testing.assert_array_equal(s.to_dense().detach().numpy(), o.to_dense().numpy())
    s.to_dense().sum().backward()
    np.testing.assert_array_equal(s.grad.to_dense().numpy(), [[1.0, 0.0, 0.0, 1.0]])
    if to == "to_sparse":  # (torch's CSR set_data of another nnz reads the old pattern)
        np.testing.assert_array_equal(s.to_dense().detach().numpy(),
                                      t.to_dense().detach().numpy())
        t.to_dense().sum().backward()
        np.testing.assert_array_equal(s.grad.to_dense().numpy(), t.grad.to_dense().numpy())
    d = getattr(ember.tensor(X), to)()
    d.data = getattr(ember.tensor(X, dtype=ember.float64), to)()
    assert d.dtype == ember.float64  # (torch's set_data takes another dtype too)
    for other in (ember.tensor(X), ember.tensor(X).to_sparse_csc()):
        with pytest.raises(TypeError, match="data: .*set_data"):
            s.data = other


def test_t_and_h_have_no_attribute_error_fallback(monkeypatch):
    s = ember.tensor(X).to_sparse()
    assert "T" not in vars(ember.sparse.SparseTensor) and "H" not in vars(
        ember.sparse.SparseTensor)

    def bug(*args):
        raise AttributeError("internal bug")

    monkeypatch.setattr(ember.sparse, "permute", bug)
    with pytest.raises(AttributeError, match="internal bug"):  # (not "T: not supported")
        _ = s.T
    monkeypatch.setattr(ember.sparse, "_transpose", bug)
    with pytest.raises(OpError, match="mT: its getter raised"):
        _ = s.mT
    with pytest.raises(OpError, match="mH: its getter raised"):  # (H reads mH)
        _ = s.H
    assert not hasattr(s.to_sparse_csr(), "T") and not hasattr(ember.ones(2).to_sparse(), "H")


def _no_host_copy(monkeypatch):
    def refuse(self, *args, **kwargs):
        raise AssertionError("Tensor.numpy called: a host copy on a GPU")

    monkeypatch.setattr(ember.Tensor, "numpy", refuse)


@pytest.mark.parametrize("case", ["dups", "hybrid", "no_sparse_dim", "empty", "int"])
def test_coalesce_and_sparse_add_work_where_the_index_lives(case, monkeypatch):
    index, values, size = {
        "dups": ([[1, 0, 1, 0, 2], [2, 0, 2, 1, 0]], [1.0, 2.0, 3.0, 4.0, 5.0], (3, 3)),
        "hybrid": ([[2, 0, 2]], [[1.0, 2.0], [3.0, 4.0], [5.0, 6.0]], (3, 2)),
        "no_sparse_dim": (np.zeros((0, 3), dtype=np.int64), [[1.0], [2.0], [3.0]], (1,)),
        "empty": (np.zeros((2, 0), dtype=np.int64), [], (2, 2)),
        "int": ([[1, 1, 0]], [5, 7, 1], (2,)),
    }[case]
    s, t = (lib.sparse_coo_tensor(lib.tensor(np.asarray(index)), lib.tensor(values), size)
            for lib in (ember, torch))
    c2, tc2 = s.coalesce(), t.coalesce()  # (made here: the host copies are the test's)
    _no_host_copy(monkeypatch)
    c, tc = s.coalesce(), t.coalesce()
    total, ttotal = c + c2 * 2, tc + tc2 * 2
    c2.add_(c)
    tc2.add_(tc)
    monkeypatch.undo()
    for a, b in ((c, tc), (total, ttotal), (c2, tc2)):
        _same(a, b, case)


def test_coalesce_gradients_float64():
    index = [[1, 0, 1, 0], [2, 0, 2, 1]]
    v, tv = (lib.tensor([1.0, 2.0, 3.0, 4.0], dtype=lib.float64, requires_grad=True)
             for lib in (ember, torch))
    w = [[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]]
    for lib, x in ((ember, v), (torch, tv)):
        s = lib.sparse_coo_tensor(index, x, (2, 3)).coalesce()
        (s.to_dense() * lib.tensor(w, dtype=lib.float64)).sum().backward()
    np.testing.assert_array_equal(v.grad.numpy(), tv.grad.numpy())
    assert gradcheck(lambda x: ember.sparse_coo_tensor(index, x, (2, 3)).coalesce().values()
                     ** 2, (v.detach().requires_grad_(),))


@pytest.mark.parametrize("other", [[[0, 1, 1], [1, 0, 2]], [[1], [2]], [[0, 1, 1, 2], [1, 0, 2, 2]],
                                   [[0, 2], [0, 2]], np.zeros((2, 0), dtype=np.int64)],
                         ids=["same", "subset", "superset", "disjoint", "empty"])
def test_sum_of_nested_patterns_as_torch_with_float64_gradients(other):
    index = [[0, 1, 1], [1, 0, 2]]
    made = []
    for lib in (ember, torch):
        va = lib.tensor([1.0, 2.0, 3.0], dtype=lib.float64, requires_grad=True)
        vb = lib.tensor(np.arange(1.0, np.shape(other)[1] + 1) * 10, dtype=lib.float64,
                        requires_grad=True)
        a = lib.sparse_coo_tensor(index, va, (3, 3)).coalesce()
        b = lib.sparse_coo_tensor(lib.tensor(np.asarray(other)), vb, (3, 3)).coalesce()
        total = lib.add(a, b, alpha=3)
        (total.to_dense() * lib.arange(9.0, dtype=lib.float64).reshape(3, 3)).sum().backward()
        made.append((total, va.grad, vb.grad))
    (s, ga, gb), (t, tga, tgb) = made
    _same(s, t, other)
    np.testing.assert_array_equal(ga.numpy(), tga.numpy())
    np.testing.assert_array_equal(gb.numpy(), tgb.numpy())
    vb = ember.tensor(np.arange(1.0, np.shape(other)[1] + 1), dtype=ember.float64,
                      requires_grad=True)
    assert gradcheck(lambda x, y: (ember.sparse_coo_tensor(index, x, (3, 3)).coalesce() +
                                   ember.sparse_coo_tensor(other, y, (3, 3)).coalesce() * 2
                                   ).values(), (ember.tensor([1.0, 2.0, 3.0], dtype=ember.float64,
                                                             requires_grad=True), vb))
    acc = ember.sparse_coo_tensor(index, [1.0, 2.0, 3.0], (3, 3)).coalesce()
    tacc = torch.sparse_coo_tensor(index, [1.0, 2.0, 3.0], (3, 3)).coalesce()
    acc.add_(ember.sparse_coo_tensor(other, [5.0] * np.shape(other)[1], (3, 3)).coalesce())
    tacc.add_(torch.sparse_coo_tensor(other, [5.0] * np.shape(other)[1], (3, 3)).coalesce())
    _same(acc, tacc, other)
