"""Memory-efficient attention (flash-style): ``softmax(Q Kᵀ · scale + mask) V`` computed over
blocks of queries and keys with an online softmax, so no L×S matrix is ever formed.

Two primitives: ``scaled_dot_product_attention`` (outputs the attention and each query row's
log-sum-exp) and its backward ``scaled_dot_product_attention_backward``, which recomputes the
score blocks from Q, K and the saved log-sum-exp. Memory grows linearly with the sequence
length (block size × block size per step). Under ``create_graph`` the vjp falls back to the
composite (matmul + softmax) so higher derivatives stay exact.
"""

from __future__ import annotations

import math

from ember import dtypes
from ember.autograd.grad_mode import GRAD
from ember.ops.primitive import Primitive, TensorSpec, apply, primitive
from ember.tensor import Tensor

__all__: list[str] = []

BLOCK = 256  # queries and keys per block


def _masked_scores(xp, q_blk, k_blk, mask, i0, j0, causal, kind, scale):
    """Scores of one (query block, key block) pair, masked: (…, bq, bk) in float32/64."""
    s = xp.matmul(q_blk, xp.swapaxes(k_blk, -1, -2))
    s *= scale
    bq, bk = s.shape[-2], s.shape[-1]
    if causal and j0 + bk - 1 > i0:  # (a block wholly below the diagonal needs no mask)
        rows = xp.arange(i0, i0 + bq)[:, None]
        cols = xp.arange(j0, j0 + bk)[None, :]
        s = xp.where(cols > rows, -xp.inf, s)
    elif kind == "bool":
        s = xp.where(mask[..., i0:i0 + bq, j0:j0 + bk], s, -xp.inf)
    elif kind == "add":
        s = s + mask[..., i0:i0 + bq, j0:j0 + bk]
    return s


def _key_blocks(S, i0, bq, causal, block):
    """Start of each key block a query block [i0, i0+bq) needs (causal: keys ≤ last query)."""
    end = min(S, i0 + bq) if causal else S
    return range(0, end, block)


def _acc_dtype(a):
    """The dtype blocks are computed in: float32 for bfloat16/float16 inputs, else their own."""
    return a.dtype if a.dtype.itemsize >= 4 else dtypes.float32.np


@primitive
class BlockwiseAttention(Primitive):
    name = "scaled_dot_product_attention"
    nout = 2
    save_outputs = True

    def forward(self, xp, q, k, v, *mask, causal, kind, scale, block):
        acc = _acc_dtype(q)
        mask = mask[0] if mask else None
        if mask is not None:
            mask = xp.broadcast_to(mask, q.shape[:-1] + (k.shape[-2],))
        qa, ka, va = q.astype(acc, copy=False), k.astype(acc, copy=False), \
            v.astype(acc, copy=False)
        L, S = q.shape[-2], k.shape[-2]
        lead = q.shape[:-2]
        out = xp.empty(lead + (L, v.shape[-1]), dtype=acc)
        lse = xp.empty(lead + (L,), dtype=acc)
        for i0 in range(0, L, block):
            q_blk = qa[..., i0:i0 + block, :]
            bq = q_blk.shape[-2]
            m = xp.full(lead + (bq,), -xp.inf, dtype=acc)
            denom = xp.zeros(lead + (bq,), dtype=acc)
            o = xp.zeros(lead + (bq, v.shape[-1]), dtype=acc)
            for j0 in _key_blocks(S, i0, bq, causal, block):
                s = _masked_scores(xp, q_blk, ka[..., j0:j0 + block, :], mask, i0, j0, causal,
                                   kind, scale)
                m_new = xp.maximum(m, s.max(axis=-1))
                safe = xp.where(xp.isneginf(m_new), 0, m_new)
                p = xp.exp(s - safe[..., None])
                alpha = xp.exp(m - safe)
                denom = denom * alpha + p.sum(axis=-1)
                o = o * alpha[..., None] + xp.matmul(p, va[..., j0:j0 + block, :])
                m = m_new
            alive = denom > 0
            out[..., i0:i0 + bq, :] = xp.where(alive[..., None],
                                               o / xp.where(alive, denom, 1)[..., None], 0)
            # a row that may attend to nothing: lse = +inf, so its probabilities are all 0
            lse[..., i0:i0 + bq] = xp.where(alive, m + xp.log(xp.where(alive, denom, 1)),
                                            xp.inf)
        return out.astype(q.dtype, copy=False), lse

    def infer(self, q, k, v, *mask, causal, kind, scale, block):
        lead = q.shape[:-2]
        acc = dtypes.float32 if q.dtype.itemsize < 4 else q.dtype
        return (TensorSpec(lead + (q.shape[-2], v.shape[-1]), q.dtype),
                TensorSpec(lead + (q.shape[-2],), acc))

    def flops(self, q, k, v, *mask, causal, kind, scale, block):
        n = math.prod(q.shape[:-2]) * q.shape[-2] * k.shape[-2]
        return 2 * n * (q.shape[-1] + v.shape[-1]) // (2 if causal else 1)

    def vjp(self, ctx, g_out, g_lse):
        q, k, v, *mask = ctx.inputs
        params = ctx.params
        if g_out is None:
            return (None,) * len(ctx.inputs)
        if GRAD.enabled:  # create_graph: the composite's rules give exact higher derivatives
            return _composite_vjp(q, k, v, mask, params, g_out)
        dq, dk, dv = apply(BlockwiseAttentionBackward, q, k, v, *mask, ctx.output(0),
                           ctx.output(1), g_out, **params)
        return (dq, dk, dv) + (None,) * len(mask)

    def jvp(self, ctx, dq, dk, dv, *dmask):
        q, k, v, *mask = ctx.inputs
        from ember.ops.attention import naive_attention

        p = naive_attention(q, k, v, mask[0] if mask else None, ctx.params, weights=True)
        ds = (dq @ k.transpose(-2, -1) + q @ dk.transpose(-2, -1)) * ctx.params["scale"]
        if dmask and ctx.params["kind"] == "add":
            ds = ds + dmask[0]
        dp = p * (ds - (p * ds).sum(-1, keepdim=True))
        d_out = dp @ v + p @ dv
        return d_out, (p * ds).sum(-1)


def _composite_vjp(q, k, v, mask, params, g_out):
    from ember.autograd.engine import grad
    from ember.ops.attention import naive_attention

    wanted = [t for t in (q, k, v) if t.requires_grad]
    out = naive_attention(q, k, v, mask[0] if mask else None, params)
    found = iter(grad(out, wanted, g_out, create_graph=True, allow_unused=True))
    return tuple(next(found) if t.requires_grad else None for t in (q, k, v)) + \
        (None,) * len(mask)


@primitive
class BlockwiseAttentionBackward(Primitive):
    name = "scaled_dot_product_attention_backward"
    nout = 3
    differentiable = False

    def forward(self, xp, q, k, v, *rest, causal, kind, scale, block):
        *mask, out, lse, g = rest
        acc = _acc_dtype(q)
        mask = xp.broadcast_to(mask[0], q.shape[:-1] + (k.shape[-2],)) if mask else None
        qa, ka, va = q.astype(acc, copy=False), k.astype(acc, copy=False), \
            v.astype(acc, copy=False)
        ga, oa = g.astype(acc, copy=False), out.astype(acc, copy=False)
        delta = (ga * oa).sum(axis=-1)  # rowwise dO·O
        dq, dk, dv = xp.zeros_like(qa), xp.zeros_like(ka), xp.zeros_like(va)
        L, S = q.shape[-2], k.shape[-2]
        for i0 in range(0, L, block):
            sl = slice(i0, i0 + block)
            q_blk, g_blk = qa[..., sl, :], ga[..., sl, :]
            bq = q_blk.shape[-2]
            lse_blk, d_blk = lse[..., sl, None], delta[..., sl, None]
            for j0 in _key_blocks(S, i0, bq, causal, block):
                sk = slice(j0, j0 + block)
                k_blk, v_blk = ka[..., sk, :], va[..., sk, :]
                s = _masked_scores(xp, q_blk, k_blk, mask, i0, j0, causal, kind, scale)
                p = xp.exp(s - lse_blk)
                dv[..., sk, :] += xp.matmul(xp.swapaxes(p, -1, -2), g_blk)
                ds = p * (xp.matmul(g_blk, xp.swapaxes(v_blk, -1, -2)) - d_blk)
                ds *= scale
                dq[..., sl, :] += xp.matmul(ds, k_blk)
                dk[..., sk, :] += xp.matmul(xp.swapaxes(ds, -1, -2), q_blk)
        return dq.astype(q.dtype), dk.astype(k.dtype), dv.astype(v.dtype)

    def infer(self, q, k, v, *rest, causal, kind, scale, block):
        return (TensorSpec(q.shape, q.dtype), TensorSpec(k.shape, k.dtype),
                TensorSpec(v.shape, v.dtype))


def blockwise_attention(q: Tensor, k: Tensor, v: Tensor, mask: Tensor | None, causal: bool,
                        scale: float, block: int = BLOCK) -> Tensor:
    """The memory-efficient attention; ``mask`` boolean (True: attend) or additive."""
    kind = None if mask is None else ("bool" if mask.dtype is dtypes.bool_ else "add")
    extra = () if mask is None else (mask,)
    out, _ = apply(BlockwiseAttention, q, k, v, *extra, causal=causal, kind=kind,
                   scale=float(scale), block=int(block))
    return out

