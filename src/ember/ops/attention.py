"""``scaled_dot_product_attention``: ``softmax(Q Kᵀ · scale + mask) V`` with boolean or
additive masks, causal masking, dropout and grouped-query heads, under
``torch.nn.functional``'s name and semantics (a query row that may attend to nothing gives
zeros, not NaN).

Two paths: the composite of matmul and softmax (any case; memory L×S per head; PyTorch's
``SDPBackend.MATH``), and the blockwise primitive of :mod:`ember.ops.attention_blockwise`
(memory linear in the length; ``SDPBackend.FLASH_ATTENTION``), taken when the score matrices
would hold at least :data:`MEMORY_EFFICIENT_MIN` elements and there is no dropout and no mask
that needs a gradient. :func:`ember.nn.attention.sdpa_kernel` restricts the choice."""

from __future__ import annotations

import math
from typing import Any

from ember.errors import ArgumentError, DTypeError, ShapeError, dtype_name, is_floating_input
from ember.ops.attention_backends import SDPBackend, choose_backend
from ember.ops.attention_blockwise import blockwise_attention
from ember.ops.broadcast import broadcast_shape
from ember.ops.compare import isneginf, logical_not
from ember.ops.convert import lower_under_autocast
from ember.ops.dropout import dropout
from ember.ops.overrides import TENSOR_LIKE, handle
from ember.ops.primitive import DISPATCH
from ember.ops.random import Generator
from ember.ops.select import where
from ember.ops.softmax import softmax
from ember.tensor import Tensor, _wrap

__all__: list[str] = []

# score-matrix elements (batch × heads × L × S) from which the blockwise path is used
MEMORY_EFFICIENT_MIN = 1 << 21


def _safe_softmax(scores: Tensor, masked: bool) -> Tensor:
    """softmax over the last dim, with rows that are all -inf giving zeros (and finite
    gradients) instead of NaN. Eagerly the check reads the data, so most calls pay for one
    softmax only; under a transform (jit, vmap) or on the meta device the data is not known,
    so with a user's ``masked`` scores the check is written in ops (without one no row is all
    -inf)."""
    known = DISPATCH.handler is None and not scores.is_meta
    if not known and not masked:
        return softmax(scores, -1)
    if known:
        dead = scores.device.xp.isneginf(scores._data).all(axis=-1, keepdims=True)
        if not dead.any():
            return softmax(scores, -1)
        dead = _wrap(dead, scores.device)
    else:
        dead = isneginf(scores).all(-1, keepdim=True)
    return softmax(where(dead, 0.0, scores), -1) * logical_not(dead).to(scores.dtype)


def _repeat_heads(t: Tensor, groups: int) -> Tensor:
    """(…, H, S, E) → (…, H·groups, S, E), each head repeated ``groups`` times in a row."""
    if groups == 1:
        return t
    *lead, h, s, e = t.shape
    return t.unsqueeze(-3).expand(*lead, h, groups, s, e).reshape((*lead, h * groups, s, e))


@lower_under_autocast  # (PyTorch's: one low-precision kernel under autocast)
def scaled_dot_product_attention(query: Tensor, key: Tensor, value: Tensor,
                                 attn_mask: Tensor | None = None, dropout_p: float = 0.0,
                                 is_causal: bool = False, scale: float | None = None,
                                 enable_gqa: bool = False, *,
                                 generator: Generator | None = None) -> Tensor:
    """Attention of ``query`` (…, L, E) over ``key`` (…, S, E) and ``value`` (…, S, Ev).

    ``attn_mask`` is boolean (True: may attend), added to the scores, or a ``CausalBias``
    (:mod:`ember.nn.attention.bias`); ``is_causal`` lets position i attend to positions ≤ i;
    ``scale`` defaults to ``1/sqrt(E)``; with ``enable_gqa`` key/value may have fewer heads
    (dim -3) than the query.

    Example:
        >>> q = ember.randn(2, 4, 5, 8)  # (batch, heads, length, features)
        >>> F.scaled_dot_product_attention(q, q, q, is_causal=True).shape
        ember.Size([2, 4, 5, 8])
    """
    like = TENSOR_LIKE  # (nested queries; a CausalBias mask of ember.nn.attention.bias)
    if type(query) in like or type(key) in like or type(attn_mask) in like:
        return handle(scaled_dot_product_attention, (query, key, value, attn_mask, dropout_p,
                      is_causal, scale, enable_gqa), {"generator": generator})
    op = "scaled_dot_product_attention"
    if query.ndim < 2 or key.ndim < 2 or value.ndim < 2:
        raise ShapeError(f"{op}: query, key and value need at least 2 dims (…, length, "
                         f"features), got {tuple(query.shape)}, {tuple(key.shape)}, "
                         f"{tuple(value.shape)}")
    if query.shape[-1] != key.shape[-1] or key.shape[-2] != value.shape[-2]:
        raise ShapeError(f"{op}: query {tuple(query.shape)} and key {tuple(key.shape)} must "
                         f"share the feature size, key and value {tuple(value.shape)} the "
                         f"length")
    if not is_floating_input(op, "query", query):
        raise DTypeError(f"{op}: expected floating inputs, got {query.dtype.name}")
    if is_causal and attn_mask is not None:
        raise ArgumentError(f"{op}: an explicit attn_mask cannot be combined with is_causal=True")
    if attn_mask is not None:
        _check_mask_dtype(op, query, attn_mask)
    given = key  # (the caller's, for the mask's error: enable_gqa repeats its heads)
    if enable_gqa and query.ndim >= 3:
        hq, hk = query.shape[-3], key.shape[-3]
        if hq % hk or hq % value.shape[-3]:
            raise ShapeError(f"{op}: {hq} query heads are not a multiple of the key/value "
                             f"heads ({hk}, {value.shape[-3]})")
        key, value = _repeat_heads(key, hq // hk), _repeat_heads(value, hq // value.shape[-3])
    # (with no features the scores are all 0 whatever the scale: PyTorch attends uniformly)
    factor = 1.0 / math.sqrt(query.shape[-1] or 1) if scale is None else scale
    lead = query.shape[:-2]
    large = math.prod(lead) * query.shape[-2] * key.shape[-2] >= MEMORY_EFFICIENT_MIN
    backend = choose_backend(_blockwise_problem(query, key, value, attn_mask, dropout_p), large)
    if backend is SDPBackend.FLASH_ATTENTION:
        if attn_mask is not None:  # (a large problem: the check's microseconds are nothing)
            _check_mask_shape(op, query, key, attn_mask, given)
        return blockwise_attention(query, key, value, attn_mask, is_causal, factor)
    dtype = query.dtype
    low = dtype.name in ("float16", "bfloat16") and key.dtype is dtype and value.dtype is dtype
    if low:  # as PyTorch's math path: computed in float32, rounded once at the end
        query, key, value = query.float(), key.float(), value.float()
    try:
        weights = _weights(query, key, attn_mask, is_causal, factor)
    except ShapeError:  # (a small problem: the mask's shape is checked once something failed)
        if attn_mask is not None:
            _check_mask_shape(op, query, key, attn_mask, given)
        raise
    if dropout_p > 0.0:
        weights = dropout(weights, dropout_p, generator=generator)
    out = weights @ value
    return out.to(dtype) if low else out


def _check_mask_dtype(op: str, query: Tensor, attn_mask: Tensor) -> None:
    """PyTorch's rule: a mask is bool, float32 or of the query's dtype. An integer 0/1 mask
    would otherwise be added to the scores (not read as allowed/not allowed), and a wider
    float mask would fail inside the matmul."""
    kind = attn_mask.dtype
    if kind.name == "bool" or kind is query.dtype or kind.name == "float32":
        return
    hint = "mask.bool() (True = may attend)" if not kind.is_floating_point \
        else f"mask.to({query.dtype})"
    raise DTypeError(f"{op}: attn_mask must be bool, float32 or the query's dtype "
                     f"({query.dtype.name}), got {kind.name}. Hint: convert it, e.g. {hint}")


def _check_mask_shape(op: str, query: Tensor, key: Tensor, attn_mask: Tensor,
                      given: Tensor) -> None:
    """A ShapeError naming the weights' shape (…, L, S) when the mask does not broadcast to it
    (``given``: the key as the caller passed it, before enable_gqa's repeat of its heads).
    PyTorch's rule: the mask may not enlarge the weights (else the failure surfaced from inside,
    as a ``where`` or ``add`` of unexplained shapes, or the output grew)."""
    lead, ms = query.shape[:-2], attn_mask.shape
    if key.shape[:-2] != lead:
        try:
            lead = broadcast_shape((tuple(lead), tuple(key.shape[:-2])), op)
        except ShapeError:  # (query and key disagree: the caller's own error says so)
            return
    weights = (*lead, query.shape[-2], key.shape[-2])
    if len(ms) > len(weights) or any(m != w and m != 1 for m, w in zip(ms[::-1], weights[::-1])):
        raise ShapeError(f"{op}: attn_mask of shape {tuple(ms)} does not broadcast to the "
                         f"attention weights' shape {weights} (…, L, S) of query "
                         f"{tuple(query.shape)} and key {tuple(given.shape)}. Hint: a mask is "
                         f"(L, S) or (N, heads, L, S), with 1 for a size to share") from None


def _blockwise_problem(query: Tensor, key: Tensor, value: Tensor, attn_mask: Tensor | None,
                       dropout_p: float) -> str | None:
    """Why the blockwise kernel cannot run these inputs, or None when it can."""
    lead = query.shape[:-2]
    if dropout_p != 0.0:
        return f"dropout_p={dropout_p} is not 0"
    if attn_mask is not None and attn_mask.requires_grad:
        return "attn_mask requires grad"
    if key.shape[:-2] != lead or value.shape[:-2] != lead:
        return (f"the batch dims of query {tuple(query.shape)}, key {tuple(key.shape)} and "
                f"value {tuple(value.shape)} differ")
    if not (query.dtype is key.dtype is value.dtype):
        names = [dtype_name("scaled_dot_product_attention", name, t)
                 for name, t in (("query", query), ("key", key), ("value", value))]
        return f"query, key and value have dtypes {', '.join(names)}"
    return None


def _weights(query: Tensor, key: Tensor, attn_mask: Tensor | None, is_causal: bool,
             factor: float) -> Tensor:
    """The attention probabilities softmax(Q Kᵀ · factor + mask), as one L×S matrix."""
    scores = (query @ key.transpose(-2, -1)) * factor
    masked = attn_mask is not None
    xp = query.device.xp
    if is_causal:
        length, source = query.shape[-2], key.shape[-2]
        attn_mask = _wrap(xp.tril(xp.ones((length, source), dtype=bool)), query.device)
    if attn_mask is not None:
        shape = scores.shape
        if attn_mask.dtype.name == "bool":
            scores = where(attn_mask, scores, float("-inf"))
        else:
            scores = scores + attn_mask
        if scores.shape != shape:  # (PyTorch's rule; the caller names the shapes)
            raise ShapeError("scaled_dot_product_attention: attn_mask enlarges the weights")
    return _safe_softmax(scores, masked)


def naive_attention(q: Tensor, k: Tensor, v: Tensor, mask: Tensor | None, params: dict[str, Any],
                    weights: bool = False) -> Tensor:
    """The composite the blockwise primitive's rules fall back on (``params`` are its own):
    the attention output, or with ``weights`` the probabilities."""
    p = _weights(q, k, mask, params["causal"], params["scale"])
    return p if weights else p @ v
