"""ember.nn.attention.bias (causal_upper_left / causal_lower_right as scaled_dot_product_attention
masks) against torch.nn.attention.bias."""

import numpy as np
import pytest
import torch
import torch.nn.functional as TF
from torch.nn.attention import bias as torch_bias

import ember
import ember.nn.functional as F
from ember.errors import ArgumentError, ShapeError
from ember.nn.attention import bias


@pytest.mark.filterwarnings("ignore:.*causal bias")
@pytest.mark.parametrize("lengths", [(3, 5), (5, 3), (4, 4), (1, 6)])
@pytest.mark.parametrize("variant", ["causal_lower_right", "causal_upper_left"])
@pytest.mark.parametrize("gqa", [False, True])
def test_matches_torch_values_and_gradients(lengths, variant, gqa):
    torch.manual_seed(0)
    (L, S), kv_heads = lengths, (2 if gqa else 4)
    tensors = [torch.randn(2, 4, L, 8, dtype=torch.float64),
               torch.randn(2, kv_heads, S, 8, dtype=torch.float64),
               torch.randn(2, kv_heads, S, 6, dtype=torch.float64)]
    kw = {"enable_gqa": gqa, "scale": 0.3}
    tq, tk, tv = (t.clone().requires_grad_() for t in tensors)
    eq, ek, ev = (ember.tensor(t.numpy()).requires_grad_() for t in tensors)
    want = TF.scaled_dot_product_attention(tq, tk, tv, attn_mask=getattr(torch_bias, variant)(
        L, S), **kw)
    got = F.scaled_dot_product_attention(eq, ek, ev, attn_mask=getattr(bias, variant)(L, S),
                                         **kw)
    np.testing.assert_allclose(got.detach().numpy(), want.detach().numpy(), atol=1e-12)
    grad = torch.randn(want.shape, dtype=torch.float64)
    want.backward(grad)
    got.backward(ember.tensor(grad.numpy()))
    for e, t in ((eq, tq), (ek, tk), (ev, tv)):
        np.testing.assert_allclose(e.grad.numpy(), t.grad.numpy(), atol=1e-12)


def test_materialized_mask_and_repr_match_torch():
    for variant in ("causal_lower_right", "causal_upper_left"):
        want, got = getattr(torch_bias, variant)(3, 5), getattr(bias, variant)(3, 5)
        assert got._materialize().tolist() == want._materialize().tolist()
        assert repr(got) == repr(want)
        assert (got.variant, got.seq_len_q, got.seq_len_kv) == (int(want.variant), 3, 5)


def test_lower_right_with_more_queries_warns_and_gives_zero_rows():
    with pytest.warns(UserWarning, match="nothing to attend to"):
        mask = bias.causal_lower_right(4, 2)
    q, k = ember.randn(1, 4, 2), ember.randn(1, 2, 2)
    out = F.scaled_dot_product_attention(q, k, k, attn_mask=mask)
    assert out[0, :2].abs().sum().item() == 0 and out[0, 2:].abs().sum().item() > 0


def test_errors():
    q = ember.randn(1, 3, 4)
    with pytest.raises(ArgumentError, match="is_causal"):
        F.scaled_dot_product_attention(q, q, q, attn_mask=bias.causal_lower_right(3, 3),
                                       is_causal=True)
    with pytest.raises(ShapeError, match=r"2 queries over 3 keys.*\(3, 3\)"):  # torch: computes
        F.scaled_dot_product_attention(q, q, q, attn_mask=bias.causal_upper_left(2, 3))
    with pytest.raises(ArgumentError, match="two sizes"):
        bias.causal_lower_right(3)
    with pytest.raises(ArgumentError, match="CausalVariant"):
        bias.CausalBias(2, 3, 3)
