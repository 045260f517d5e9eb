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


@pytest.mark.parametrize("module", ["attention", "encoder_layer"])
@pytest.mark.parametrize("fastpath", [True, False])
def test_the_mha_fastpath_switch_as_torch(module, fastpath):
    torch.manual_seed(0)
    if module == "attention":
        t_mod = torch.nn.MultiheadAttention(8, 2, batch_first=True).eval()
        e_mod = nn.MultiheadAttention(8, 2, batch_first=True).eval()
    else:
        t_mod = torch.nn.TransformerEncoderLayer(8, 2, 16, 0.0, batch_first=True).eval()
        e_mod = nn.TransformerEncoderLayer(8, 2, 16, 0.0, batch_first=True).eval()
    copy_state(t_mod, e_mod)
    x = torch.randn(2, 4, 8)
    ex = ember.tensor(x.numpy())
    mask = torch.tensor([[False, True, False, False]] * 4)
    kw = {"need_weights": False} if module == "attention" else {}
    name = "attn_mask" if module == "attention" else "src_mask"
    try:
        torch.backends.mha.set_fastpath_enabled(fastpath)
        ember.backends.mha.set_fastpath_enabled(fastpath)
        assert ember.backends.mha.get_fastpath_enabled() is fastpath
        with torch.no_grad():
            want = t_mod(*(x,) * (3 if module == "attention" else 1), is_causal=True,
                         **{name: mask}, **kw)
        with ember.no_grad():
            got = e_mod(*(ex,) * (3 if module == "attention" else 1), is_causal=True,
                        **{name: ember.tensor(mask.numpy())}, **kw)
    finally:
        torch.backends.mha.set_fastpath_enabled(True)
        ember.backends.mha.set_fastpath_enabled(True)
    want, got = (want[0], got[0]) if module == "attention" else (want, got)
    np.testing.assert_allclose(got.numpy(), want.numpy(), atol=1e-5)


def test_mha_backend_docstring_examples():
    import doctest

    from ember.backends import mha
    result = doctest.testmod(mha, extraglobs={"ember": ember})
    assert result.failed == 0 and result.attempted > 0


@pytest.mark.parametrize("mask", [np.zeros((4, 4), np.int32), np.zeros((1, 2, 4, 4), bool)])
def test_encoder_layer_checks_a_mask_the_causal_hint_overrides_as_torch(mask):
    # off torch's fused kernel the hint decides, but the mask is checked first (torch's
    # canonical mask and attention's checks): an int or a 4-D mask is refused, not dropped
    torch_layer = torch.nn.TransformerEncoderLayer(8, 2, 16, 0.0, activation=torch.tanh,
                                                   batch_first=True).eval()
    layer = nn.TransformerEncoderLayer(8, 2, 16, 0.0, activation=ember.tanh,
                                       batch_first=True).eval()
    x = np.zeros((2, 4, 8), np.float32)
    with torch.no_grad(), pytest.raises(AssertionError):
        torch_layer(torch.tensor(x), src_mask=torch.tensor(mask), is_causal=True)
    with ember.no_grad(), pytest.raises((TypeError, ValueError)):
        layer(ember.tensor(x), src_mask=ember.tensor(mask), is_causal=True)
