"""``MultiheadAttention`` with PyTorch's parameter layout (``in_proj_weight``,
``in_proj_bias``, ``out_proj``; ``q/k/v_proj_weight`` when ``kdim``/``vdim`` differ), so state
dicts load across."""

from __future__ import annotations

import math
from typing import Any

import ember
from ember.nn import functional as F
from ember.nn import init
from ember.nn.linear import Linear, _empty
from ember.nn.module import Module
from ember.tensor import Tensor

__all__ = ["MultiheadAttention"]


def _additive(mask: Tensor | None, dtype: Any, name: str) -> Tensor | None:
    """A boolean mask (True = not allowed) as ``-inf``/0; a float mask as it is."""
    if mask is None:
        return None
    if mask.dtype == ember.bool:
        return ember.zeros(tuple(mask.shape), dtype=dtype).masked_fill(mask, float("-inf"))
    if not mask.dtype.is_floating_point:
        raise TypeError(f"MultiheadAttention: {name} must be bool (True = not allowed) or "
                        f"floating (added to the scores), got {mask.dtype}. Hint: convert a "
                        f"0/1 mask with mask.bool()")
    return mask.to(dtype)


class MultiheadAttention(Module):
    """Attention with ``num_heads`` heads: ``softmax(q kᵀ/√d + mask) v``, projected in and out.

    ``forward(query, key, value, key_padding_mask=None, need_weights=True, attn_mask=None,
    average_attn_weights=True, is_causal=False)`` returns ``(output, weights or None)``.
    Boolean masks mark positions *not* to attend to; float masks are added to the scores.
    ``is_causal=True`` without ``attn_mask`` builds the causal mask (PyTorch requires the mask
    as well). ``add_bias_kv`` and ``add_zero_attn`` are not supported.

    Example:
        >>> mha = nn.MultiheadAttention(8, 2, batch_first=True)
        >>> out, w = mha(x := ember.randn(3, 5, 8), x, x)
        >>> out.shape, w.shape
        ((3, 5, 8), (3, 5, 5))
    """

    def __init__(self, embed_dim: int, num_heads: int, dropout: float = 0.0, bias: bool = True,
                 add_bias_kv: bool = False, add_zero_attn: bool = False,
                 kdim: int | None = None, vdim: int | None = None, batch_first: bool = False,
                 device: Any = None, dtype: Any = None) -> None:
        super().__init__()
        if embed_dim <= 0 or num_heads <= 0:
            raise ValueError(f"embed_dim and num_heads must be greater than 0, got "
                             f"embed_dim={embed_dim} and num_heads={num_heads} instead")
        if embed_dim % num_heads:
            raise ValueError(f"embed_dim ({embed_dim}) must be divisible by num_heads "
                             f"({num_heads})")
        if add_bias_kv or add_zero_attn:
            raise NotImplementedError("MultiheadAttention: add_bias_kv and add_zero_attn are "
                                      "not supported in Ember")
        self.embed_dim, self.num_heads, self.dropout = embed_dim, num_heads, dropout
        self.kdim = kdim if kdim is not None else embed_dim
        self.vdim = vdim if vdim is not None else embed_dim
        self._qkv_same_embed_dim = self.kdim == embed_dim and self.vdim == embed_dim
        self.batch_first, self.head_dim = batch_first, embed_dim // num_heads
        kw = {"dtype": dtype, "device": device}
        if self._qkv_same_embed_dim:
            self.in_proj_weight = _empty(3 * embed_dim, embed_dim, **kw)
            for name in ("q_proj_weight", "k_proj_weight", "v_proj_weight"):
                self.register_parameter(name, None)
        else:
            self.q_proj_weight = _empty(embed_dim, embed_dim, **kw)
            self.k_proj_weight = _empty(embed_dim, self.kdim, **kw)
            self.v_proj_weight = _empty(embed_dim, self.vdim, **kw)
            self.register_parameter("in_proj_weight", None)
        if bias:
            self.in_proj_bias = _empty(3 * embed_dim, **kw)
        else:
            self.register_parameter("in_proj_bias", None)
        self.out_proj = Linear(embed_dim, embed_dim, bias=bias, **kw)
        self.bias_k = self.bias_v = None
        self.add_zero_attn = False
        self._reset_parameters()

    def _reset_parameters(self) -> None:
        if self._qkv_same_embed_dim:
            init.xavier_uniform_(self.in_proj_weight)
        else:
            for w in (self.q_proj_weight, self.k_proj_weight, self.v_proj_weight):
                init.xavier_uniform_(w)
        if self.in_proj_bias is not None:
            init.zeros_(self.in_proj_bias)
            init.zeros_(self.out_proj.bias)

    def _project(self, query: Tensor, key: Tensor, value: Tensor) -> tuple:
        e = self.embed_dim
        b = self.in_proj_bias
        bq, bk, bv = (None,) * 3 if b is None else (b[:e], b[e:2 * e], b[2 * e:])
        if self._qkv_same_embed_dim:
            w = self.in_proj_weight
            wq, wk, wv = w[:e], w[e:2 * e], w[2 * e:]
        else:
            wq, wk, wv = self.q_proj_weight, self.k_proj_weight, self.v_proj_weight
        return F.linear(query, wq, bq), F.linear(key, wk, bk), F.linear(value, wv, bv)

    def forward(self, query: Tensor, key: Tensor, value: Tensor,
                key_padding_mask: Tensor | None = None, need_weights: bool = True,
                attn_mask: Tensor | None = None, average_attn_weights: bool = True,
                is_causal: bool = False) -> tuple[Tensor, Tensor | None]:
        self._check_shapes(query, key, value)
        unbatched = query.ndim == 2
        if unbatched:
            query, key, value = query.unsqueeze(0), key.unsqueeze(0), value.unsqueeze(0)
            if key_padding_mask is not None:
                key_padding_mask = key_padding_mask.unsqueeze(0)
        elif not self.batch_first:
            query, key, value = (t.transpose(0, 1) for t in (query, key, value))
        n, tgt_len, _ = query.shape
        src_len = key.shape[1]
        h, d = self.num_heads, self.head_dim
        q, k, v = self._project(query, key, value)
        q = q.reshape(n, tgt_len, h, d).transpose(1, 2)
        k = k.reshape(n, src_len, h, d).transpose(1, 2)
        v = v.reshape(n, src_len, h, d).transpose(1, 2)
        scores = q @ k.transpose(-2, -1) * (1.0 / math.sqrt(d))
        mask = self._mask(attn_mask, key_padding_mask, is_causal, n, tgt_len, src_len,
                          scores.dtype)
        if mask is not None:
            scores = scores + mask
        weights = F.softmax(scores, dim=-1)
        if self.training and self.dropout > 0:
            weights = F.dropout(weights, self.dropout)
        out = (weights @ v).transpose(1, 2).reshape(n, tgt_len, self.embed_dim)
        out = self.out_proj(out)
        if unbatched:
            out = out.squeeze(0)
        elif not self.batch_first:
            out = out.transpose(0, 1)
        if not need_weights:
            return out, None
        if average_attn_weights:
            weights = weights.mean(dim=1)
        return out, (weights.squeeze(0) if unbatched else weights)

    def _check_shapes(self, query: Tensor, key: Tensor, value: Tensor) -> None:
        shapes = f"query {tuple(query.shape)}, key {tuple(key.shape)} and value " \
                 f"{tuple(value.shape)}"
        if query.ndim not in (2, 3) or not query.ndim == key.ndim == value.ndim:
            raise ValueError("MultiheadAttention: query, key and value must be all 2-D "
                             f"(unbatched) or all 3-D, got {shapes}")
        batch = 0 if self.batch_first else 1
        if tuple(key.shape[:-1]) != tuple(value.shape[:-1]) or (
                query.ndim == 3 and query.shape[batch] != key.shape[batch]):
            raise ValueError("MultiheadAttention: key and value must have the same sequence "
                             f"length, and all three the same batch size, got {shapes} "
                             f"(batch_first={self.batch_first})")

    def _mask(self, attn_mask: Tensor | None, key_padding_mask: Tensor | None,
              is_causal: bool, n: int, tgt_len: int, src_len: int, dtype: Any
              ) -> Tensor | None:
        if is_causal and attn_mask is None:
            attn_mask = ember.ones(tgt_len, src_len, dtype=ember.bool).triu(1)
        mask = _additive(attn_mask, dtype, "attn_mask")
        if mask is not None:
            shape3d = (n * self.num_heads, tgt_len, src_len)
            if tuple(mask.shape) == shape3d:
                mask = mask.reshape(n, self.num_heads, tgt_len, src_len)
            elif tuple(mask.shape) != (tgt_len, src_len):
                raise ValueError(f"MultiheadAttention: attn_mask should have shape "
                                 f"{(tgt_len, src_len)} or {shape3d} (batch·heads, target "
                                 f"length, source length), got {tuple(mask.shape)}")
        padding = _additive(key_padding_mask, dtype, "key_padding_mask")
        if padding is not None:
            if padding.shape != (n, src_len):
                raise ValueError(f"MultiheadAttention: key_padding_mask should have shape "
                                 f"{(n, src_len)}, got {tuple(padding.shape)}")
            padding = padding.reshape(n, 1, 1, src_len)
            mask = padding if mask is None else mask + padding
        return mask
