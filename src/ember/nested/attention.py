"""``F.scaled_dot_product_attention`` on nested tensors (B, H, j, D), as PyTorch computes it for
the jagged layout: each sequence attends only within itself. Computed on the padded batch
with a mask that hides the padding keys, then unpadded (padded queries are dropped).
"""

from __future__ import annotations

from typing import Any

import numpy as np

import ember.ops.attention as attention
from ember.errors import ArgumentError, ArgumentTypeError, ShapeError
from ember.nested.functional import implements, padded, unpadded
from ember.nested.nested_tensor import NestedTensor
from ember.ops.creation import from_numpy

__all__: list[str] = []


def _check(name: str, t: NestedTensor) -> NestedTensor:
    if t.dim() != 4 or t._ragged_idx != 2:
        raise ShapeError(f"scaled_dot_product_attention: {name} of shape {t.shape} must be a "
                         "nested tensor (B, H, j, D), ragged on dim 2. Hint: from (B, j, H, D) "
                         "take .transpose(1, 2)")
    return t


@implements(attention.scaled_dot_product_attention)
def nested_scaled_dot_product_attention(
        query: NestedTensor, key: NestedTensor, value: NestedTensor, attn_mask: Any = None,
        dropout_p: float = 0.0, is_causal: bool = False, scale: float | None = None,
        enable_gqa: bool = False, *, generator: Any = None) -> NestedTensor:
    """Attention of each query sequence over its key and value sequence.

    Example:
        >>> x = ember.nested.nested_tensor([ember.randn(2, 1, 4), ember.randn(3, 1, 4)])
        >>> q = x.transpose(1, 2)  # (B, H, j, D)
        >>> F.scaled_dot_product_attention(q, q, q).shape
        (2, 1, j..., 4)
    """
    if not all(isinstance(t, NestedTensor) for t in (query, key, value)):
        raise ArgumentTypeError(
            "scaled_dot_product_attention: query, key and value must all be nested "
            "tensors or all dense (as in PyTorch), got "
            f"{', '.join(type(t).__name__ for t in (query, key, value))}. Hint: "
            "make a dense one nested with ember.nested.as_nested_tensor")
    query, key, value = (_check(n, t) for n, t in (("query", query), ("key", key),
                                                   ("value", value)))
    if attn_mask is not None:
        raise ArgumentError("scaled_dot_product_attention: attn_mask is not supported for nested "
                            "tensors (as in PyTorch); each sequence attends within itself. Hint: "
                            "for causal attention pass is_causal=True")
    if not np.array_equal(key._ragged.lengths, value._ragged.lengths) or \
            query._ragged.batch != key._ragged.batch:
        raise ShapeError(f"scaled_dot_product_attention: key {key.shape} and value "
                         f"{value.shape} must have the same sequence lengths "
                         f"({key._ragged.lengths.tolist()} and "
                         f"{value._ragged.lengths.tolist()}), and query {query.shape} their "
                         "batch size")
    q_len, k_len = query._ragged.max_seqlen, key._ragged.max_seqlen
    keep = key._ragged.mask(k_len)[:, None, None, :]
    if is_causal:
        keep = keep & from_numpy(np.tril(np.ones((q_len, k_len), dtype=bool))).to(keep.device)
    out = attention.scaled_dot_product_attention(
        padded(query, 0.0), padded(key, 0.0), padded(value, 0.0, k_len), keep, dropout_p,
        scale=scale, enable_gqa=enable_gqa, generator=generator)
    return unpadded(query, out)
