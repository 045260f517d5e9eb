"""Sweep 58: sparse COO tensors as PyTorch's: cat, sparse_mask of a sparse input, smm/sspaddmm
methods, any(); a sparse nn.Parameter is refused clearly."""

import numpy as np
import pytest
import torch

import ember

X = np.arange(6.0).reshape(3, 2) / 5
INDEX = np.array([[0, 1, 1, 0], [2, 0, 2, 2]])  # (0, 2) twice: uncoalesced
VALUES = np.array([3.0, 4.0, 5.0, 1.0])


def test_parameter_of_a_sparse_tensor_is_refused_clearly():
    """A sparse nn.Parameter is refused with a hint (sweep58j's SparseParameter was reverted:
    Module.zero_grad, .double() after backward and ember.compile broke on it, review58jk)."""
    sparse = ember.sparse_coo_tensor(ember.tensor(INDEX), ember.tensor(VALUES), (2, 3))
    with pytest.raises(TypeError, match="sparse"):
        ember.nn.Parameter(sparse)



@pytest.mark.parametrize("fn", ["cat", "concat"])
@pytest.mark.parametrize("case", [((2, 3), [[0, 1, 0], [1, 0, 1]], [1.0, 2, 3]),
                                  ((2, 3, 2), [[0, 1], [1, 2]], [[1.0, 2], [3, 4]]),
                                  ((3, 2), [[0, 2, 0]], [[1.0, 2], [3, 4], [5, 6]]),
                                  ((2, 3), np.zeros((2, 0), np.int64), np.zeros(0))])
def test_cat_of_sparse_coo_tensors_as_torch(fn, case):
    size, index, values = case
    index, values = np.asarray(index, np.int64), np.asarray(values, np.float64)
    for dim in range(-len(size), len(size)):
        t = torch.sparse_coo_tensor(torch.tensor(index), torch.tensor(values), size)
        want = getattr(torch, fn)([t, t * 2, t], dim)
        a = ember.sparse_coo_tensor(index, values, size).requires_grad_()
        b = (a.detach() * 2).requires_grad_()
        got = getattr(ember, fn)([a, b, a], dim)
        assert got.layout is ember.sparse_coo and got.is_coalesced() == want.is_coalesced()
        assert got._nnz() == want._nnz()
        np.testing.assert_allclose(got.detach().to_dense().numpy(), want.to_dense().numpy())
        # the gradient: the dense cat's, at each input's elements (torch has no CPU backward)
        w = ember.arange(got.numel(), dtype=ember.float64).reshape(got.shape)
        (got.to_dense() * w).sum().backward()
        da, db = (x.detach().to_dense().requires_grad_() for x in (a, b))
        (ember.cat([da, db, da], dim) * w).sum().backward()
        mask = a.detach().to_dense().numpy() != 0
        np.testing.assert_allclose(a.grad.to_dense().numpy(), da.grad.numpy() * mask)
        np.testing.assert_allclose(b.grad.to_dense().numpy(), db.grad.numpy() * mask)


def test_cat_of_sparse_tensors_refuses_clearly():
    s = ember.sparse_coo_tensor([[0, 1], [1, 0]], [1.0, 2.0], (2, 2))
    with pytest.raises(ember.errors.ArgumentTypeError, match="dense Tensor was found at "
                                                            "position 1"):
        ember.cat([s, s.to_dense()])
    with pytest.raises(ember.errors.ShapeError, match="same shape"):
        ember.cat([s, ember.ones(2, 3).to_sparse()])
    with pytest.raises(ember.errors.ShapeError, match="sparse_dim and dense_dim"):
        ember.cat([s, ember.ones(2, 2).to_sparse(1)])
    with pytest.raises(NotImplementedError, match="COO tensors only"):
        ember.cat([s.to_sparse_csr()] * 2)
    assert ember.cat([s, s], 0).dtype == ember.float32
    assert ember.cat([s, s.double()], 0).dtype == ember.float64


_MASK = ([[0, 1, 1, 0, 1], [1, 1, 0, 1, 2]], [1.0] * 5)  # (0, 1) twice
_EMPTY = (np.zeros((2, 0), np.int64), np.zeros(0))


@pytest.mark.parametrize("source", [(INDEX[:, :3].tolist(), [1.0, 2.0, 3.0]),
                                    ([[0, 1, 0, 1], [1, 0, 1, 2]], [1.0, 2, 3, 4]), _EMPTY])
@pytest.mark.parametrize("mask", [_MASK, _EMPTY, ([[0, 1], [1, 0]], [1.0, 1.0])])
@pytest.mark.parametrize("layouts", [("coo", "coo"), ("coal", "coal"), ("coo", "csr"),
                                     ("coal", "csc")])
def test_sparse_mask_of_a_sparse_coo_input_as_torch(source, mask, layouts):
    conv = {"coo": lambda s: s, "coal": lambda s: s.coalesce(),
            "csr": lambda s: s.to_sparse_csr(), "csc": lambda s: s.to_sparse_csc()}
    got = []
    for lib in (ember, torch):
        a, m = (conv[c](lib.sparse_coo_tensor(lib.tensor(np.asarray(i, np.int64)),
                                              lib.tensor(np.asarray(v, np.float64)), (2, 3)))
                for (i, v), c in zip((source, mask), layouts))
        out = a.sparse_mask(m)
        values = out._values() if out.layout in (torch.sparse_coo, ember.sparse_coo) \
            else out.values()
        coalesced = out.is_coalesced() if layouts[1] != "csr" and layouts[1] != "csc" else None
        got.append((out.to_dense().numpy(), values.numpy(), out._nnz(), coalesced))
    np.testing.assert_allclose(got[0][0], got[1][0])
    np.testing.assert_allclose(got[0][1], got[1][1])
    assert got[0][2:] == got[1][2:]


def test_sparse_mask_of_a_sparse_input_hybrid_gradient_and_refusals():
    for lib in (ember, torch):
        h = lib.sparse_coo_tensor(lib.tensor([[0, 1, 0]]), lib.tensor([[1.0, 2], [3, 4], [5, 6]]),
                                  (2, 2))
        hm = lib.sparse_coo_tensor(lib.tensor([[1, 0, 1]]), lib.ones(3, 2), (2, 2))
        assert h.sparse_mask(hm)._values().tolist() == [[3, 4], [6, 8], [3, 4]]
    a = ember.sparse_coo_tensor([[0, 1, 0, 1], [1, 0, 1, 2]],
                                ember.tensor([1.0, 2, 3, 4], dtype=ember.float64),
                                (2, 3)).requires_grad_()
    m = ember.sparse_coo_tensor(*_MASK, (2, 3))
    (a.sparse_mask(m)._values() * ember.arange(5.0, dtype=ember.float64)).sum().backward()
    assert a.grad.to_dense().tolist() == [[0, 3, 0], [2, 0, 4]]  # (mask entries 0 and 3 at (0, 1))
    with pytest.raises(NotImplementedError, match="COO input"):
        a.detach().to_sparse_csr().sparse_mask(m.to_sparse_csr())
    with pytest.raises(ember.errors.ShapeError, match="sparse_dim"):
        ember.ones(2, 3).to_sparse(1).sparse_mask(m)


def test_sparse_mask_and_cat_of_sparse_inputs_pass_gradcheck():
    m = ember.sparse_coo_tensor(*_MASK, (2, 3))

    def masked(v):
        return ember.sparse_coo_tensor(INDEX, v, (2, 3)).sparse_mask(m)._values()

    def joined(v):
        s = ember.sparse_coo_tensor([[0, 1]], v, (2, 2))
        return ember.cat([s, s * 3], 1)._values()

    assert ember.autograd.gradcheck(masked, (ember.tensor(VALUES, requires_grad=True),))
    assert ember.autograd.gradcheck(joined, (ember.tensor(np.arange(4.0).reshape(2, 2),
                                                          requires_grad=True),))


def test_smm_and_sspaddmm_methods_as_torch():
    got = []
    for lib in (ember, torch):
        s = lib.sparse_coo_tensor(lib.tensor(INDEX), lib.tensor(VALUES), (2, 3))
        d = lib.tensor(X)
        base = lib.sparse_coo_tensor(lib.tensor([[1], [0]]), lib.tensor([7.0], dtype=lib.float64),
                                     (2, 2))
        got.append((s.smm(d).to_dense().numpy(),
                    base.sspaddmm(s, d, beta=2, alpha=3).to_dense().numpy()))
    for a, b in zip(*got):
        np.testing.assert_allclose(a, b)


def test_any_of_a_sparse_coo_tensor_as_torch():
    for lib in (ember, torch):
        cases = [lib.sparse_coo_tensor([[0, 2]], [0.0, 3.0], (4,)),
                 lib.sparse_coo_tensor([[0]], [0.0], (3,)),
                 lib.sparse_coo_tensor(lib.zeros(1, 0, dtype=lib.long), lib.zeros(0), (3,)),
                 lib.sparse_coo_tensor([[0]], [[0.0, 1]], (2, 2)),
                 lib.sparse_coo_tensor([[0]], [2], (2,))]
        assert [bool(s.any()) for s in cases] == [True, False, False, True, True]
        assert lib.any(cases[0]).dtype == lib.bool and lib.any(cases[0]).shape == ()
    # (entries cancelling to 0 are an element 0: PyTorch reads each entry and says True)
    assert not ember.sparse_coo_tensor([[0, 0]], [1.0, -1.0], (3,)).any()
    with pytest.raises(NotImplementedError, match="COO tensors and no dim"):
        ember.eye(2).to_sparse().any(0)
