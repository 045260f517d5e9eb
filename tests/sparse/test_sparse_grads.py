"""Sparse embedding gradients and the optimizers that take them, against PyTorch."""

import warnings

import numpy as np
import pytest
import torch

import ember

warnings.filterwarnings("ignore", message="Sparse")


def train(lib, opt_name, **kw):
    weight = np.random.default_rng(0).standard_normal((10, 4))
    head = np.random.default_rng(1).standard_normal((2, 4))
    emb, lin = lib.nn.Embedding(10, 4, sparse=True), lib.nn.Linear(4, 2)
    with lib.no_grad():
        emb.weight.copy_(lib.tensor(weight, dtype=lib.float32))
        lin.weight.copy_(lib.tensor(head, dtype=lib.float32))
        lin.bias.zero_()
    sparse_opt = getattr(lib.optim, opt_name)(list(emb.parameters()), lr=0.1, **kw)
    dense_opt = lib.optim.SGD(lin.parameters(), lr=0.1)
    losses = []
    for step in range(3):
        x = lib.tensor([[1, 2, 2], [3, 1, 9]][step % 2:] + [[0, 5, 5]])
        loss = lin(emb(x)).pow(2).mean()
        sparse_opt.zero_grad()
        dense_opt.zero_grad()
        loss.backward()
        sparse_opt.step()
        dense_opt.step()
        losses.append(float(loss))
    state = {i: sorted(st) for i, st in sparse_opt.state_dict()["state"].items()}
    return losses, emb.weight.detach().numpy(), state


@pytest.mark.parametrize("name,kw", [("SparseAdam", {}), ("SGD", {}),
                                     ("SGD", {"momentum": 0.9, "nesterov": True}),
                                     ("SGD", {"momentum": 0.5, "dampening": 0.1}),
                                     ("Adagrad", {"lr_decay": 0.01})])
def test_training_matches_torch(name, kw):
    ember_losses, ember_weight, ember_state = train(ember, name, **kw)
    torch_losses, torch_weight, torch_state = train(torch, name, **kw)
    np.testing.assert_allclose(ember_losses, torch_losses, rtol=1e-5)
    np.testing.assert_allclose(ember_weight, torch_weight, atol=1e-6)
    # the state's entries too: SGD without momentum keeps none (Ember kept an empty one)
    assert ember_state == torch_state


def test_embedding_grad_is_uncoalesced_and_accumulates():
    grads = []
    for lib in (ember, torch):
        emb = lib.nn.Embedding(5, 2, sparse=True, padding_idx=1)
        emb(lib.tensor([[1, 2], [2, 4]])).sum().backward()
        emb(lib.tensor([0])).sum().backward()
        grads.append(emb.weight.grad)
    e, t = grads
    assert e.layout is ember.sparse_coo and not e.is_coalesced()
    assert e._indices().tolist() == t._indices().tolist()
    np.testing.assert_allclose(e._values().numpy(), t._values().numpy())
    bags = []
    for lib in (ember, torch):
        bag = lib.nn.EmbeddingBag(5, 2, mode="mean", sparse=True)
        with lib.no_grad():
            bag.weight.copy_(lib.arange(10.0).reshape(5, 2))
        bag(lib.tensor([1, 2, 2]), lib.tensor([0, 1])).sum().backward()
        bags.append(bag.weight.grad)
    np.testing.assert_allclose(bags[0].to_dense().numpy(), bags[1].to_dense().numpy())
    w = ember.randn(4, 2, requires_grad=True)
    ember.nn.functional.embedding(ember.tensor([3, 3]), w, sparse=True).sum().backward()
    assert w.grad._nnz() == 2


def test_refusals_match_torch():
    emb = ember.nn.Embedding(5, 2, sparse=True)
    emb(ember.tensor([1, 2])).sum().backward()
    with pytest.raises(RuntimeError, match="Adam does not support sparse gradients, please "
                                           "consider SparseAdam"):
        ember.optim.AdamW(emb.parameters()).step()
    with pytest.raises(RuntimeError, match="RMSprop does not support sparse gradients"):
        ember.optim.RMSprop(emb.parameters()).step()
    with pytest.raises(RuntimeError, match="weight_decay"):
        ember.optim.Adagrad(emb.parameters(), weight_decay=0.1).step()
    with pytest.raises(RuntimeError, match="weight_decay"):
        ember.optim.SGD(emb.parameters(), lr=0.1, weight_decay=0.1).step()
    with pytest.raises(NotImplementedError, match="clip_grad_norm_.*sparse"):
        ember.nn.utils.clip_grad_norm_(emb.parameters(), 1.0)
    with pytest.raises(RuntimeError, match="max mode does not support sparse"):
        ember.nn.EmbeddingBag(5, 2, mode="max", sparse=True)(ember.tensor([[1, 2]]))
    with pytest.raises(RuntimeError, match="SparseAdam does not support dense gradients"):
        w = ember.ones(2, requires_grad=True)
        w.sum().backward()
        ember.optim.SparseAdam([w]).step()
    ember.optim.SGD(emb.parameters(), lr=0.1).zero_grad(set_to_none=False)
    assert emb.weight.grad._nnz() == 0


def test_sparse_and_dense_gradients_sum_dense():
    for order in ("together", "sparse first", "dense first"):
        w = ember.ones(4, 2, requires_grad=True)
        lookup = ember.nn.functional.embedding(ember.tensor([1, 1]), w, sparse=True).sum()
        if order == "together":
            (lookup + (w * w).sum()).backward()
        elif order == "sparse first":
            lookup.backward()
            (w * w).sum().backward()
        else:
            (w * w).sum().backward()
            lookup.backward()
        assert isinstance(w.grad, ember.Tensor)
        assert w.grad.tolist() == [[2.0, 2.0], [4.0, 4.0], [2.0, 2.0], [2.0, 2.0]]


def test_embedding_bag_sparse_grad_leaves_padding_out():
    grads = []
    for lib in (ember, torch):
        bag = lib.nn.EmbeddingBag(5, 2, mode="sum", sparse=True, padding_idx=2)
        bag(lib.tensor([1, 2, 2, 3]), lib.tensor([0, 2])).sum().backward()
        grads.append(bag.weight.grad)
    assert grads[0]._indices().tolist() == grads[1]._indices().tolist()
    np.testing.assert_allclose(grads[0]._values().numpy(), grads[1]._values().numpy())
