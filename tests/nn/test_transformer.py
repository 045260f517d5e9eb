"""MultiheadAttention and Transformer layers against torch.nn on the same weights (eval mode
so dropout is off; train mode with dropout=0)."""

import numpy as np
import pytest
import torch

import ember
import ember.nn as nn
from tests.nn.helpers import compare, pair


@pytest.mark.parametrize("batch_first", [True, False])
@pytest.mark.parametrize("mask", ["none", "bool", "float", "padding", "causal"])
def test_multihead_attention(batch_first, mask):
    t, e = pair(torch.nn.MultiheadAttention, nn.MultiheadAttention, 8, 2,
                batch_first=batch_first)
    rng = np.random.default_rng(0)
    n, lq, ls = 3, 4, 5
    shape = (lambda length: (n, length, 8)) if batch_first else (lambda length: (length, n, 8))
    arrays = [rng.standard_normal(shape(lq)), rng.standard_normal(shape(ls)),
              rng.standard_normal(shape(ls))]
    kwargs = {}
    if mask == "bool":
        kwargs["attn_mask"] = rng.random((lq, ls)) < 0.3
        kwargs["attn_mask"][:, 0] = False
    elif mask == "float":
        kwargs["attn_mask"] = rng.standard_normal((n * 2, lq, ls))
    elif mask == "padding":
        kwargs["key_padding_mask"] = np.array([[False] * 5, [False] * 3 + [True] * 2,
                                               [True] + [False] * 4])
    elif mask == "causal":
        lq = ls
        arrays[0] = rng.standard_normal(shape(ls))
        kwargs["attn_mask"] = np.triu(np.ones((ls, ls), dtype=bool), 1)

    class Wrap:  # passes the masks as keyword arguments to both libraries
        def __init__(self, m, lib):
            self.m, self.lib = m, lib

        def train(self, mode):
            self.m.train(mode)

        def __call__(self, q, k, v):
            kw = {key: self.lib.tensor(val) for key, val in kwargs.items()}
            return self.m(q, k, v, **kw)

        def named_parameters(self):
            return self.m.named_parameters()

        def state_dict(self):
            return self.m.state_dict()

    compare(Wrap(t, torch), Wrap(e, ember), inputs=arrays, train=False, rtol=1e-6)


def test_multihead_attention_kdim_vdim_and_weights_per_head():
    t, e = pair(torch.nn.MultiheadAttention, nn.MultiheadAttention, 6, 3, kdim=4, vdim=5,
                batch_first=True)
    assert list(e.state_dict()) == ["q_proj_weight", "k_proj_weight", "v_proj_weight",
                                    "in_proj_bias", "out_proj.weight", "out_proj.bias"]
    rng = np.random.default_rng(1)
    q, k, v = rng.standard_normal((2, 3, 6)), rng.standard_normal((2, 4, 4)), \
        rng.standard_normal((2, 4, 5))
    out_t = t(*map(torch.tensor, (q, k, v)), average_attn_weights=False)
    out_e = e(*map(ember.tensor, (q, k, v)), average_attn_weights=False)
    for a, b in zip(out_e, out_t):
        np.testing.assert_allclose(a.detach().numpy(), b.detach().numpy(), rtol=1e-7)


@pytest.mark.parametrize("norm_first", [False, True])
@pytest.mark.parametrize("activation", ["relu", "gelu"])
def test_encoder_layer(norm_first, activation):
    t, e = pair(torch.nn.TransformerEncoderLayer, nn.TransformerEncoderLayer, 8, 2,
                dim_feedforward=16, dropout=0.0, activation=activation, batch_first=True,
                norm_first=norm_first)
    compare(t, e, (2, 5, 8), train=True, rtol=1e-6)
    compare(t, e, (2, 5, 8), train=False, rtol=1e-6)


@pytest.mark.parametrize("norm_first", [False, True])
def test_decoder_layer(norm_first):
    t, e = pair(torch.nn.TransformerDecoderLayer, nn.TransformerDecoderLayer, 8, 2,
                dim_feedforward=16, dropout=0.0, norm_first=norm_first)
    compare(t, e, (4, 2, 8), (6, 2, 8), train=True, rtol=1e-6)


def test_encoder_stack_state_dict_and_output():
    tl = torch.nn.TransformerEncoderLayer(8, 2, dim_feedforward=16, batch_first=True)
    el = nn.TransformerEncoderLayer(8, 2, dim_feedforward=16, batch_first=True)
    t = torch.nn.TransformerEncoder(tl, 2, norm=torch.nn.LayerNorm(8),
                                    enable_nested_tensor=False).double()
    e = nn.TransformerEncoder(el, 2, norm=nn.LayerNorm(8)).double()
    assert list(e.state_dict()) == list(t.state_dict())
    e.load_state_dict({k: v.numpy() for k, v in t.state_dict().items()})
    compare(t, e, (2, 5, 8), train=False, rtol=1e-6)


@pytest.mark.parametrize("enable", [True, False])
def test_encoder_use_nested_tensor_is_false_and_the_output_torchs_without_it(enable):
    """torch's TransformerEncoder has ``use_nested_tensor`` (True when enable_nested_tensor
    and its fast path's conditions hold); Ember had no such attribute. Ember, with no nested
    path, says False, and computes what torch computes with it False."""
    kw = {"dim_feedforward": 16, "batch_first": True, "dropout": 0.0}
    t = torch.nn.TransformerEncoder(torch.nn.TransformerEncoderLayer(8, 2, **kw), 2,
                                    enable_nested_tensor=enable).double().eval()
    e = nn.TransformerEncoder(nn.TransformerEncoderLayer(8, 2, **kw), 2,
                              enable_nested_tensor=enable).double().eval()
    assert t.use_nested_tensor is enable and e.use_nested_tensor is False
    t.use_nested_tensor = False
    e.load_state_dict({k: v.numpy() for k, v in t.state_dict().items()})
    x = np.random.default_rng(5).standard_normal((2, 5, 8))
    pad = np.array([[False] * 5, [False] * 3 + [True] * 2])
    with torch.no_grad():
        want = t(torch.tensor(x), src_key_padding_mask=torch.tensor(pad)).numpy()
    got = e(ember.tensor(x), src_key_padding_mask=ember.tensor(pad)).detach().numpy()
    np.testing.assert_allclose(got, want, rtol=1e-10, atol=1e-12)


def test_multihead_attention_input_errors_name_the_problem():
    m = nn.MultiheadAttention(8, 2)
    x = ember.randn(4, 3, 8)
    with pytest.raises(ValueError, match=r"attn_mask should have shape \(4, 4\) or \(6, 4, 4\)"):
        m(x, x, x, attn_mask=ember.zeros(2, 4, 4))
    with pytest.raises(ValueError, match=r"key \(4, 3, 8\) and value \(5, 3, 8\)"):
        m(x, x, ember.randn(5, 3, 8))
    with pytest.raises(ValueError, match="the same batch size"):
        m(x, ember.randn(5, 2, 8), ember.randn(5, 2, 8))
    with pytest.raises(ValueError, match="all 2-D"):
        m(x, ember.randn(5, 8), ember.randn(5, 8))
    for name in ("attn_mask", "key_padding_mask"):  # a 0/1 integer mask is not added silently
        mask = ember.zeros(4, 4) if name == "attn_mask" else ember.zeros(3, 4)
        with pytest.raises(TypeError, match=f"{name} must be bool"):
            m(x, x, x, **{name: mask.to(ember.int64)})


@pytest.mark.parametrize("batch_first", [False, True])
def test_transformer_model_matches_torch(batch_first):
    t, e = pair(torch.nn.Transformer, nn.Transformer, 8, 2, 2, 1, 16, 0.0,
                batch_first=batch_first)
    src, tgt = ((3, 5, 8), (3, 4, 8)) if batch_first else ((5, 3, 8), (4, 3, 8))
    compare(t, e, src, tgt, rtol=1e-6)
    mask_e = nn.Transformer.generate_square_subsequent_mask(4, dtype=ember.float64)
    mask_t = torch.nn.Transformer.generate_square_subsequent_mask(4, dtype=torch.float64)
    np.testing.assert_array_equal(mask_e.numpy(), mask_t.numpy())
    rng = np.random.default_rng(0)
    s, g = rng.standard_normal(src), rng.standard_normal(tgt)
    out_e = e(ember.tensor(s), ember.tensor(g), tgt_mask=mask_e)
    out_t = t(torch.tensor(s), torch.tensor(g), tgt_mask=mask_t)
    np.testing.assert_allclose(out_e.detach().numpy(), out_t.detach().numpy(), rtol=1e-6)
    with pytest.raises(ValueError, match="d_model=8"):
        e(ember.tensor(s), ember.zeros(*tgt[:-1], 6))


def test_a_query_row_masked_whole_gives_pytorchs_values_and_gradients():
    """need_weights=False (the Transformer layers' call) gives zeros for a row that may
    attend to nothing, as PyTorch's SDPA path does; need_weights=True gives NaN as PyTorch's
    weights path does. Before, both gave NaN, and NaN gradients reached every weight."""
    from ember.autograd import gradcheck

    t, e = pair(torch.nn.TransformerEncoderLayer, nn.TransformerEncoderLayer, 8, 2,
                dim_feedforward=16, dropout=0.0, batch_first=True)
    pad = np.zeros((3, 5), bool)
    pad[1], pad[2, 3:] = True, True  # sequence 1 is padding whole

    class Wrap:
        def __init__(self, m, lib):
            self.m, self.lib = m, lib

        def __getattr__(self, name):
            return getattr(self.m, name)

        def __call__(self, x):
            return self.m(x, src_key_padding_mask=self.lib.tensor(pad))

    compare(Wrap(t, torch), Wrap(e, ember), (3, 5, 8), train=True, rtol=1e-6)
    mask = np.triu(np.ones((4, 4), bool), 1)
    mask[2] = True
    tm, em = pair(torch.nn.MultiheadAttention, nn.MultiheadAttention, 4, 2)
    x = np.random.default_rng(0).standard_normal((4, 1, 4))
    for need in (False, True):
        out_t = tm(*[torch.tensor(x)] * 3, attn_mask=torch.tensor(mask), need_weights=need)[0]
        out_e = em(*[ember.tensor(x)] * 3, attn_mask=ember.tensor(mask), need_weights=need)[0]
        np.testing.assert_allclose(out_e.detach().numpy(), out_t.detach().numpy(), rtol=1e-7)
    assert gradcheck(lambda q: em(q, q, q, attn_mask=ember.tensor(mask), need_weights=False)[0],
                     (ember.tensor(x, requires_grad=True),))
