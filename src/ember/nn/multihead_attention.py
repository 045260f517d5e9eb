"""``MultiheadAttention`` with PyTorch's parameter layout (``in_proj_weight``,
``in_proj_bias``, ``out_proj``; ``q/k/v_proj_weight`` when ``kdim``/``vdim`` differ; ``bias_k``
and ``bias_v`` with ``add_bias_kv``), so state dicts load across. The computation is
:func:`ember.nn.functional.multi_head_attention_forward`'s, run in the module's own layout
(``batch_first`` inputs are not transposed to sequence-first and back)."""

from __future__ import annotations

from typing import Any

from ember.autograd.grad_mode import is_grad_enabled
from ember.backends import mha
from ember.errors import ArgumentError, ShapeError
from ember.nn import init
from ember.nn.linear import NonDynamicallyQuantizableLinear, _empty
from ember.nn.module import Module
from ember.ops.multi_head_attention import check_mask_dtype, multi_head_attention_forward
from ember.tensor import Tensor

__all__ = ["MultiheadAttention"]


class MultiheadAttention(Module):
    """Attention with ``num_heads`` heads: ``softmax(q kᵀ/√d + mask) v``, projected in and out.

    ``forward(query, key, value, key_padding_mask=None, need_weights=True, attn_mask=None,
    average_attn_weights=True, is_causal=False)`` returns ``(output, weights or None)``.
    Boolean masks mark positions *not* to attend to; float masks are added to the scores.
    ``add_bias_kv`` appends a learned key and value to the source, ``add_zero_attn`` a zero
    one. ``is_causal=True`` without ``attn_mask`` builds the causal mask (PyTorch raises, or
    on its fused inference path attends to everything); with ``attn_mask`` and
    ``need_weights=False`` (and no key padding mask), the causal mask alone is used, except
    where PyTorch's fused inference path would run (eval mode, no grad, ``batch_first``
    self-attention): it uses ``attn_mask``, as PyTorch does.
    A query row masked whole is as in ``F.multi_head_attention_forward`` on every path:
    PyTorch's fused path (and ``TransformerEncoderLayer``'s) gives NaN there with
    ``need_weights=False``, Ember zeros.

    Example:
        >>> mha = nn.MultiheadAttention(8, 2, batch_first=True)
        >>> out, w = mha(x := ember.randn(3, 5, 8), x, x)
        >>> out.shape, w.shape
        (ember.Size([3, 5, 8]), ember.Size([3, 5, 5]))
    """

    def __init__(self, embed_dim: int, num_heads: int, dropout: float = 0.0, bias: bool = True,
                 add_bias_kv: bool = False, add_zero_attn: bool = False,
                 kdim: int | None = None, vdim: int | None = None, batch_first: bool = False,
                 device: Any = None, dtype: Any = None) -> None:
        super().__init__()
        if embed_dim <= 0 or num_heads <= 0:
            raise ArgumentError(f"embed_dim and num_heads must be greater than 0, got "
                                f"embed_dim={embed_dim} and num_heads={num_heads} instead")
        if embed_dim % num_heads:
            raise ArgumentError(f"embed_dim ({embed_dim}) must be divisible by num_heads "
                                f"({num_heads})")
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
        self.out_proj = NonDynamicallyQuantizableLinear(embed_dim, embed_dim, bias=bias, **kw)
        if add_bias_kv:
            self.bias_k = _empty(1, 1, embed_dim, **kw)
            self.bias_v = _empty(1, 1, embed_dim, **kw)
        else:
            self.bias_k = self.bias_v = None
        self.add_zero_attn = add_zero_attn
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
        if self.bias_k is not None:
            init.xavier_normal_(self.bias_k)
            init.xavier_normal_(self.bias_v)

    def _fast_path(self, query: Tensor, key: Tensor, value: Tensor, attn_mask: Tensor) -> bool:
        """Whether PyTorch would run this call on its fused inference path (which merges
        ``attn_mask`` and ignores ``is_causal``): batched self-attention, ``batch_first``, in
        eval mode with nothing to differentiate, packed biased weights, an even number of
        heads, no ``bias_k``/``add_zero_attn``, a boolean mask, and the path not switched off
        (:mod:`ember.backends.mha`). (Its autocast condition reads the CUDA flag, never on
        here.)"""
        tensors = (query, self.in_proj_weight, self.in_proj_bias, self.out_proj.weight,
                   self.out_proj.bias)
        return (mha.get_fastpath_enabled() and query.ndim == 3 and query is key
                and key is value and not self.training
                and self.batch_first and self.num_heads % 2 == 0 and self.bias_k is None
                and not self.add_zero_attn and self.in_proj_weight is not None
                and self.in_proj_bias is not None
                and self.in_proj_weight.dtype == self.in_proj_bias.dtype == query.dtype
                and not attn_mask.is_floating_point()
                and not (is_grad_enabled()
                         and any(t is not None and t.requires_grad for t in tensors)))

    def merge_masks(self, attn_mask: Tensor | None, key_padding_mask: Tensor | None,
                    query: Tensor) -> tuple[Tensor | None, int | None]:
        """PyTorch's helper of its fused self-attention path: ``attn_mask`` (L, L) or
        (N·heads, L, L) and ``key_padding_mask`` (N, L) for a batch-first ``query`` (N, L, E)
        as one mask (N, heads, L, L) summed (boolean masks: or-ed), with its type: None (no
        mask), 1 (the padding mask alone, returned as given) or 2 (merged).

        Example:
            >>> mha = nn.MultiheadAttention(8, 2, batch_first=True)
            >>> pad = ember.tensor([[False, False, True]])
            >>> mask, kind = mha.merge_masks(ember.zeros(3, 3, dtype=ember.bool), pad,
            ...                              ember.randn(1, 3, 8))
            >>> tuple(mask.shape), kind
            ((1, 2, 3, 3), 2)
        """
        if attn_mask is None:
            return key_padding_mask, (None if key_padding_mask is None else 1)
        if query.ndim != 3:
            raise ShapeError(f"MultiheadAttention.merge_masks: query must be batch-first 3-D "
                             f"(N, L, E), got shape {tuple(query.shape)}")
        batch, length = query.shape[0], query.shape[1]
        heads = self.num_heads
        merged = attn_mask.reshape(batch, -1, length, length) if attn_mask.ndim == 3 \
            else attn_mask.reshape(1, 1, length, length).expand(batch, heads, length, length)
        if key_padding_mask is not None:
            merged = merged + key_padding_mask.reshape(batch, 1, 1, length).expand(
                batch, heads, 1, length)
        return merged, 2

    def forward(self, query: Tensor, key: Tensor, value: Tensor,
                key_padding_mask: Tensor | None = None, need_weights: bool = True,
                attn_mask: Tensor | None = None, average_attn_weights: bool = True,
                is_causal: bool = False) -> tuple[Tensor, Tensor | None]:
        if isinstance(attn_mask, Tensor):  # (before the causal path below may drop the mask)
            check_mask_dtype(attn_mask, "attn_mask", "MultiheadAttention")
        if is_causal and attn_mask is not None and key_padding_mask is None and \
                not need_weights and self._fast_path(query, key, value, attn_mask):
            is_causal = False  # PyTorch's fast path takes the mask and not the causal hint
        return multi_head_attention_forward(
            query, key, value, self.embed_dim, self.num_heads, self.in_proj_weight,
            self.in_proj_bias, self.bias_k, self.bias_v, self.add_zero_attn, self.dropout,
            self.out_proj.weight, self.out_proj.bias, training=self.training,
            key_padding_mask=key_padding_mask, need_weights=need_weights, attn_mask=attn_mask,
            use_separate_proj_weight=not self._qkv_same_embed_dim,
            q_proj_weight=self.q_proj_weight, k_proj_weight=self.k_proj_weight,
            v_proj_weight=self.v_proj_weight, average_attn_weights=average_attn_weights,
            is_causal=is_causal, batch_first=self.batch_first)
