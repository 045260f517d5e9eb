"""sweep62e: sparse differences from torch 2.13 found by a differential sweep."""

import numpy as np
import pytest
import torch

import ember
from ember.backend.device import DeviceUnavailableError


@pytest.mark.parametrize("bag", [False, True])
def test_sparse_embedding_grad_of_int32_indices_has_int64_indices_as_torch(bag):
    # Ember gave the gradient the lookup's int32 indices (docs/sparse.md: always int64).
    grads = []
    for m in (ember, torch):
        mod = m.nn.EmbeddingBag(5, 3, sparse=True) if bag else m.nn.Embedding(5, 3, sparse=True)
        mod(m.tensor([[0, 2, 2], [4, 1, 2]], dtype=m.int32)).sum().backward()
        grads.append(mod.weight.grad)
    e, t = grads
    assert e._indices().dtype is ember.int64 and t._indices().dtype is torch.int64
    assert e._indices().tolist() == t._indices().tolist()
    assert e.to_dense().tolist() == t.to_dense().tolist()


@pytest.mark.parametrize("layout", ["coo", "csr"])
def test_cpu_and_a_no_op_to_of_a_sparse_tensor_return_it_as_torch(layout):
    # S.cpu() raised 'not supported'; S.to('cpu') gave a copy where torch gives S itself.
    for m in (ember, torch):
        s = m.tensor([[0.0, 1.5], [2.0, 0.0]])
        s = s.to_sparse() if layout == "coo" else s.to_sparse_csr()
        assert s.cpu() is s and s.to("cpu") is s and s.to(m.float32) is s
        assert s.to(m.float64).dtype is m.float64 and s.to("cpu", copy=True) is not s
    with pytest.raises(DeviceUnavailableError, match="cuda"):
        ember.eye(2).to_sparse().cuda()


DENSE4 = [[0.0, 1, 0, 2], [3, 0, 0, 0], [0, 0, 0, 0], [0, -1, 4, 5]]
RIGHT = [[1.0, -2], [0.5, 3], [-1, 2], [2, -0.5]]


@pytest.mark.parametrize("reduce", ["sum", "mean", "amax", "amin", "max", "min"])
def test_sparse_mm_reduce_of_a_csr_matrix_as_torch(reduce):
    # ember.sparse.mm had no reduce argument (a TypeError).
    results = []
    for m in (ember, torch):
        values = m.tensor([1.0, 2, 3, -1, 4, 5], dtype=m.float64, requires_grad=True)
        s = m.sparse_csr_tensor(m.tensor([0, 2, 3, 3, 6]), m.tensor([1, 3, 0, 1, 2, 3]),
                                values, (4, 4))
        d = m.tensor(RIGHT, dtype=m.float64, requires_grad=True)
        out = m.sparse.mm(s, d, reduce)
        (out * m.arange(8.0, dtype=m.float64).reshape(4, 2)).sum().backward()
        results.append([x.detach().numpy() for x in (out, values.grad, d.grad)])
    for e, t in zip(*results):
        np.testing.assert_allclose(e, t)


def test_sparse_mm_reduce_refusals_and_dense_operands_as_torch():
    c, d = ember.tensor(DENSE4).to_sparse_csr(), ember.tensor(RIGHT)
    with pytest.raises(NotImplementedError, match="sparse_csr"):
        ember.sparse.mm(c.to_sparse(), d, "sum")  # (torch: no COO kernel)
    with pytest.raises(ember.errors.ArgumentTypeError, match="dense mat2"):
        ember.sparse.mm(c, c, "sum")  # (it ignored reduce)
    with pytest.raises(ember.errors.ArgumentError, match="reduce must be one of"):
        ember.sparse.mm(c, d, "median")
    # a dense mat1 is an ordinary product, as torch.sparse.mm / sparse.addmm (Ember refused it)
    t = torch.tensor(RIGHT)
    np.testing.assert_allclose(ember.sparse.mm(d.t(), c).numpy(),
                               torch.sparse.mm(t.t(), torch.tensor(DENSE4).to_sparse_csr()))
    np.testing.assert_allclose(ember.sparse.addmm(d, ember.tensor(DENSE4), d).numpy(),
                               torch.sparse.addmm(t, torch.tensor(DENSE4), t).numpy())


def test_item_of_a_one_element_coo_tensor_as_torch():
    # S.item() raised 'not supported'; torch sums duplicates and gives 0 when unspecified.
    for m in (ember, torch):
        assert m.sparse_coo_tensor([[0, 0]], [1.5, 2.0], (1,)).item() == 3.5
        assert m.sparse_coo_tensor(m.zeros(1, 0, dtype=m.long), m.zeros(0), (1,)).item() == 0.0
        got = m.tensor([[2]]).to_sparse().item()
        assert got == 2 and type(got) is int
    with pytest.raises(ember.errors.ArgumentError, match="4 elements"):
        ember.eye(2).to_sparse().item()


def test_sparse_mm_reduce_grad_of_a_csr_leaf_as_torch():
    grads = []
    for m in (ember, torch):
        s = m.tensor(DENSE4, dtype=m.float64).to_sparse_csr().requires_grad_()
        out = m.sparse.mm(s, m.arange(8.0, dtype=m.float64).reshape(4, 2), "mean")
        (out * m.arange(8.0, dtype=m.float64).reshape(4, 2)).sum().backward()
        assert s.grad.layout is (ember.sparse_csr if m is ember else torch.sparse_csr)
        grads.append(s.grad.to_dense().numpy())
    np.testing.assert_allclose(*grads)
