"""ember.nn.attention.flex_attention against torch.nn.attention.flex_attention: block masks,
outputs and log-sum-exp (PyTorch's eager path), gradients (PyTorch's math implementation,
since its CPU flex_attention has no backward), gradcheck, work skipped, errors."""

import math
import warnings

import numpy as np
import pytest
import torch
import torch.nn.attention.flex_attention as tfa
from torch._higher_order_ops.flex_attention import math_attention

import ember
from ember.autograd import gradcheck, gradgradcheck
from ember.errors import ShapeError
from ember.nn.attention.flex_attention import (
    AuxRequest,
    BlockMask,
    and_masks,
    create_block_mask,
    create_mask,
    flex_attention,
    noop_mask,
    or_masks,
)
from ember.nn.attention.flex_attention import _plan as plan

L, S, E, BLOCK = 37, 45, 8, 8  # lengths not multiples of the block size
DOC = np.repeat([0, 0, 1, 2], [10, 12, 11, 12])  # document id of each of S positions


def causal(b, h, q, kv):
    return q >= kv


def sliding(b, h, q, kv):
    return (q - kv).abs() <= 9


def prefix_lm(b, h, q, kv):
    return (kv < 11) | (q >= kv)


def document(lib):
    ids = lib.tensor(np.stack([DOC, DOC[::-1]]))  # per batch entry

    def same_doc(b, h, q, kv):
        return ids[b, q] == ids[b, kv]
    return same_doc


MASKS = {"causal": lambda lib: causal, "sliding": lambda lib: sliding,
         "prefix_lm": lambda lib: prefix_lm, "document": document,
         "causal_document": lambda lib: (and_masks if lib is ember else tfa.and_masks)(
             causal, document(lib))}


def alibi(lib):
    slopes = lib.tensor([0.5, 0.25, 0.125, 0.0625])

    def mod(score, b, h, q, kv):
        return score - slopes[h] * (q - kv).abs()
    return mod


@pytest.fixture(autouse=True)
def _eager_torch(monkeypatch):
    """PyTorch's flex_attention without torch.compile (its own debugging switch), quietly."""
    monkeypatch.setattr(tfa, "_FLEX_ATTENTION_DISABLE_COMPILE_DEBUG", True)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        yield


def _inputs(batch=2, heads=4, kv_heads=4, dtype=np.float32, seed=0):
    rng = np.random.default_rng(seed)
    return [rng.standard_normal((batch, h, n, E)).astype(dtype)
            for h, n in ((heads, L), (kv_heads, S), (kv_heads, S))]


@pytest.mark.parametrize("name", MASKS)
def test_block_mask_matches_torch(name):
    bm = create_block_mask(MASKS[name](ember), 2, 1, L, S, BLOCK_SIZE=BLOCK)
    tbm = tfa.create_block_mask(MASKS[name](torch), 2, 1, L, S, device="cpu", BLOCK_SIZE=BLOCK)
    for attr in ("kv_num_blocks", "kv_indices", "full_kv_num_blocks", "full_kv_indices",
                 "q_num_blocks", "q_indices", "full_q_num_blocks", "full_q_indices"):
        np.testing.assert_array_equal(getattr(bm, attr).numpy(), getattr(tbm, attr).numpy())
    np.testing.assert_array_equal(bm.to_dense().numpy(), tbm.to_dense().numpy())
    assert bm.shape == tbm.shape and bm.BLOCK_SIZE == tbm.BLOCK_SIZE
    assert bm.sparsity() == pytest.approx(tbm.sparsity())
    assert repr(bm) == repr(tbm).replace("torch.Size", "ember.Size")
    np.testing.assert_array_equal(
        create_mask(MASKS[name](ember), 2, 1, L, S).numpy(),
        tfa.create_mask(MASKS[name](torch), 2, 1, L, S, device="cpu").numpy())


@pytest.mark.parametrize("name, mod, gqa", [
    ("causal", None, False), ("sliding", alibi, False), ("prefix_lm", None, True),
    ("document", alibi, True), ("causal_document", None, False), (None, alibi, False)])
def test_forward_and_lse_match_torch(name, mod, gqa):
    arrays = _inputs(kv_heads=2 if gqa else 4)
    kwargs = [{"enable_gqa": gqa, "return_aux": AuxRequest(lse=True, max_scores=True)},
              {"enable_gqa": gqa, "return_aux": tfa.AuxRequest(lse=True)}]  # CPU: no max
    for lib, kw in zip((ember, torch), kwargs):
        if name is not None:
            make = create_block_mask if lib is ember else tfa.create_block_mask
            kw["block_mask"] = make(MASKS[name](lib), 2, 1, L, S, BLOCK_SIZE=BLOCK,
                                    **({} if lib is ember else {"device": "cpu"}))
        if mod is not None:
            kw["score_mod"] = mod(lib)
    out, aux = flex_attention(*map(ember.from_numpy, arrays), **kwargs[0])
    t_out, t_aux = tfa.flex_attention(*map(torch.from_numpy, arrays), **kwargs[1])
    np.testing.assert_allclose(out.numpy(), t_out.numpy(), atol=2e-6)
    np.testing.assert_allclose(aux.lse.numpy(), t_aux.lse.numpy(), rtol=1e-5, atol=1e-6)
    t_max = math_attention(*map(torch.from_numpy, arrays), kwargs[1].get("score_mod", _identity),
                           (None, getattr(kwargs[1].get("block_mask"), "mask_mod", tfa.noop_mask)),
                           1 / math.sqrt(E), {})[2] * math.log(2)
    np.testing.assert_allclose(aux.max_scores.numpy(), t_max.numpy(), rtol=1e-5, atol=1e-6)
    assert out.dtype is ember.float32 and aux.lse.dtype is ember.float32


def test_fully_masked_rows_give_zeros_and_minus_inf():
    q, k, v = _inputs(1, 1, 1)
    late = [lambda b, h, qi, kv: (qi >= kv) & (qi > 20)] * 2
    bm = create_block_mask(late[0], None, None, L, S, BLOCK_SIZE=BLOCK)
    tbm = tfa.create_block_mask(late[1], None, None, L, S, device="cpu", BLOCK_SIZE=BLOCK)
    qe = ember.from_numpy(q).requires_grad_()
    out, lse = flex_attention(qe, ember.from_numpy(k), ember.from_numpy(v), block_mask=bm,
                              return_lse=True)
    t_out, t_lse = tfa.flex_attention(*map(torch.from_numpy, (q, k, v)), block_mask=tbm,
                                      return_lse=True)
    np.testing.assert_allclose(out.detach().numpy(), t_out.numpy(), atol=2e-6)
    np.testing.assert_array_equal(out.detach().numpy()[0, 0, :21], 0)
    np.testing.assert_allclose(lse.detach().numpy(), t_lse.numpy(), rtol=1e-5)  # -inf: dead
    assert np.isneginf(lse.detach().numpy()[0, 0, :21]).all()
    (out.sum() + ember.where(ember.isneginf(lse), 0.0, lse).sum()).backward()
    assert np.isfinite(qe.grad.numpy()).all()


def _identity(score, b, h, q, kv):
    return score


def _torch_math(q, k, v, score_mod, mask_mod, scale):
    """PyTorch's eager (math) flex attention: output and natural-log lse, differentiable."""
    mask = (None, mask_mod or tfa.noop_mask)
    out, lse2, _ = math_attention(q, k, v, score_mod or _identity, mask, scale, {})
    return out, lse2 * math.log(2)


@pytest.mark.parametrize("name, gqa", [("causal", False), ("document", True), (None, False)])
def test_gradients_match_torch_including_a_captured_bias_table(name, gqa):
    arrays = _inputs(kv_heads=2 if gqa else 4, seed=1)
    table = np.random.default_rng(2).standard_normal(L + S - 1).astype(np.float32)
    rng = np.random.default_rng(3)
    g_out, g_lse = rng.standard_normal((2, 4, L, E)), rng.standard_normal((2, 4, L))
    grads = {}
    for lib in (ember, torch):
        leaves = [lib.from_numpy(a.copy()).requires_grad_() for a in (*arrays, table)]
        bias = leaves[3]

        def relative(score, b, h, qi, kv, bias=bias):
            return score + bias[qi - kv + S - 1]
        mask_mod = MASKS[name](lib) if name else None
        if lib is ember:
            bm = create_block_mask(mask_mod, 2, 1, L, S, BLOCK_SIZE=BLOCK) if name else None
            out, lse = flex_attention(*leaves[:3], score_mod=relative, block_mask=bm,
                                      enable_gqa=gqa, scale=0.3, return_aux=AuxRequest(True))
            lse = lse.lse
        else:
            out, lse = _torch_math(*leaves[:3], relative, mask_mod, 0.3)
        loss = (out * lib.tensor(g_out, dtype=out.dtype)).sum() + (
            lse * lib.tensor(g_lse, dtype=lse.dtype)).sum()
        loss.backward()
        grads[lib] = [t.grad.numpy() for t in leaves]
    for ours, theirs in zip(grads[ember], grads[torch]):
        np.testing.assert_allclose(ours, theirs, rtol=2e-4, atol=2e-5)


def test_gradcheck_float64_block_sparse_with_learnable_bias():
    rng = np.random.default_rng(4)
    q, k, v = (ember.tensor(rng.standard_normal((1, 2, n, 2)), requires_grad=True)
               for n in (4, 5, 5))
    table = ember.tensor(rng.standard_normal(2), requires_grad=True)
    bm = create_block_mask(lambda b, h, qi, kv: (kv < 1) | (qi >= kv), 1, 2, 4, 5, BLOCK_SIZE=2)

    def attend(q, k, v, table):
        out, lse = flex_attention(q, k, v, score_mod=lambda s, b, h, qi, kv: s * table[h],
                                  block_mask=bm, return_lse=True)
        return out, lse
    assert gradcheck(attend, (q, k, v, table))
    assert gradgradcheck(lambda q: attend(q, k, v, table)[0], (q,))


def test_dense_path_gradcheck_float64_and_dtype():
    rng = np.random.default_rng(5)
    q, k, v = (ember.tensor(rng.standard_normal((1, 1, n, 2)), requires_grad=True)
               for n in (3, 4, 4))
    assert gradcheck(lambda q, k, v: flex_attention(q, k, v), (q, k, v))
    assert flex_attention(q, k, v).dtype is ember.float64


def test_block_sparse_strips_skip_masked_blocks():
    def columns(mask_mod):
        return sum((s.rows.stop - s.rows.start) * sum(b - a for a, b in s.runs)
                   for s in plan(create_block_mask(mask_mod, 1, 1, 1024, 1024), 1024, 1024))
    dense = 1024 * 1024
    assert columns(causal) == dense * 36 // 64  # 8 query blocks: 1 + 2 + … + 8 of 8 each
    assert columns(lambda b, h, q, kv: (q - kv).abs() < 128) <= dense * 22 // 64
    assert all(not s.partial for s in plan(create_block_mask(
        noop_mask, 1, 1, 256, 256), 256, 256))  # full blocks skip the mask_mod


def test_or_masks_noop_mask_and_kv_batch_broadcast():
    m = or_masks(lambda b, h, q, kv: q == kv, lambda b, h, q, kv: kv == 0)
    assert create_mask(m, 1, 1, 3, 3)[0, 0].tolist() == [[True, False, False],
                                                         [True, True, False],
                                                         [True, False, True]]
    q, k, v = _inputs(2, 4, 4)
    bm = create_block_mask(causal, 2, 1, L, S, BLOCK_SIZE=BLOCK)
    tbm = tfa.create_block_mask(causal, 2, 1, L, S, device="cpu", BLOCK_SIZE=BLOCK)
    out = flex_attention(ember.from_numpy(q), ember.from_numpy(k[:1]), ember.from_numpy(v[:1]),
                         block_mask=bm)
    ref = tfa.flex_attention(torch.from_numpy(q), torch.from_numpy(k[:1]),
                             torch.from_numpy(v[:1]), block_mask=tbm)
    np.testing.assert_allclose(out.numpy(), ref.numpy(), atol=2e-6)


def test_indexing_and_from_kv_blocks_match_torch():
    bm = create_block_mask(document(ember), 2, 2, L, S, BLOCK_SIZE=BLOCK)
    tbm = tfa.create_block_mask(document(torch), 2, 2, L, S, device="cpu", BLOCK_SIZE=BLOCK)
    for index in [1, (0, 1), (slice(0, 2), slice(1, 2))]:
        np.testing.assert_array_equal(bm[index].to_dense().numpy(),
                                      tbm[index].to_dense().numpy())
        np.testing.assert_array_equal(bm[index].q_indices.numpy(), tbm[index].q_indices.numpy())
    q = ember.randn(1, 2, L, E)
    with pytest.raises(RuntimeError, match="sliced BlockMask"):
        flex_attention(q, q[:, :, :S] if S <= L else q, q, block_mask=bm[0])
    fb = BlockMask.from_kv_blocks(bm.kv_num_blocks, bm.kv_indices, BLOCK_SIZE=BLOCK,
                                  seq_lengths=(L, S))
    tfb = tfa.BlockMask.from_kv_blocks(tbm.kv_num_blocks, tbm.kv_indices, BLOCK_SIZE=BLOCK,
                                       seq_lengths=(L, S))
    np.testing.assert_array_equal(fb.q_indices.numpy(), tfb.q_indices.numpy())
    assert fb.sparsity() == pytest.approx(tfb.sparsity())


def test_bad_inputs_raise_clear_errors():
    q = ember.randn(1, 2, 8, 4)
    k = ember.randn(1, 1, 8, 4)
    with pytest.raises(NotImplementedError, match="4-D"):
        flex_attention(q[0], q[0], q[0])
    with pytest.raises(ValueError, match="same dtype"):
        flex_attention(q, q.double(), q)
    with pytest.raises(TypeError, match="floating"):
        flex_attention(q.long(), q.long(), q.long())
    with pytest.raises(ValueError, match="embedding dimension"):
        flex_attention(q, q[..., :3], q[..., :3])
    with pytest.raises(ValueError, match="enable_gqa"):
        flex_attention(q, k, k)
    with pytest.raises(ValueError, match="multiple"):
        flex_attention(ember.randn(1, 3, 8, 4), ember.randn(1, 2, 8, 4),
                       ember.randn(1, 2, 8, 4), enable_gqa=True)
    with pytest.raises(ValueError, match="block_mask was created"):
        flex_attention(q, q, q, block_mask=create_block_mask(causal, 1, 1, 16, 16))
    with pytest.raises(ValueError, match="batch size"):
        flex_attention(ember.randn(2, 2, 8, 4), q, q)
    with pytest.raises(ValueError, match="return_aux"):
        flex_attention(q, q, q, return_lse=True, return_aux=AuxRequest(lse=True))
    with pytest.raises(TypeError, match="mask_mod"):
        create_block_mask(lambda s, b, h, qi, kv: s, 1, 1, 8, 8)
    with pytest.raises(ValueError, match="kv_num_blocks has shape"):
        flex_attention(q, q, q, block_mask=create_block_mask(causal, 3, 1, 8, 8))
    with pytest.raises(TypeError, match="callable"):
        flex_attention(q, q, q, score_mod=1.0)
    with pytest.raises(ShapeError, match=r"score_mod returned shape \(1, 2, 8, 8, 1\)"):
        flex_attention(q, q, q, score_mod=lambda s, b, h, qi, kv: s[..., None])


def test_create_mask_of_a_score_mod_half_inputs_and_jit():
    def window(lib):
        def mod(score, b, h, q, kv):
            return lib.where((q - kv).abs() < 3, score, float("-inf"))
        return mod
    np.testing.assert_array_equal(create_mask(window(ember), 1, 2, 5, 6).numpy(),
                                  tfa.create_mask(window(torch), 1, 2, 5, 6, device="cpu").numpy())
    q, k, v = _inputs(1, 2, 2)
    bm = create_block_mask(sliding, None, None, L, S, BLOCK_SIZE=BLOCK)
    out, lse = flex_attention(*(ember.from_numpy(a).half() for a in (q, k, v)), block_mask=bm,
                              score_mod=window(ember), return_lse=True)
    t_out, t_lse = tfa.flex_attention(
        *(torch.from_numpy(a).half() for a in (q, k, v)), score_mod=window(torch),
        block_mask=tfa.create_block_mask(sliding, None, None, L, S, device="cpu",
                                         BLOCK_SIZE=BLOCK), return_lse=True)
    assert out.dtype is ember.float16 and lse.dtype is ember.float32
    np.testing.assert_allclose(out.float().numpy(), t_out.float().numpy(), atol=2e-3)
    np.testing.assert_allclose(lse.numpy(), t_lse.numpy(), rtol=1e-3)
    qe, ke, ve = map(ember.from_numpy, (q, k, v))
    compiled = ember.jit.compile(lambda x: flex_attention(x, ke, ve, block_mask=bm))
    np.testing.assert_allclose(compiled(qe).numpy(),
                               flex_attention(qe, ke, ve, block_mask=bm).numpy(), atol=1e-6)


@pytest.mark.parametrize("make", [lambda lib: lambda s, b, h, q, kv: kv * 1.0,
                                  lambda lib: lambda s, b, h, q, kv: q * 0.5,
                                  lambda lib: lambda s, b, h, q, kv: h * 1.0 + 0 * (q + kv),
                                  lambda lib: lambda s, b, h, q, kv: lib.tensor(2.0)])
def test_score_mod_whose_result_does_not_use_the_score_broadcasts(make):
    q, k, v = _inputs(2, 4, 4)
    bm = create_block_mask(causal, None, None, L, S, BLOCK_SIZE=BLOCK)
    tbm = tfa.create_block_mask(causal, None, None, L, S, device="cpu", BLOCK_SIZE=BLOCK)
    for kw, t_kw in (({}, {}), ({"block_mask": bm}, {"block_mask": tbm})):
        out, lse = flex_attention(*map(ember.from_numpy, (q, k, v)), score_mod=make(ember),
                                  return_lse=True, **kw)
        t_out, t_lse = tfa.flex_attention(*map(torch.from_numpy, (q, k, v)),
                                          score_mod=make(torch), return_lse=True, **t_kw)
        np.testing.assert_allclose(out.numpy(), t_out.numpy(), atol=2e-6)
        np.testing.assert_allclose(lse.numpy(), t_lse.numpy(), rtol=1e-5)


def test_block_mask_integer_index_out_of_range_raises():
    bm = create_block_mask(causal, 2, 3, L, S, BLOCK_SIZE=BLOCK)
    np.testing.assert_array_equal(bm[-1, -2].kv_indices.numpy(), bm[1, 1].kv_indices.numpy())
    for index in (2, -3, (0, 3), (slice(None), -4)):
        with pytest.raises(IndexError, match="BlockMask: index"):
            bm[index]


def test_mask_mod_that_does_not_return_booleans_raises():
    def as_int(b, h, q, kv):
        return (q >= kv).int()
    with pytest.raises(AssertionError):
        tfa.create_block_mask(as_int, 1, 1, 8, 8, device="cpu", BLOCK_SIZE=4)
    with pytest.raises(TypeError, match="create_block_mask: mask_mod must return booleans"):
        create_block_mask(as_int, 1, 1, 8, 8, BLOCK_SIZE=4)
    assert create_mask(as_int, 1, 1, 2, 2).dtype is ember.int32  # as PyTorch's
    bm = create_block_mask(causal, 1, 1, 8, 8, BLOCK_SIZE=4)
    bm.mask_mod = as_int
    q = ember.randn(1, 1, 8, 4)
    with pytest.raises(TypeError, match="flex_attention: mask_mod must return booleans"):
        flex_attention(q, q, q, block_mask=bm)


def test_empty_queries_and_empty_keys():
    q, k = ember.zeros(1, 2, 0, 4), ember.zeros(1, 2, 8, 4)
    out, lse = flex_attention(q, k, k, block_mask=create_block_mask(causal, 1, 1, 0, 8),
                              return_lse=True)
    assert out.shape == (1, 2, 0, 4) and lse.shape == (1, 2, 0)
    with pytest.raises(IndexError, match="flex_attention: key and value have length 0"):
        flex_attention(k, q, q)
    with pytest.raises(IndexError, match="flex_attention: key and value have length 0"):
        flex_attention(k, q, q, block_mask=create_block_mask(causal, 1, 1, 8, 0))


@pytest.mark.parametrize("size", [0, -4, (8, 0)])
def test_block_size_must_be_positive(size):
    with pytest.raises(ValueError, match="create_block_mask: BLOCK_SIZE must be positive"):
        create_block_mask(causal, 1, 1, 8, 8, BLOCK_SIZE=size)
    with pytest.raises(ValueError, match="BlockMask.from_kv_blocks: BLOCK_SIZE must be"):
        BlockMask.from_kv_blocks(ember.ones(1, 1, 1, dtype=ember.int32),
                                 ember.zeros(1, 1, 1, 1, dtype=ember.int32), BLOCK_SIZE=size)


@pytest.mark.parametrize("compute_q_blocks", [True, False])
def test_block_indices_out_of_range_raise(compute_q_blocks):
    def build():
        bm = BlockMask.from_kv_blocks(ember.tensor([[[2, 1]]], dtype=ember.int32),
                                      ember.tensor([[[[0, 2], [-1, 0]]]], dtype=ember.int32),
                                      BLOCK_SIZE=4, compute_q_blocks=compute_q_blocks)
        q = ember.randn(1, 1, 8, 4)
        return flex_attention(q, q, q, block_mask=bm)
    with pytest.raises(IndexError, match=r"BlockMask: a listed key/value block index is out "
                                         r"of range \[0, 2\): got \[-1, 2\]"):
        build()
