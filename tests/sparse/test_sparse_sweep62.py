"""sweep62e: sparse differences from torch 2.13 found by a differential sweep."""

import pytest
import torch

import ember


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
