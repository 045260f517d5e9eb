"""``F.multi_head_attention_forward`` against torch's on the same weights (every argument
``nn.MultiheadAttention`` passes, values and gradients), finite differences, and
``nn.MultiheadAttention``'s ``add_bias_kv``/``add_zero_attn``, now computed by it."""

import numpy as np
import pytest
import torch

import ember
import ember.nn as nn
import ember.nn.functional as F
from ember.autograd import gradcheck, gradgradcheck
from tests.nn.helpers import compare, pair

E, H, L, S, N = 6, 2, 3, 4, 2
RNG = np.random.default_rng(0)
WEIGHTS = {"in_proj_weight": RNG.standard_normal((3 * E, E)) * 0.5,
           "in_proj_bias": RNG.standard_normal(3 * E) * 0.1,
           "bias_k": RNG.standard_normal((1, 1, E)), "bias_v": RNG.standard_normal((1, 1, E)),
           "out_proj_weight": RNG.standard_normal((E, E)) * 0.5,
           "out_proj_bias": RNG.standard_normal(E) * 0.1,
           "q_proj_weight": RNG.standard_normal((E, E)) * 0.5,
           "k_proj_weight": RNG.standard_normal((E, 5)) * 0.5,
           "v_proj_weight": RNG.standard_normal((E, 3)) * 0.5,
           "static_k": RNG.standard_normal((N * H, S + 1, E // H)),
           "static_v": RNG.standard_normal((N * H, S + 1, E // H))}
CAUSAL = np.triu(np.ones((L, S), dtype=bool), 1)
PADDING = np.array([[False, False, True, False], [False, True, True, False]])
NOT_CAUSAL = np.zeros((L, S), dtype=bool)
NOT_CAUSAL[:, 0] = True  # hides the first key: differs from the causal mask

CASES = {
    "packed": {},
    "bias_kv_zero_attn_masks": {"bias_k": "bias_k", "bias_v": "bias_v", "add_zero_attn": True,
                                "attn_mask": CAUSAL, "key_padding_mask": PADDING},
    "separate_proj": {"use_separate_proj_weight": True, "q_proj_weight": "q_proj_weight",
                      "k_proj_weight": "k_proj_weight", "v_proj_weight": "v_proj_weight",
                      "key_features": 5, "value_features": 3,
                      "attn_mask": RNG.standard_normal((N * H, L, S))},
    "static_kv_per_head": {"static_k": "static_k", "static_v": "static_v",
                           "average_attn_weights": False,
                           "key_padding_mask": RNG.standard_normal((N, S + 1))},
    "no_weights_causal": {"need_weights": False, "attn_mask": CAUSAL, "is_causal": True},
    "no_weights_causal_not_the_mask": {"need_weights": False, "attn_mask": NOT_CAUSAL,
                                       "is_causal": True},
    "no_weights_causal_bias_kv_zero_attn": {"need_weights": False, "attn_mask": NOT_CAUSAL,
                                            "is_causal": True, "bias_k": "bias_k",
                                            "bias_v": "bias_v", "add_zero_attn": True},
    "causal_with_padding_uses_the_mask": {"need_weights": False, "attn_mask": NOT_CAUSAL,
                                          "is_causal": True, "key_padding_mask": PADDING},
    "float_padding_bool_mask_no_bias": {"in_proj_bias": None, "out_proj_bias": None,
                                        "key_padding_mask": np.where(PADDING, -1e9, 0.0),
                                        "attn_mask": np.where(CAUSAL, -1e9, 0.0)},
    "eval_ignores_dropout_zero_attn": {"dropout_p": 0.7, "training": False,
                                       "add_zero_attn": True},
}


def run(lib, case, batched=True):
    """The call on ``lib`` (torch or ember), float64, inputs requiring grad."""
    spec = dict(CASES[case])
    kf, vf = spec.pop("key_features", E), spec.pop("value_features", E)
    shapes = [(L, N, E), (S, N, kf), (S, N, vf)] if batched else [(L, E), (S, kf), (S, vf)]
    rng = np.random.default_rng(1)
    inputs = [lib.tensor(rng.standard_normal(s), requires_grad=True) for s in shapes]
    weights = {k: lib.tensor(v, requires_grad=True) for k, v in WEIGHTS.items()}
    args = {"in_proj_weight": weights["in_proj_weight"], "in_proj_bias":
            weights["in_proj_bias"], "bias_k": None, "bias_v": None, "add_zero_attn": False,
            "dropout_p": 0.0, "out_proj_weight": weights["out_proj_weight"],
            "out_proj_bias": weights["out_proj_bias"]}
    for key, value in spec.items():
        if isinstance(value, str):
            value = weights[value]
        elif isinstance(value, np.ndarray):
            if not batched and (key == "key_padding_mask" or value.ndim == 3):
                value = value[0] if key == "key_padding_mask" else value[:H]  # one sample
            value = lib.tensor(value)
        args[key] = value
    fn = (torch.nn.functional if lib is torch else F).multi_head_attention_forward
    out = fn(*inputs, E, H, **args)
    leaves = inputs + [w for w in weights.values() if any(w is a for a in args.values())]
    return out, leaves


@pytest.mark.parametrize("batched", [True, False])
@pytest.mark.parametrize("case", list(CASES))
def test_matches_torch(case, batched):
    if not batched and case.startswith("static"):
        pytest.skip("static_k/v are (batch·heads, ...) tensors: batched only")
    (t_out, t_w), t_leaves = run(torch, case, batched)
    (e_out, e_w), e_leaves = run(ember, case, batched)
    np.testing.assert_allclose(e_out.detach().numpy(), t_out.detach().numpy(), rtol=1e-9,
                               atol=1e-12)
    assert (e_w is None) == (t_w is None)
    loss_t, loss_e = t_out.sin().sum(), e_out.sin().sum()
    if t_w is not None:
        np.testing.assert_allclose(e_w.detach().numpy(), t_w.detach().numpy(), rtol=1e-9,
                                   atol=1e-12)
        seed = np.random.default_rng(2).standard_normal(tuple(t_w.shape))
        loss_t = loss_t + (t_w * torch.tensor(seed)).sum()
        loss_e = loss_e + (e_w * ember.tensor(seed)).sum()
    loss_t.backward()
    loss_e.backward()
    for i, (t, e) in enumerate(zip(t_leaves, e_leaves, strict=True)):
        if t.grad is None:  # unused: in_proj_weight beside separate weights, key beside static_k
            assert e.grad is None or not e.grad.numpy().any(), f"leaf {i}"
            continue
        np.testing.assert_allclose(e.grad.numpy(), t.grad.numpy(), rtol=1e-8, atol=1e-11,
                                   err_msg=f"leaf {i}")


def test_gradcheck_and_gradgradcheck():
    rng = np.random.default_rng(3)
    q = ember.tensor(rng.standard_normal((2, 1, 4)), requires_grad=True)
    kv = ember.tensor(rng.standard_normal((3, 1, 4)), requires_grad=True)
    w_in = ember.tensor(rng.standard_normal((12, 4)) * 0.5, requires_grad=True)
    w_out = ember.tensor(rng.standard_normal((4, 4)) * 0.5)
    bias_k = ember.tensor(rng.standard_normal((1, 1, 4)), requires_grad=True)

    def f(q, kv, w_in, bias_k):
        return F.multi_head_attention_forward(
            q, kv, kv, 4, 2, w_in, None, bias_k, bias_k * 2, True, 0.0, w_out, None,
            key_padding_mask=ember.tensor([[False, True, False]]))[0]

    assert gradcheck(f, (q, kv, w_in, bias_k))
    assert gradgradcheck(lambda q, bias_k: f(q, kv, w_in, bias_k), (q, bias_k))


@pytest.mark.parametrize("batch_first", [False, True])
def test_module_with_bias_kv_and_zero_attn_matches_torch(batch_first):
    t, e = pair(torch.nn.MultiheadAttention, nn.MultiheadAttention, E, H, add_bias_kv=True,
                add_zero_attn=True, kdim=5, vdim=3, batch_first=batch_first)
    assert list(e.state_dict()) == list(t.state_dict())
    assert e.bias_k.shape == (1, 1, E) and e.add_zero_attn
    shapes = [(N, L, E), (N, S, 5), (N, S, 3)] if batch_first else \
        [(L, N, E), (S, N, 5), (S, N, 3)]
    compare(t, e, *shapes, train=False, rtol=1e-9)


def test_module_initialization_of_bias_kv():
    m = nn.MultiheadAttention(64, 4, add_bias_kv=True)
    std = np.sqrt(2.0 / (1 + 64))  # xavier_normal_ of a (1, 1, 64) tensor: fans 64 and 1
    values = np.concatenate([m.bias_k.detach().numpy().ravel(),
                             m.bias_v.detach().numpy().ravel()])
    assert 0.5 * std < values.std() < 1.5 * std


def test_dropout_only_in_training():
    x = ember.randn(3, 2, 4)
    w_in, w_out = ember.randn(12, 4), ember.randn(4, 4)
    _, weights = F.multi_head_attention_forward(x, x, x, 4, 2, w_in, None, None, None, False,
                                                0.5, w_out, None, training=True)
    kept = weights.numpy()
    assert (kept == 0).any() or (kept > 1).any()  # dropped, or kept and rescaled by 2


def test_errors():
    x = ember.randn(3, 2, 4)
    w_in, w_out = ember.randn(12, 4), ember.randn(4, 4)
    args = (w_in, None, None, None, False, 0.0, w_out, None)
    with pytest.raises(ValueError, match="expected embedding dimension 5"):
        F.multi_head_attention_forward(x, x, x, 5, 2, *args)
    with pytest.raises(ValueError, match="divisible by num_heads 3"):
        F.multi_head_attention_forward(x, x, x, 4, 3, *args)
    with pytest.raises(ValueError, match="needs q_proj_weight.*k_proj_weight is None"):
        F.multi_head_attention_forward(x, x, x, 4, 2, *args, use_separate_proj_weight=True,
                                       q_proj_weight=w_out, v_proj_weight=w_out)
    with pytest.raises(ValueError, match=r"static_k must have shape \(batch·heads = 4"):
        F.multi_head_attention_forward(x, x, x, 4, 2, *args, static_k=ember.randn(2, 3, 2))
    with pytest.raises(ValueError, match="bias_k and bias_v must be given together"):
        F.multi_head_attention_forward(x, x, x, 4, 2, w_in, None, ember.randn(1, 1, 4), None,
                                       False, 0.0, w_out, None)
    with pytest.raises(ValueError, match=r"key_padding_mask should have shape \(2, 3\)"):
        F.multi_head_attention_forward(x, x, x, 4, 2, *args,
                                       key_padding_mask=ember.zeros(2, 4, dtype=ember.bool))
    with pytest.raises(ValueError, match=r"attn_mask should have shape \(3, 3\) or \(4, 3, 3\)"):
        F.multi_head_attention_forward(x, x, x, 4, 2, *args, attn_mask=ember.zeros(2, 3, 3))
    with pytest.raises(ValueError, match="same batch size"):
        F.multi_head_attention_forward(x, ember.randn(3, 1, 4), ember.randn(3, 1, 4), 4, 2,
                                       *args)
    with pytest.raises(TypeError, match="attn_mask must be bool"):
        F.multi_head_attention_forward(x, x, x, 4, 2, *args,
                                       attn_mask=ember.zeros(3, 3, dtype=ember.int64))


def test_mismatched_mask_types_warn_as_torch():
    x = ember.randn(3, 2, 4)
    args = (ember.randn(12, 4), None, None, None, False, 0.0, ember.randn(4, 4), None)
    with pytest.warns(UserWarning, match="mismatched key_padding_mask"):
        F.multi_head_attention_forward(x, x, x, 4, 2, *args,
                                       key_padding_mask=ember.zeros(2, 3, dtype=ember.bool),
                                       attn_mask=ember.zeros(3, 3))


@pytest.mark.parametrize("batch_first", [False, True])
def test_module_under_jit_matches_eager(batch_first):
    """Masks, bias_kv and zero attention in both layouts: the compiled call's outputs and
    input gradient are the eager ones."""
    m = nn.MultiheadAttention(E, H, add_bias_kv=True, add_zero_attn=True, kdim=5,
                              batch_first=batch_first, dtype=ember.float64)
    rng = np.random.default_rng(4)
    shapes = [(L, N, E), (S, N, 5), (S, N, E)]
    q, k, v = (ember.tensor(rng.standard_normal(s), requires_grad=True) for s in shapes)
    mask, padding = ember.tensor(CAUSAL), ember.tensor(PADDING)

    def f(q, k, v):
        if batch_first:
            q, k, v = (t.transpose(0, 1) for t in (q, k, v))
        return m(q, k, v, key_padding_mask=padding, attn_mask=mask, average_attn_weights=False)

    compiled = ember.jit.compile(f)
    for _ in range(2):  # the tracing call, then the generated code
        (out, weights), (c_out, c_weights) = f(q, k, v), compiled(q, k, v)
        np.testing.assert_allclose(c_out.detach().numpy(), out.detach().numpy(), rtol=1e-12)
        np.testing.assert_allclose(c_weights.detach().numpy(), weights.detach().numpy(),
                                   rtol=1e-12)
        grad, = ember.autograd.grad(out.sin().sum(), [q])
        c_grad, = ember.autograd.grad(c_out.sin().sum(), [q])
        np.testing.assert_allclose(c_grad.numpy(), grad.numpy(), rtol=1e-12)


@pytest.mark.parametrize("batch_first", [False, True])
@pytest.mark.parametrize("training", [False, True])
@pytest.mark.parametrize("grad", [False, True])
def test_module_causal_hint_with_mask_as_torch(batch_first, training, grad):
    """is_causal=True with a (non-causal) attn_mask and need_weights=False: PyTorch's fused
    inference path (eval, no grad, batch_first self-attention) uses the mask, its other path
    the causal mask alone."""
    t = torch.nn.MultiheadAttention(E, H, batch_first=batch_first, dtype=torch.float64)
    m = nn.MultiheadAttention(E, H, batch_first=batch_first, dtype=ember.float64)
    m.load_state_dict({k: ember.tensor(v.detach().numpy()) for k, v in t.state_dict().items()})
    t.train(training)
    m.train(training)
    x = np.random.default_rng(5).standard_normal((N, L, E) if batch_first else (L, N, E))
    mask = NOT_CAUSAL[:, :L]
    with torch.set_grad_enabled(grad):
        tx = torch.tensor(x)
        want = t(tx, tx, tx, attn_mask=torch.tensor(mask), need_weights=False,
                 is_causal=True)[0].detach().numpy()
    with ember.set_grad_enabled(grad):
        ex = ember.tensor(x)
        got = m(ex, ex, ex, attn_mask=ember.tensor(mask), need_weights=False,
                is_causal=True)[0].detach().numpy()
    np.testing.assert_allclose(got, want, rtol=1e-10, atol=1e-12)


@pytest.mark.parametrize("training", [False, True])
@pytest.mark.parametrize("dtype", ["int64", "uint8"])
def test_module_refuses_an_integer_mask_with_the_causal_hint_as_torch(training, dtype):
    """is_causal=True, need_weights=False: the path that uses the causal mask alone still
    refuses an integer attn_mask, as PyTorch's module (which checks the mask first)."""
    x = np.random.default_rng(6).standard_normal((N, L, E))
    for lib, error in ((torch, AssertionError), (ember, TypeError)):
        m = lib.nn.MultiheadAttention(E, H, batch_first=True, dtype=lib.float64).train(training)
        q = lib.tensor(x)
        with pytest.raises(error, match="attn_mask"):
            m(q, q, q, attn_mask=lib.zeros((L, L), dtype=getattr(lib, dtype)),
              need_weights=False, is_causal=True)


@pytest.mark.parametrize("kinds", [("bool", "bool"), ("float", "bool"), ("float", "float"),
                                   ("3d", "float"), ("bool", None), (None, "bool"),
                                   (None, None)])
def test_merge_masks_matches_torch(kinds):
    rng = np.random.default_rng(0)
    n, length, heads = 2, 3, 2
    arrays = []
    for kind, shape in zip(kinds, ((length, length), (n, length))):
        if kind is None:
            arrays.append(None)
        elif kind == "bool":
            arrays.append(rng.random(shape) < 0.4)
        else:
            arrays.append(rng.standard_normal((n * heads, length, length) if kind == "3d"
                                              else shape).astype(np.float32))
    q = np.zeros((n, length, 8), np.float32)
    results = []
    for lib, mha in ((torch, torch.nn.MultiheadAttention(8, heads, batch_first=True)),
                     (ember, nn.MultiheadAttention(8, heads, batch_first=True))):
        masks = [None if a is None else lib.tensor(a) for a in arrays]
        results.append(mha.merge_masks(*masks, lib.tensor(q)))
    (mt, kt), (me, ke) = results
    assert kt == ke
    if mt is None:
        assert me is None
    else:
        assert str(me.dtype).split(".")[-1] == str(mt.dtype).split(".")[-1]
        np.testing.assert_array_equal(me.numpy(), mt.numpy())
