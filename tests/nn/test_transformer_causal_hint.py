"""TransformerEncoderLayer's is_causal hint given with a src_mask that is not causal: PyTorch's
fused inference kernel reads the mask, its other path the hint; Ember follows both."""

import numpy as np
import pytest
import torch

import ember
import ember.nn as nn
from tests.nn.helpers import copy_state


@pytest.mark.parametrize("mask_dtype", ["bool", "float"])
@pytest.mark.parametrize("activation", ["relu", "tanh"])
@pytest.mark.parametrize("grad", [False, True])
@pytest.mark.parametrize("norm_first", [False, True])
@pytest.mark.parametrize("hook", [False, True])
def test_encoder_layer_causal_hint_with_a_mask_as_torch(mask_dtype, activation, grad,
                                                        norm_first, hook):
    torch.manual_seed(0)
    acts = {"relu": ("relu", "relu"), "tanh": (torch.tanh, ember.tanh)}[activation]
    kw = {"dropout": 0.0, "batch_first": True, "norm_first": norm_first}
    t_layer = torch.nn.TransformerEncoderLayer(8, 2, 16, activation=acts[0], **kw).eval()
    e_layer = nn.TransformerEncoderLayer(8, 2, 16, activation=acts[1], **kw).eval()
    copy_state(t_layer, e_layer)
    if hook:  # (a forward hook keeps PyTorch off its fused kernel)
        t_layer.linear1.register_forward_hook(lambda *a: None)
        e_layer.linear1.register_forward_hook(lambda *a: None)
    x = torch.randn(2, 4, 8)
    mask = torch.tensor([[False, True, False, False], [False, False, False, True],
                         [True, False, False, False], [False, False, True, False]])
    if mask_dtype == "float":
        mask = torch.zeros(4, 4).masked_fill(mask, float("-inf"))
    with torch.set_grad_enabled(grad):
        want = t_layer(x, src_mask=mask, is_causal=True)
    with ember.set_grad_enabled(grad):
        got = e_layer(ember.tensor(x.numpy()), src_mask=ember.tensor(mask.numpy()),
                      is_causal=True)
    np.testing.assert_allclose(got.detach().numpy(), want.detach().numpy(), atol=1e-5)
