"""An unbatched input's 3-D attn_mask is checked against (heads, L, S) before anything else, as
torch 2.13: with is_causal=True and need_weights=False the mask is not used, and a wrong one
was dropped unchecked."""

import pytest
import torch

import ember
import ember.nn as nn
from ember.errors import ShapeError


@pytest.mark.parametrize("shape", [(2, 3, 5), (2, 4, 3), (4, 3, 3)])
@pytest.mark.parametrize("need_weights", [False, True])
def test_unbatched_3d_mask_of_the_wrong_shape_is_refused_as_torch(shape, need_weights):
    t_mha, e_mha = torch.nn.MultiheadAttention(8, 2), nn.MultiheadAttention(8, 2)
    kw = {"need_weights": need_weights, "is_causal": True}
    with pytest.raises(AssertionError, match="attn_mask"):
        x = torch.randn(3, 8)
        t_mha(x, x, x, attn_mask=torch.zeros(shape, dtype=torch.bool), **kw)
    x = ember.randn(3, 8)
    with pytest.raises(ShapeError, match=r"\(heads, target, source\) = \(2, 3, 3\)"):
        e_mha(x, x, x, attn_mask=ember.zeros(*shape, dtype=ember.bool), **kw)


def test_unbatched_3d_mask_of_the_right_shape_still_works():
    mha = nn.MultiheadAttention(8, 2)
    x = ember.randn(3, 8)
    out, _ = mha(x, x, x, attn_mask=ember.zeros(2, 3, 3, dtype=ember.bool), need_weights=False)
    assert out.shape == (3, 8)
