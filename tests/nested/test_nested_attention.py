"""Attention on nested tensors, against torch.nested and against the same block computed on
padded dense tensors with a mask."""

import numpy as np
import pytest
import torch
import torch.nn.functional as TF

import ember
import ember.nn.functional as F
from tests.nested.helpers import assert_close, pair

HEADS = 2


def heads(x):
    """(B, j, H·D) -> (B, H, j, D), attention's layout."""
    return x.unflatten(-1, (HEADS, -1)).transpose(1, 2)


def test_attention_matches_torch():
    nt, tnt = pair(requires_grad=True)
    out = F.scaled_dot_product_attention(heads(nt), heads(nt * 2), heads(nt.exp()))
    want = TF.scaled_dot_product_attention(heads(tnt), heads(tnt * 2), heads(tnt.exp()))
    assert out._ragged_idx == 2 and len(out.shape) == 4
    assert_close(out, want)
    weights = np.random.default_rng(3).standard_normal(tuple(out.values().shape))
    (out.values() * ember.tensor(weights)).sum().backward()
    (want.values() * torch.tensor(weights)).sum().backward()
    assert_close(nt.grad, tnt.grad)


@pytest.mark.parametrize("is_causal", [False, True])
def test_attention_is_per_sequence(is_causal):
    queries, _ = pair(lengths=(3, 1, 2), seed=4)
    keys, _ = pair(lengths=(2, 2, 4), seed=5)
    out = F.scaled_dot_product_attention(heads(queries), heads(keys), heads(keys * 3),
                                         is_causal=is_causal)
    for o, q, k in zip(out.unbind(), queries.unbind(), keys.unbind()):
        split = [t.unflatten(-1, (HEADS, -1)).transpose(0, 1) for t in (q, k, k * 3)]
        want = F.scaled_dot_product_attention(*split, is_causal=is_causal)
        np.testing.assert_allclose(o.numpy(), want.numpy(), rtol=1e-12, atol=1e-12)


def test_attention_refuses_what_torch_refuses():
    nt, _ = pair()
    q = heads(nt)
    with pytest.raises(ValueError, match="attn_mask"):
        F.scaled_dot_product_attention(q, q, q, attn_mask=ember.ones(3, 2, 3, 3).bool())
    with pytest.raises(RuntimeError, match=r"\(B, H, j, D\)"):
        F.scaled_dot_product_attention(nt, nt, nt)
    with pytest.raises(TypeError, match="all be nested"):
        F.scaled_dot_product_attention(q, ember.ones(3, 2, 3, 2), ember.ones(3, 2, 3, 2))


def block(x, w, gamma):
    """linear -> layer_norm -> self-attention -> sum over the sequence, on a nested tensor."""
    h = F.layer_norm(F.linear(x, w), (4,), gamma)
    return F.scaled_dot_product_attention(heads(h), heads(h), heads(h)).transpose(1, 2) \
        .flatten(-2).sum(1)


def padded_block(x, mask, w, gamma):
    """The same block on padded (B, L, D) input with a (B, L) mask of real positions."""
    h = F.layer_norm(F.linear(x, w), (4,), gamma)
    split = h.unflatten(-1, (HEADS, -1)).transpose(1, 2)
    out = F.scaled_dot_product_attention(split, split, split, attn_mask=mask[:, None, None, :])
    return (out.transpose(1, 2).flatten(-2) * mask[..., None]).sum(1)


def _inputs():
    rng = np.random.default_rng(6)
    return (ember.tensor(rng.standard_normal((4, 3)), requires_grad=True),
            ember.tensor(rng.standard_normal(4), requires_grad=True))


def test_block_gradcheck():
    nt, _ = pair(inner=(3,), lengths=(2, 1, 3))
    offsets = nt.offsets()
    w, gamma = _inputs()

    def fn(values, w, gamma):
        return block(ember.nested.nested_tensor_from_jagged(values, offsets), w, gamma)

    values = nt.values().clone().requires_grad_()
    assert ember.autograd.gradcheck(fn, (values, w, gamma))


def test_block_forward_matches_torch():
    nt, tnt = pair(inner=(3,), lengths=(2, 1, 3))
    w, gamma = _inputs()
    tw, tgamma = (torch.tensor(t.detach().numpy()) for t in (w, gamma))
    h = TF.layer_norm(TF.linear(tnt, tw), (4,), tgamma)
    want = TF.scaled_dot_product_attention(heads(h), heads(h), heads(h)).transpose(1, 2) \
        .flatten(-2).sum(1)
    assert_close(block(nt, w, gamma), want)


def test_padded_and_nested_agree():
    nt, _ = pair(inner=(3,), lengths=(2, 1, 3), requires_grad=True)
    w, gamma = _inputs()
    out = block(nt, w, gamma)
    out.sum().backward()
    nested_grads = [nt.grad.values().numpy(), w.grad.numpy(), gamma.grad.numpy()]
    w.grad = gamma.grad = None

    dense = nt.to_padded_tensor(0.0).detach().requires_grad_()
    mask = ember.tensor(np.arange(3)[None, :] < np.array([2, 1, 3])[:, None])
    dense_out = padded_block(dense, mask, w, gamma)
    np.testing.assert_allclose(out.detach().numpy(), dense_out.detach().numpy(), rtol=1e-12)
    dense_out.sum().backward()
    real = dense.grad.numpy()[mask.numpy()]
    for got, want in zip(nested_grads, [real, w.grad.numpy(), gamma.grad.numpy()]):
        np.testing.assert_allclose(got, want, rtol=1e-10, atol=1e-12)
