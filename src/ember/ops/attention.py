"""``scaled_dot_product_attention``: ``softmax(Q Kᵀ · scale + mask) V``, a composite of
matmul and softmax, with boolean or additive masks, causal masking, dropout and grouped-query
heads, under ``torch.nn.functional``'s name and semantics (a query row that may attend to
nothing gives zeros, not NaN)."""

from __future__ import annotations

import math

from ember.errors import DTypeError, ShapeError
from ember.ops.dropout import dropout
from ember.ops.random import Generator
from ember.ops.select import where
from ember.ops.softmax import softmax
from ember.tensor import Tensor, _wrap

__all__: list[str] = []


def _safe_softmax(scores: Tensor) -> Tensor:
    """softmax over the last dim, with rows that are all -inf giving zeros (and finite
    gradients) instead of NaN."""
    xp = scores.device.xp
    dead = xp.isneginf(scores._data).all(axis=-1, keepdims=True)
    if not dead.any():
        return softmax(scores, -1)
    dead_t = _wrap(dead, scores.device)
    alive = _wrap((~dead).astype(scores.dtype.np), scores.device)
    return softmax(where(dead_t, 0.0, scores), -1) * alive


def _repeat_heads(t: Tensor, groups: int) -> Tensor:
    """(…, H, S, E) → (…, H·groups, S, E), each head repeated ``groups`` times in a row."""
    if groups == 1:
        return t
    *lead, h, s, e = t.shape
    return t.unsqueeze(-3).expand(*lead, h, groups, s, e).reshape((*lead, h * groups, s, e))


def scaled_dot_product_attention(query: Tensor, key: Tensor, value: Tensor,
                                 attn_mask: Tensor | None = None, dropout_p: float = 0.0,
                                 is_causal: bool = False, scale: float | None = None,
                                 enable_gqa: bool = False, *,
                                 generator: Generator | None = None) -> Tensor:
    """Attention of ``query`` (…, L, E) over ``key`` (…, S, E) and ``value`` (…, S, Ev).

    ``attn_mask`` is boolean (True: may attend) or added to the scores; ``is_causal`` lets
    position i attend to positions ≤ i; ``scale`` defaults to ``1/sqrt(E)``; with
    ``enable_gqa`` key/value may have fewer heads (dim -3) than the query.

    Example:
        >>> q = ember.randn(2, 4, 5, 8)  # (batch, heads, length, features)
        >>> F.scaled_dot_product_attention(q, q, q, is_causal=True).shape
        (2, 4, 5, 8)
    """
    op = "scaled_dot_product_attention"
    if query.ndim < 2 or key.ndim < 2 or value.ndim < 2:
        raise ShapeError(f"{op}: query, key and value need at least 2 dims (…, length, "
                         f"features), got {tuple(query.shape)}, {tuple(key.shape)}, "
                         f"{tuple(value.shape)}")
    if query.shape[-1] != key.shape[-1] or key.shape[-2] != value.shape[-2]:
        raise ShapeError(f"{op}: query {tuple(query.shape)} and key {tuple(key.shape)} must "
                         f"share the feature size, key and value {tuple(value.shape)} the "
                         f"length")
    if not query.dtype.is_floating_point:
        raise DTypeError(f"{op}: expected floating inputs, got {query.dtype.name}")
    if is_causal and attn_mask is not None:
        raise ValueError(f"{op}: an explicit attn_mask cannot be combined with is_causal=True")
    if enable_gqa and query.ndim >= 3:
        hq, hk = query.shape[-3], key.shape[-3]
        if hq % hk or hq % value.shape[-3]:
            raise ShapeError(f"{op}: {hq} query heads are not a multiple of the key/value "
                             f"heads ({hk}, {value.shape[-3]})")
        key, value = _repeat_heads(key, hq // hk), _repeat_heads(value, hq // value.shape[-3])
    factor = 1.0 / math.sqrt(query.shape[-1]) if scale is None else scale
    scores = (query @ key.transpose(-2, -1)) * factor
    xp = query.device.xp
    if is_causal:
        length, source = query.shape[-2], key.shape[-2]
        attn_mask = _wrap(xp.tril(xp.ones((length, source), dtype=bool)), query.device)
    if attn_mask is not None:
        if attn_mask.dtype.name == "bool":
            scores = where(attn_mask, scores, float("-inf"))
        else:
            scores = scores + attn_mask
    weights = _safe_softmax(scores)
    if dropout_p > 0.0:
        weights = dropout(weights, dropout_p, generator=generator)
    return weights @ value
