"""sweep62e: sparse differences from torch 2.13 found by a differential sweep."""

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
