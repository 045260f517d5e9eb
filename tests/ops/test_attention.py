"""scaled_dot_product_attention, cosine_similarity, pairwise_distance and pixel_shuffle
against PyTorch and finite differences."""

import re

import numpy as np
import pytest
import torch
import torch.nn.functional as TF

import ember
import ember.nn.functional as F
from tests.ops.optable import Const, OpCase, S, arg, op_tests

BOOL_MASK = Const(np.array([[True, False, True, True], [True, True, False, False],
                            [False, True, True, False]]))

CASES = [
    OpCase("sdpa", F.scaled_dot_product_attention, TF.scaled_dot_product_attention, [
        S(arg(2, 3, 4), arg(2, 4, 4), arg(2, 4, 5)),
        S(arg(2, 2, 3, 4, noncontig=True), arg(2, 2, 4, 4), arg(2, 2, 4, 3), BOOL_MASK),
        S(arg(2, 3, 4), arg(2, 4, 4), arg(2, 4, 2), arg(3, 4, grad=False), scale=0.3),
        S(arg(1, 2, 4, 3), arg(1, 2, 4, 3), arg(1, 2, 4, 3), is_causal=True),
        S(arg(1, 4, 3, 2), arg(1, 2, 5, 2), arg(1, 2, 5, 3), enable_gqa=True),
    ]),
    OpCase("softmin", F.softmin, TF.softmin, [S(arg(3, 4), dim=1)]),
    OpCase("cosine_similarity", F.cosine_similarity, TF.cosine_similarity, [
        S(arg(3, 4), arg(3, 4)),
        S(arg(2, 3, 4, noncontig=True), arg(3, 4), dim=-1),
        S(arg(3, 4), arg(1, 4), dim=1, eps=0.5),
        # broadcast along the reduced dim: the norm is that of the broadcast copies
        S(arg(1, 1, 2), arg(1, 3, 2), dim=1),
        S(arg(3, 4), arg(3, 1), dim=1),
    ]),
    OpCase("pairwise_distance", F.pairwise_distance, TF.pairwise_distance, [
        S(arg(3, 4), arg(3, 4)),
        S(arg(3, 4), arg(4), p=1.0, keepdim=True),
        S(arg(2, 3, 4), arg(2, 3, 4), p=3.0),
        S(arg(3, 4), arg(3, 4), p=float("inf")),
        S(arg(3, 4), arg(3, 4), p=-float("inf")),
        S(arg(3, 4), arg(3, 4), p=-1.5),
        S(arg(3, 4), arg(3, 4), p=0.5),
    ]),
    # p=0 counts the non-zero entries: no gradient to check
    OpCase("pairwise_distance_p0", F.pairwise_distance, TF.pairwise_distance, [
        S(arg(3, 4), arg(3, 4), p=0.0),
        S(Const(np.array([[0.0, 3.0, 1.0], [1.0, 1.0, 1.0]])),
          Const(np.array([[0.5, 3.0, 1.0], [1.0, 0.0, 1.0]])), p=0, eps=0.0),
    ], grad=False, gradgrad=False, jvp=False),
    OpCase("pixel_shuffle", F.pixel_shuffle, TF.pixel_shuffle, [
        S(arg(2, 8, 2, 3), Const(2)),
        S(arg(9, 2, 2, noncontig=True), Const(3)),
    ]),
    OpCase("pixel_unshuffle", F.pixel_unshuffle, TF.pixel_unshuffle, [
        S(arg(2, 2, 4, 6), Const(2)),
    ]),
]

test_forward, test_backward, test_gradcheck, test_gradgradcheck, test_jvp = op_tests(CASES)


def test_fully_masked_rows_give_zeros_and_finite_gradients_like_torch():
    rng = np.random.default_rng(0)
    q, k, v = (rng.standard_normal((1, 3, 4)) for _ in range(3))
    mask = np.array([[True, True, False], [False, False, False], [True, False, False]])
    ins = [ember.from_numpy(a.copy()).requires_grad_() for a in (q, k, v)]
    ref = [torch.from_numpy(a.copy()).requires_grad_() for a in (q, k, v)]
    out = F.scaled_dot_product_attention(*ins, attn_mask=ember.from_numpy(mask))
    expected = TF.scaled_dot_product_attention(*ref, attn_mask=torch.from_numpy(mask))
    np.testing.assert_allclose(out.detach().numpy(), expected.detach().numpy(), atol=1e-12)
    assert not out.detach().numpy()[0, 1].any()
    out.sum().backward()
    expected.sum().backward()
    for mine, theirs in zip(ins, ref, strict=True):
        np.testing.assert_allclose(mine.grad.numpy(), theirs.grad.numpy(), atol=1e-12)


@pytest.mark.parametrize("transform", ["jit", "vmap"])
def test_fully_masked_rows_follow_the_mask_under_transforms(transform):
    """The dead-row check reads the mask of each call, not the one seen while tracing."""
    rng = np.random.default_rng(1)
    q, k, v = (ember.from_numpy(rng.standard_normal((2, 3, 4))) for _ in range(3))
    some_dead = ember.tensor([[True, True, False], [False, False, False], [True, False, True]])
    masks = ember.stack([some_dead, ember.ones(3, 3, dtype=ember.bool)])

    def attend(q, k, v, m):
        return F.scaled_dot_product_attention(q, k, v, attn_mask=m)

    if transform == "jit":
        run = ember.jit.compile(attend)
        got = [run(q, k, v, m).numpy() for m in (masks, masks.flip(0), masks)]
        expected = [attend(q, k, v, m).numpy() for m in (masks, masks.flip(0), masks)]
    else:
        got = [ember.func.vmap(attend)(q, k, v, masks).numpy()]
        expected = [np.stack([attend(q[i], k[i], v[i], masks[i]).numpy() for i in range(2)])]
    for a, b in zip(got, expected, strict=True):
        np.testing.assert_allclose(a, b, atol=1e-12)
        assert np.isfinite(a).all()


def test_attention_dropout_uses_the_generator():
    q = ember.randn(2, 5, 4)
    a = F.scaled_dot_product_attention(q, q, q, dropout_p=0.5,
                                       generator=ember.Generator().manual_seed(1))
    b = F.scaled_dot_product_attention(q, q, q, dropout_p=0.5,
                                       generator=ember.Generator().manual_seed(1))
    np.testing.assert_array_equal(a.numpy(), b.numpy())


def test_attention_and_shuffle_errors():
    q = ember.randn(2, 3, 4)
    with pytest.raises(ember.ShapeError, match="feature size"):
        F.scaled_dot_product_attention(q, ember.randn(2, 3, 5), q)
    with pytest.raises(ValueError, match="is_causal"):
        F.scaled_dot_product_attention(q, q, q, attn_mask=ember.ones(3, 3), is_causal=True)
    with pytest.raises(ember.ShapeError, match="pixel_shuffle"):
        F.pixel_shuffle(ember.ones(1, 3, 2, 2), 2)


@pytest.mark.parametrize("dtype", ["float16", "bfloat16"])
@pytest.mark.parametrize("causal", [False, True])
def test_half_precision_attention_is_computed_in_float32_as_torch(dtype, causal):
    # the composite rounded Q Kᵀ, the softmax and P V each to the low dtype: up to 27x
    # torch's error against float64 (opdb51b); torch's math path computes in float32
    rng = np.random.default_rng(0)
    q, k, v = (rng.standard_normal((2, 4, 6, 8)) for _ in range(3))
    t_in = [torch.tensor(x).to(getattr(torch, dtype)) for x in (q, k, v)]
    e_in = [ember.tensor(x).to(getattr(ember, dtype)) for x in (q, k, v)]
    ref = TF.scaled_dot_product_attention(*[t.double() for t in t_in], is_causal=causal)
    want = TF.scaled_dot_product_attention(*t_in, is_causal=causal)
    got = F.scaled_dot_product_attention(*e_in, is_causal=causal)
    assert got.dtype.name == dtype
    t_err = (want.double() - ref).abs().max().item()
    e_err = np.abs(got.float().numpy().astype(np.float64) - ref.numpy()).max()
    assert e_err <= 1.5 * t_err + 1e-6, (e_err, t_err)


def test_half_query_with_float32_key_is_still_refused():
    # the float32 path is taken only when query, key and value share the half dtype (torch
    # refuses mixed dtypes too)
    q, k = ember.randn(2, 3, 4).bfloat16(), ember.randn(2, 3, 4)
    with pytest.raises(ember.errors.DTypeError):
        F.scaled_dot_product_attention(q, k, k)


@pytest.mark.parametrize("mask_dtype", ["int64", "uint8", "float64"])
def test_attention_mask_of_another_dtype_is_refused_as_torch(mask_dtype):
    # an integer 0/1 mask was added to the scores (not read as may/may not attend), and a
    # float64 mask for a float32 query failed inside the matmul; torch refuses both
    q = np.random.default_rng(0).standard_normal((2, 3, 4)).astype(np.float32)
    with pytest.raises(RuntimeError, match="attn_mask dtype"):
        TF.scaled_dot_product_attention(*[torch.tensor(q)] * 3, attn_mask=torch.zeros(
            3, 3, dtype=getattr(torch, mask_dtype)))
    with pytest.raises(ember.errors.DTypeError, match="attn_mask must be bool, float32 or"):
        F.scaled_dot_product_attention(*[ember.tensor(q)] * 3, attn_mask=ember.zeros(
            3, 3, dtype=getattr(ember, mask_dtype)))
    q64 = ember.tensor(q.astype(np.float64))  # a float32 mask for a float64 query still runs
    out = F.scaled_dot_product_attention(q64, q64, q64, attn_mask=ember.zeros(3, 3))
    assert out.dtype == ember.float64


@pytest.mark.parametrize("path", ["composite", "blockwise"])
@pytest.mark.parametrize("kind", ["bool", "float"])
def test_attention_mask_that_enlarges_the_weights_is_refused_as_torch(path, kind):
    # torch: the mask must broadcast *to* the weights (…, L, S); ember gave a bigger output on
    # the composite path and a NumPy broadcast error from inside the blockwise kernel
    from ember.errors import ShapeError
    from ember.nn.attention import SDPBackend, sdpa_kernel

    rng = np.random.default_rng(0)
    if path == "composite":
        q, mask = rng.standard_normal((4, 6)), rng.standard_normal((3, 4, 4))
    else:
        q, mask = rng.standard_normal((1, 8, 512, 16)), rng.standard_normal((2, 1, 512, 512))
    mask = (mask > 0) if kind == "bool" else mask.astype(np.float32)
    q = q.astype(np.float32)
    with pytest.raises(RuntimeError, match="shape"):
        TF.scaled_dot_product_attention(*[torch.tensor(q)] * 3, attn_mask=torch.tensor(mask))
    backends = [SDPBackend.MATH] + ([SDPBackend.FLASH_ATTENTION] if path == "blockwise" else [])
    for backend in backends:
        with sdpa_kernel(backend), pytest.raises(
                ShapeError, match=rf"attn_mask of shape {re.escape(str(mask.shape))} does not "
                                  r"broadcast to the attention weights' shape"):
            F.scaled_dot_product_attention(*[ember.tensor(q)] * 3, attn_mask=ember.tensor(mask))
    out = F.scaled_dot_product_attention(*[ember.tensor(q)] * 3, attn_mask=ember.tensor(mask[0]))
    assert out.shape == q.shape


@pytest.mark.parametrize("length", [4, 512])  # (the composite path, the blockwise one)
def test_attention_mask_error_with_gqa_names_the_callers_key_shape(length):
    # the message named the key after enable_gqa's head repeat, (1, 8, L, 16), not the
    # caller's (1, 2, L, 16)
    from ember.errors import ShapeError

    q, kv = ember.randn(1, 8, length, 16), ember.randn(1, 2, length, 16)
    mask = ember.ones(3, length, length, dtype=ember.bool)
    with pytest.raises(ShapeError, match=rf"weights' shape \(1, 8, {length}, {length}\) .* of "
                                         rf"query \(1, 8, {length}, 16\) and key "
                                         rf"\(1, 2, {length}, 16\)\. Hint"):
        F.scaled_dot_product_attention(q, kv, kv, attn_mask=mask, enable_gqa=True)


def test_query_and_key_batches_that_do_not_broadcast_keep_matmuls_error_with_a_mask():
    q, k = ember.ones(2, 3, 4, 8), ember.ones(3, 3, 4, 8)
    with pytest.raises(ember.errors.ShapeError, match=r"matmul: \(2, 3, 4, 8\) @ \(3, 3, 8, 4\)"):
        F.scaled_dot_product_attention(q, k, k, attn_mask=ember.ones(4, 4, dtype=ember.bool))
