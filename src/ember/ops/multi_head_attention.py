"""``multi_head_attention_forward``: ``torch.nn.functional``'s multi-head attention, the whole
of ``nn.MultiheadAttention`` as a function of its weights (sequence-first inputs).

Projected in (one packed ``in_proj_weight`` or separate ``q/k/v_proj_weight``), split into
heads, optionally extended along the source by learned ``bias_k``/``bias_v`` and a zero key and
value (``add_zero_attn``) or replaced by ``static_k``/``static_v``, attended with
``softmax(q kᵀ/√d + mask)``, and projected out. A composite of Ember ops, so every derivative
follows.
"""

from __future__ import annotations

import math
import warnings
from typing import Any

from ember import dtypes
from ember.errors import ArgumentError, DTypeError, ShapeError, refuse_non_tensor
from ember.ops.attention import scaled_dot_product_attention
from ember.ops.creation import ones, zeros
from ember.ops.dropout import dropout
from ember.ops.join import cat
from ember.ops.linear import linear
from ember.ops.pad import pad
from ember.ops.softmax import softmax
from ember.tensor import Tensor

__all__: list[str] = []

_OP = "multi_head_attention_forward"


def check_mask_dtype(mask: Tensor, name: str, op: str = _OP) -> None:
    """Raises a ``DTypeError`` unless ``mask`` is bool or floating (PyTorch's module checks
    its masks so); ``name`` and ``op`` name it in the message.

    Example:
        >>> check_mask_dtype(ember.zeros(2, 2, dtype=ember.bool), "attn_mask")
    """
    if mask.dtype != dtypes.bool and not mask.dtype.is_floating_point:
        raise DTypeError(f"{op}: {name} must be bool (True = not allowed) or floating (added "
                         f"to the scores), got {mask.dtype.name}. Hint: convert a 0/1 mask "
                         f"with mask.bool()")


def additive(mask: Tensor | None, dtype: Any, name: str) -> Tensor | None:
    """A boolean mask (True = not allowed) as ``-inf``/0; a float mask as it is; another
    dtype refused (:func:`check_mask_dtype`, naming the mask ``name``)."""
    if mask is None:
        return None
    check_mask_dtype(mask, name)
    if mask.dtype == dtypes.bool:
        return zeros(tuple(mask.shape), dtype=dtype, device=mask.device).masked_fill(
            mask, float("-inf"))
    return mask.to(dtype)


def _check_inputs(query: Tensor, key: Tensor, value: Tensor, key_padding_mask: Tensor | None,
                  attn_mask: Tensor | None, separate: bool, batch_first: bool) -> bool:
    """Whether the inputs are batched; a ShapeError naming the shapes when they disagree (a
    NumPy array or PyTorch tensor among query, key and value refused first)."""
    for name, t in (("query", query), ("key", key), ("value", value)):
        if not isinstance(t, Tensor):
            refuse_non_tensor(_OP, name, t)
    shapes = f"query {tuple(query.shape)}, key {tuple(key.shape)} and value " \
             f"{tuple(value.shape)}"
    layout = "(batch, sequence, features)" if batch_first else "(sequence, batch, features)"
    if query.ndim not in (2, 3) or not query.ndim == key.ndim == value.ndim:
        raise ShapeError(f"{_OP}: query, key and value must be all 2-D (unbatched) or all 3-D "
                         f"{layout}, got {shapes}")
    batched = query.ndim == 3
    same = key.shape[:-1] == value.shape[:-1] if separate else key.shape == value.shape
    if not same:
        raise ShapeError(f"{_OP}: key and value must have the same sequence length and batch "
                         f"size{'' if separate else ' and features'}, got {shapes}")
    batch = 0 if batch_first else 1
    if batched and query.shape[batch] != key.shape[batch]:
        raise ShapeError(f"{_OP}: query, key and value must have the same batch size "
                         f"(dimension {batch} of {layout}), got {shapes}")
    want = 2 if batched else 1
    if key_padding_mask is not None and key_padding_mask.ndim != want:
        raise ShapeError(f"{_OP}: key_padding_mask must be {want}-D for "
                         f"{'batched' if batched else 'unbatched'} inputs, got shape "
                         f"{tuple(key_padding_mask.shape)}")
    if attn_mask is not None and attn_mask.ndim not in (2, 3):
        raise ShapeError(f"{_OP}: attn_mask must be 2-D (target, source) or 3-D (batch·heads, "
                         f"target, source), got shape {tuple(attn_mask.shape)}")
    return batched


def _project(query: Tensor, key: Tensor, value: Tensor, in_proj_weight: Tensor | None,
             in_proj_bias: Tensor | None, separate: bool, q_proj_weight: Tensor | None,
             k_proj_weight: Tensor | None, v_proj_weight: Tensor | None) -> tuple:
    e = query.shape[-1]
    if separate:
        missing = [n for n, w in (("q_proj_weight", q_proj_weight),
                                  ("k_proj_weight", k_proj_weight),
                                  ("v_proj_weight", v_proj_weight)) if w is None]
        if missing:
            raise ArgumentError(f"{_OP}: use_separate_proj_weight=True needs q_proj_weight, "
                                f"k_proj_weight and v_proj_weight; {', '.join(missing)} is None")
        wq, wk, wv = q_proj_weight, k_proj_weight, v_proj_weight
    else:
        if in_proj_weight is None:
            raise ArgumentError(f"{_OP}: use_separate_proj_weight is False but in_proj_weight is "
                                f"None")
        wq, wk, wv = in_proj_weight[:e], in_proj_weight[e:2 * e], in_proj_weight[2 * e:]
    b = in_proj_bias
    bq, bk, bv = (None,) * 3 if b is None else (b[:e], b[e:2 * e], b[2 * e:])
    return linear(query, wq, bq), linear(key, wk, bk), linear(value, wv, bv)


def _heads(t: Tensor, n: int, num_heads: int, head_dim: int, batch_first: bool) -> Tensor:
    """(length, N, E), or (N, length, E) when ``batch_first``, -> (N, heads, length, head_dim).
    Four dimensions rather than torch's (N·heads, length, head_dim): the batched products
    share their N batches among the cores, where N·heads single products cost ~3× more."""
    if batch_first:
        return t.reshape(n, t.shape[1], num_heads, head_dim).permute(0, 2, 1, 3)
    return t.reshape(t.shape[0], n, num_heads, head_dim).permute(1, 2, 0, 3)


def _static(name: str, given: Tensor, n: int, num_heads: int, head_dim: int) -> Tensor:
    """A given (N·heads, source, head_dim) key or value as (N, heads, source, head_dim)."""
    if given.ndim != 3 or given.shape[0] != n * num_heads or given.shape[2] != head_dim:
        raise ShapeError(f"{_OP}: {name} must have shape (batch·heads = {n * num_heads}, "
                         f"source, head_dim = {head_dim}), got {tuple(given.shape)}")
    return given.reshape(n, num_heads, given.shape[1], head_dim)


def _attn_mask(attn_mask: Tensor | None, is_causal: bool, dtype: Any, n: int, num_heads: int,
               tgt_len: int, src_len: int, device: Any) -> Tensor | None:
    """The additive mask, (target, source) or (N, heads, target, source)."""
    if is_causal and attn_mask is None:
        attn_mask = ones(tgt_len, src_len, dtype=dtypes.bool, device=device).triu(1)
    mask = additive(attn_mask, dtype, "attn_mask")
    if mask is None:
        return None
    if tuple(mask.shape) == (tgt_len, src_len):
        return mask
    if tuple(mask.shape) != (n * num_heads, tgt_len, src_len):
        raise ShapeError(f"{_OP}: attn_mask should have shape {(tgt_len, src_len)} or "
                         f"{(n * num_heads, tgt_len, src_len)} (batch·heads, target length, "
                         f"source length), got {tuple(mask.shape)}")
    return mask.reshape(n, num_heads, tgt_len, src_len)


def multi_head_attention_forward(
        query: Tensor, key: Tensor, value: Tensor, embed_dim_to_check: int, num_heads: int,
        in_proj_weight: Tensor | None, in_proj_bias: Tensor | None, bias_k: Tensor | None,
        bias_v: Tensor | None, add_zero_attn: bool, dropout_p: float,
        out_proj_weight: Tensor, out_proj_bias: Tensor | None, training: bool = True,
        key_padding_mask: Tensor | None = None, need_weights: bool = True,
        attn_mask: Tensor | None = None, use_separate_proj_weight: bool = False,
        q_proj_weight: Tensor | None = None, k_proj_weight: Tensor | None = None,
        v_proj_weight: Tensor | None = None, static_k: Tensor | None = None,
        static_v: Tensor | None = None, average_attn_weights: bool = True,
        is_causal: bool = False, *,
        batch_first: bool = False) -> tuple[Tensor, Tensor | None]:
    """Multi-head attention of sequence-first ``(L, N, E)`` query and ``(S, N, ·)`` key and
    value (or unbatched ``(L, E)``, ``(S, ·)``), with the weights passed in; returns
    ``(output (L, N, E), weights or None)``. The weights are ``(N, L, S)``, or per head
    ``(N, heads, L, S)`` with ``average_attn_weights=False``.

    Boolean masks mark positions *not* to attend to; float masks are added to the scores.
    ``attn_mask`` is ``(L, S)`` or ``(N·heads, L, S)``, ``key_padding_mask`` ``(N, S)``.
    ``is_causal=True`` without ``attn_mask`` builds the causal mask (PyTorch raises and asks
    for the mask); with ``need_weights=False`` and no ``key_padding_mask`` it is the causal
    mask alone and a given ``attn_mask`` is not used, as in PyTorch. Dropout (``dropout_p``)
    applies to the weights when ``training``. A query row masked whole gives zeros (then the
    output bias) with ``need_weights=False``, NaN with ``need_weights=True``, as in PyTorch
    (whose two paths differ so).
    ``batch_first`` (an Ember extension, what ``nn.MultiheadAttention(batch_first=True)``
    uses) takes and returns ``(N, L, E)`` inputs in that layout, not transposed to and from.

    Example:
        >>> e, h = 4, 2
        >>> w_in, w_out = ember.randn(3 * e, e), ember.randn(e, e)
        >>> x = ember.randn(5, 3, e)  # (L, N, E)
        >>> out, w = F.multi_head_attention_forward(x, x, x, e, h, w_in, None, None, None,
        ...                                         False, 0.0, w_out, None)
        >>> out.shape, w.shape
        (ember.Size([5, 3, 4]), ember.Size([3, 5, 5]))
    """
    batched = _check_inputs(query, key, value, key_padding_mask, attn_mask,
                            use_separate_proj_weight, batch_first)
    batch = 0 if batch_first else 1
    if not batched:
        want = (num_heads, query.shape[0], key.shape[0])  # (checked first, as PyTorch)
        if attn_mask is not None and attn_mask.ndim == 3 and tuple(attn_mask.shape) != want:
            raise ShapeError(f"{_OP}: a 3-D attn_mask of unbatched inputs must have shape "
                             f"(heads, target, source) = {want}, got "
                             f"{tuple(attn_mask.shape)}")
        query, key, value = query.unsqueeze(batch), key.unsqueeze(batch), value.unsqueeze(batch)
        if key_padding_mask is not None:
            key_padding_mask = key_padding_mask.unsqueeze(0)
    tgt_len, n, embed_dim = query.shape[1 - batch], query.shape[batch], query.shape[2]
    src_len = key.shape[1 - batch]
    if embed_dim != embed_dim_to_check:
        raise ShapeError(f"{_OP}: expected embedding dimension {embed_dim_to_check}, but the "
                         f"query has {embed_dim} features")
    if num_heads <= 0 or embed_dim % num_heads:
        raise ShapeError(f"{_OP}: embed_dim {embed_dim} must be divisible by num_heads "
                         f"{num_heads}")
    if (bias_k is None) != (bias_v is None):
        raise ArgumentError(f"{_OP}: bias_k and bias_v must be given together, got only "
                            f"{'bias_k' if bias_v is None else 'bias_v'}")
    head_dim = embed_dim // num_heads
    # PyTorch's rule: with no key_padding_mask and no weights asked for, is_causal alone
    # decides (attention's own causal mask over the whole source), and attn_mask is not used
    sdpa_causal = is_causal and key_padding_mask is None and not need_weights
    q, k, v = _project(query, key, value, in_proj_weight, in_proj_bias,
                       use_separate_proj_weight, q_proj_weight, k_proj_weight, v_proj_weight)
    mask = None if sdpa_causal else _attn_mask(attn_mask, is_causal, q.dtype, n, num_heads,
                                               tgt_len, src_len, query.device)
    if key_padding_mask is not None and attn_mask is not None and \
            key_padding_mask.dtype != attn_mask.dtype:
        kinds = f"key_padding_mask ({key_padding_mask.dtype.name}) and attn_mask " \
                f"({attn_mask.dtype.name})"
        warnings.warn(f"{_OP}: support for mismatched {kinds} is deprecated (as in PyTorch); "
                      f"use the same type for both", UserWarning, stacklevel=2)
    padding = additive(key_padding_mask, q.dtype, "key_padding_mask")
    extra = 0  # source positions appended by bias_k/bias_v and add_zero_attn
    if bias_k is not None:
        if static_k is not None or static_v is not None:
            raise ArgumentError(f"{_OP}: bias_k and bias_v cannot be added to static_k/static_v")
        one = (n, 1, embed_dim) if batch_first else (1, n, embed_dim)
        k = cat([k, bias_k.reshape(1, 1, embed_dim).expand(*one)], dim=1 - batch)
        v = cat([v, bias_v.reshape(1, 1, embed_dim).expand(*one)], dim=1 - batch)
        extra += 1
    q = _heads(q, n, num_heads, head_dim, batch_first)
    k = _heads(k, n, num_heads, head_dim, batch_first) if static_k is None else \
        _static("static_k", static_k, n, num_heads, head_dim)
    v = _heads(v, n, num_heads, head_dim, batch_first) if static_v is None else \
        _static("static_v", static_v, n, num_heads, head_dim)
    if add_zero_attn:
        zero = zeros(n, num_heads, 1, head_dim, dtype=k.dtype, device=k.device)
        k, v = cat([k, zero], dim=2), cat([v, zero], dim=2)
        extra += 1
    src_len = k.shape[2]
    if extra:
        mask = None if mask is None else pad(mask, (0, extra))
        padding = None if padding is None else pad(padding, (0, extra))
    if padding is not None:
        if tuple(padding.shape) != (n, src_len):
            raise ShapeError(f"{_OP}: key_padding_mask should have shape "
                             f"{(n, src_len - extra)} (batch, source length), got "
                             f"{tuple(key_padding_mask.shape)}")
        padding = padding.reshape(n, 1, 1, src_len)
        mask = padding if mask is None else mask + padding
    p = dropout_p if training else 0.0
    if need_weights:  # a query row masked whole gives NaN weights and output, as in PyTorch
        scores = (q * math.sqrt(1.0 / head_dim)) @ k.transpose(-2, -1)
        weights = softmax(scores if mask is None else scores + mask, dim=-1)
        weights = dropout(weights, p) if p > 0.0 else weights
        out = weights @ v  # (N, heads, L, head_dim)
    else:  # PyTorch's path too: such a row attends to nothing and gives zeros
        out = scaled_dot_product_attention(q, k, v, mask, p, is_causal=sdpa_causal)
    out = out.permute(0, 2, 1, 3).reshape(n, tgt_len, embed_dim) if batch_first else \
        out.permute(2, 0, 1, 3).reshape(tgt_len, n, embed_dim)
    out = linear(out, out_proj_weight, out_proj_bias)
    if not batched:
        out = out.squeeze(batch)
    if not need_weights:
        return out, None
    if average_attn_weights:
        weights = weights.mean(dim=1)
    return out, (weights.squeeze(0) if not batched else weights)
