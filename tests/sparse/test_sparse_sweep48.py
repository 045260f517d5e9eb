"""Fixes from the third differential sweep against torch.sparse (/work/fuzz/sparse48):
zero-preserving one-tensor ops (``sqrt``, ``sin``, ``floor``, ``isnan``, …) on every layout,
as methods and as ``ember.<op>(s)``, with PyTorch's coalescing and dtypes, and gradients."""

import warnings

import numpy as np
import pytest
import torch

import ember

warnings.filterwarnings("ignore", message="Sparse")

INDEX = [[0, 2, 1, 0, 3], [1, 0, 2, 1, 0]]  # entry (0, 1) twice: 0.5 + 1.5
VALUES = [0.5, -2.0, 3.0, 1.5, 0.25]
UNARY = ["sqrt", "sin", "tan", "tanh", "sinh", "asin", "asinh", "atan", "atanh", "expm1",
         "log1p", "sign", "sgn", "floor", "ceil", "round", "trunc", "frac", "erf", "erfinv",
         "relu", "square", "signbit", "isnan", "isinf", "isposinf", "isneginf", "nan_to_num",
         "deg2rad", "rad2deg", "neg", "abs", "positive", "conj_physical"]


def _sparse(lib, dtype, layout, coalesce):
    s = lib.sparse_coo_tensor(lib.tensor(INDEX), lib.tensor(VALUES).to(getattr(lib, dtype)),
                              (4, 3))
    s = s.coalesce() if coalesce else s
    return {"coo": s, "csr": s.to_sparse_csr(), "csc": s.to_sparse_csc(),
            "bsr": s.to_sparse_bsr((2, 1))}[layout]


def _summary(s):
    return (s.layout.name if hasattr(s.layout, "name") else str(s.layout).split(".")[-1],
            str(s.dtype).split(".")[-1], s._nnz(),
            s.is_coalesced() if s.layout in (ember.sparse_coo, torch.sparse_coo) else None)


@pytest.mark.parametrize("name", UNARY)
@pytest.mark.parametrize("dtype", ["float64", "int64"])
@pytest.mark.parametrize("layout,coalesce", [("coo", False), ("coo", True), ("csr", True),
                                             ("csc", True), ("bsr", True)])
def test_one_tensor_ops_as_torch(name, dtype, layout, coalesce):
    try:
        want = getattr(torch, name)(_sparse(torch, dtype, layout, coalesce))
    except (RuntimeError, NotImplementedError):  # (square of a compressed one, frac of an int)
        _check_where_torch_refuses(name, dtype, layout, coalesce)
        return
    forms = [lambda s: getattr(s, name)()]
    if name not in ("deg2rad", "rad2deg"):  # (ember.deg2rad takes only dense tensors)
        forms.append(lambda s: getattr(ember, name)(s))
    for form in forms:
        got = form(_sparse(ember, dtype, layout, coalesce))
        assert _summary(got) == _summary(want)
        np.testing.assert_allclose(got.to_dense().numpy(), want.to_dense().numpy(),
                                   rtol=1e-6, equal_nan=True)


def _check_where_torch_refuses(name, dtype, layout, coalesce):
    """Where torch.sparse refuses, Ember computes f of the dense form (f(0) = 0) on the same
    layout, or refuses too where the dense op does (frac of an integer tensor)."""
    s = _sparse(ember, dtype, layout, coalesce)
    try:
        dense = getattr(torch, name)(_sparse(torch, dtype, layout, coalesce).to_dense())
    except (RuntimeError, TypeError):
        with pytest.raises(ember.errors.DTypeError, match=name):
            getattr(s, name)()
        return
    got = getattr(s, name)()
    assert got.layout is s.layout and str(got.dtype) == str(dense.dtype).replace("torch", "ember")
    np.testing.assert_allclose(got.to_dense().numpy(), dense.numpy(), rtol=1e-12)


def test_one_tensor_op_of_an_uncoalesced_element_is_of_its_sum():
    s = ember.sparse_coo_tensor([[0, 0]], [2.0, 2.0], (2,))  # element 0 is 4
    assert s.sqrt().to_dense().tolist() == [2.0, 0.0]
    assert ember.floor(ember.sparse_coo_tensor([[0, 0]], [1, 2], (2,))).to_dense().tolist() \
        == [3, 0]  # (ember.floor of an integer tensor meets the sparse one in clone)


@pytest.mark.parametrize("name", ["sqrt", "sin", "tanh", "expm1", "log1p", "square", "neg",
                                  "atan", "erf"])
def test_one_tensor_op_gradients_as_torch(name):
    rng = np.random.default_rng(1)
    up = rng.standard_normal((4, 3))
    grads = []
    for lib in (ember, torch):  # (torch's has no backward: f of its dense form, f(0) = 0)
        v = lib.tensor(np.abs(VALUES) / 4, dtype=lib.float64, requires_grad=True)
        s = lib.sparse_coo_tensor(lib.tensor(INDEX), v, (4, 3))
        out = getattr(lib, name)(s).to_dense() if lib is ember else \
            getattr(lib, name)(s.to_dense())
        (out * lib.tensor(up)).sum().backward()
        grads.append(v.grad.numpy())
    np.testing.assert_allclose(grads[0], grads[1], rtol=1e-10)
    v = ember.tensor(np.abs(VALUES) / 4, dtype=ember.float64, requires_grad=True)
    assert ember.autograd.gradcheck(
        lambda v: getattr(ember, name)(ember.sparse_coo_tensor(INDEX, v, (4, 3))).to_dense(),
        (v,))


HYBRID = ([[0, 2, 1, 0, 2], [1, 0, 3, 1, 0]], (3, 4, 2))  # entries 0 and 3 repeat (0, 1)


def _hybrid(lib, coalesce, requires_grad=False):
    index, size = HYBRID
    v = lib.tensor(np.arange(10.0).reshape(5, 2) - 4.5, dtype=lib.float64,
                   requires_grad=requires_grad)
    s = lib.sparse_coo_tensor(lib.tensor(index), v, size)
    return (s.coalesce() if coalesce else s), v


def _same(got, want):
    assert (tuple(got.shape), got.sparse_dim(), got._nnz(), got.is_coalesced()) == \
        (tuple(want.shape), want.sparse_dim(), want._nnz(), want.is_coalesced())
    np.testing.assert_array_equal(got._indices().numpy(), want._indices().numpy())
    np.testing.assert_allclose(got._values().detach().numpy(), want._values().detach().numpy())


SELECTIONS = [
    ("permute", lambda s, lib: s.permute(1, 0, 2)),
    ("permute identity", lambda s, lib: s.permute(0, 1, 2)),
    ("index_select 0", lambda s, lib: s.index_select(0, lib.tensor([2, 0, 0]))),
    ("index_select 1", lambda s, lib: s.index_select(1, lib.tensor([1, 3]))),
    ("index_select dense", lambda s, lib: s.index_select(2, lib.tensor([1, 1, 0]))),
    ("ember.index_select", lambda s, lib: lib.index_select(s, 1, lib.tensor([0, 1]))),
    ("narrow_copy 0", lambda s, lib: s.narrow_copy(0, 1, 2)),
    ("narrow_copy 1", lambda s, lib: s.narrow_copy(1, 0, 2)),
    ("narrow_copy dense", lambda s, lib: s.narrow_copy(2, 1, 1)),
    ("unsqueeze 0", lambda s, lib: s.unsqueeze(0)),
    ("unsqueeze 2", lambda s, lib: s.unsqueeze(2)),
    ("unsqueeze dense", lambda s, lib: s.unsqueeze(3)),
]


@pytest.mark.parametrize("name,fn", SELECTIONS, ids=[n for n, _ in SELECTIONS])
@pytest.mark.parametrize("coalesce", [False, True])
def test_selections_of_a_hybrid_coo_tensor_as_torch(name, fn, coalesce):
    got = fn(_hybrid(ember, coalesce)[0], ember)
    _same(got, fn(_hybrid(torch, coalesce)[0], torch))
    grads = []  # (torch's sparse forms have no backward: the dense op on its dense form)
    for lib, form in ((ember, lambda s: fn(s, ember).to_dense()),
                      (torch, lambda s: fn(s.to_dense(), torch))):
        s, v = _hybrid(lib, coalesce, requires_grad=True)
        up = np.random.default_rng(2).standard_normal(tuple(got.shape))
        (form(s) * lib.tensor(up)).sum().backward()
        grads.append(v.grad.numpy())
    np.testing.assert_allclose(grads[0], grads[1])


def test_selection_errors_name_the_op():
    s, _ = _hybrid(ember, True)
    with pytest.raises(ember.errors.ArgumentError, match="permute: transpositions between"):
        s.permute(2, 0, 1)
    with pytest.raises(ember.errors.IndexOutOfRange, match="index_select: index 4 is out"):
        s.index_select(1, ember.tensor([4]))
    with pytest.raises(ember.errors.DTypeError, match="index_select: index must be an integer"):
        s.index_select(0, ember.tensor([0.0]))
    with pytest.raises(ember.errors.IndexOutOfRange, match="narrow_copy: start 2 and length 2"):
        s.narrow_copy(0, 2, 2)
    with pytest.raises(NotImplementedError, match="COO tensors only"):
        ember.eye(2).to_sparse_csr().index_select(0, ember.tensor([0]))


def test_mv_and_integer_casts_as_torch():
    out = []
    for lib in (ember, torch):
        s = lib.sparse_coo_tensor(lib.tensor([[0, 2, 0], [1, 0, 1]]),
                                  lib.tensor([0.5, -2.0, 0.75]), (3, 2))
        out.append((s.mv(lib.ones(2)).tolist(), s.bool().to_dense().tolist(),
                    s.long().to_dense().tolist(), s.int().to_dense().tolist()))
        for bad in (lib.ones(2, 1), lib.ones(3), lib.ones(())):  # (torch: RuntimeError)
            with pytest.raises(RuntimeError, match="mv"):
                s.mv(bad)
    assert out[0] == out[1]
    with pytest.raises(ember.errors.ShapeError, match=r"mv: .* shapes \(3, 2\) and \(2, 1\)"):
        ember.sparse_coo_tensor([[0], [1]], [1.0], (3, 2)).mv(ember.ones(2, 1))


E = ember.errors


@pytest.mark.parametrize("call, error", [
    (lambda s, lib: s.narrow_copy(1, -2, 2), E.IndexOutOfRange),
    (lambda s, lib: s.narrow_copy(0, -1, 1), E.IndexOutOfRange),
    (lambda s, lib: s.index_select(0, lib.tensor(1)), E.ShapeError),
    (lambda s, lib: s.index_select(0, [1]), E.ArgumentTypeError)])
def test_selections_torch_refuses_raise(call, error):
    for lib, raised in ((torch, (RuntimeError, IndexError, TypeError)), (ember, error)):
        s = lib.sparse_coo_tensor(lib.tensor([[0, 2], [1, 0]]), lib.tensor([1.0, 2.0]), (3, 2))
        with pytest.raises(raised, match="narrow|index"):
            call(s, lib)


@pytest.mark.parametrize("shape", [(0, 4), (4, 0)])
@pytest.mark.parametrize("layout", ["csc", "bsr", "bsc"])
def test_coo_of_an_empty_compressed_tensor_is_coalesced_as_torch(shape, layout):
    flags = []
    for lib in (ember, torch):
        x = lib.zeros(shape)
        s = x.to_sparse_csc() if layout == "csc" else \
            getattr(x, f"to_sparse_{layout}")((1, 1))
        flags.append(s.to_sparse().is_coalesced())
    assert flags == [True, True]


def _coo():
    return ember.sparse_coo_tensor([[1, 0]], [1.0, 2.0], (3,))  # uncoalesced


BAD_INPUT = [
    (lambda: ember.sparse_coo_tensor(ember.tensor([[0.0]]), [1.0], (2,)), "DTypeError",
     "indices must be an integer tensor"),
    (lambda: _coo().indices(), "ArgumentError", "uncoalesced"),
    (lambda: _coo().crow_indices(), "ArgumentTypeError", "crow_indices: expected a"),
    (lambda: ember.ones(4, 2).to_sparse_bsr((3, 1)), "ShapeError", "must be divisible"),
    (lambda: ember.ones(4, 2).to_sparse(blocksize=(2, 2)), "ArgumentError", "blocksize is for"),
    (lambda: ember.ones(4, 2).to_sparse(3), "ArgumentError", "sparse_dim 3 must be in"),
    (lambda: ember.ones(2, 2, 2).to_sparse_csr(), "ShapeError", "needs a 2-D tensor"),
    (lambda: _coo() + ember.sparse_coo_tensor([[0]], [1.0], (4,)), "ShapeError", "differ"),
    (lambda: _coo() ** 0, "ArgumentError", "zeroth power"),
    (lambda: _coo() / ember.ones(3), "ShapeError", "scalar or zero-dim"),
    (lambda: ember.sparse.softmax(ember.ones(2, 2), 1), "ArgumentTypeError",
     "expected a sparse tensor"),  # (sparse.mm of two dense tensors is their mm, as torch's)
    (lambda: ember.ones(2, 2, 2).to_sparse(2).t(), "ShapeError", "t\\(\\) expects"),
]


@pytest.mark.parametrize("make,cls,message", BAD_INPUT, ids=[c[2][:24] for c in BAD_INPUT])
def test_bad_input_raises_ember_errors(make, cls, message):
    with pytest.raises(getattr(ember.errors, cls), match=message) as info:
        make()
    assert isinstance(info.value, RuntimeError)  # (as PyTorch's RuntimeError)


@pytest.mark.parametrize("dims", [0, 1, -1, (0, 1), 2, (0, 2), (1, 2)])
def test_sum_keepdim_as_torch(dims):
    out = []
    for lib in (ember, torch):
        h = lib.sparse_coo_tensor(lib.tensor(HYBRID[0]), lib.tensor(np.arange(10.0).reshape(5, 2)),
                                  HYBRID[1])
        r = h.sum(dims, keepdim=True)
        sparse = r.layout is lib.sparse_coo
        out.append((tuple(r.shape), sparse, sparse and r.is_coalesced(),
                    sparse and r.sparse_dim(), (r.to_dense() if sparse else r).tolist()))
    assert out[0] == out[1]
    grads = []  # (torch's backward of a dense dim's keepdim sum fails: its dense form)
    for lib, form in ((ember, lambda h: h.sum(dims, keepdim=True)),
                      (torch, lambda h: h.to_dense().sum(dims, keepdim=True))):
        v = lib.tensor(np.arange(10.0).reshape(5, 2), dtype=lib.float64, requires_grad=True)
        r = form(lib.sparse_coo_tensor(lib.tensor(HYBRID[0]), v, HYBRID[1]))
        r = r.to_dense() if r.layout is lib.sparse_coo else r
        (r * lib.tensor(np.arange(r.numel(), dtype=np.float64).reshape(r.shape))).sum().backward()
        grads.append(v.grad.tolist())
    assert grads[0] == grads[1]
