"""Causal attention biases for :func:`ember.nn.functional.scaled_dot_product_attention`, under
PyTorch's names (``torch.nn.attention.bias``): :func:`causal_upper_left` (position i of the
query attends to keys 0…i, what ``is_causal=True`` does) and :func:`causal_lower_right` (the
diagonal ends at the bottom-right corner: the last query attends to every key, as a decoding
step whose queries are the newest positions of a longer key/value cache). Passed as
``attn_mask``; nothing is materialized unless the lower-right variant needs it (query and key
lengths differ).

Example:
    >>> from ember.nn.attention.bias import causal_lower_right
    >>> q, kv = ember.randn(1, 2, 2, 8), ember.randn(1, 2, 4, 8)
    >>> F.scaled_dot_product_attention(q, kv, kv, attn_mask=causal_lower_right(2, 4)).shape
    ember.Size([1, 2, 2, 8])
"""

from __future__ import annotations

import warnings
from collections.abc import Callable
from enum import IntEnum
from typing import Any

from ember import dtypes
from ember.errors import ArgumentError, ShapeError
from ember.ops.creation import ones
from ember.ops.overrides import register
from ember.tensor import Tensor

__all__ = ["CausalBias", "CausalVariant", "causal_lower_right", "causal_upper_left"]


class CausalVariant(IntEnum):
    """Where the causal diagonal is anchored: ``UPPER_LEFT`` (query i sees keys ≤ i) or
    ``LOWER_RIGHT`` (query i sees keys ≤ i + S − L).

    Example:
        >>> int(CausalVariant.LOWER_RIGHT)
        2
    """

    UPPER_LEFT = 1
    LOWER_RIGHT = 2


class CausalBias:
    """A causal mask of ``seq_len_q`` queries over ``seq_len_kv`` keys, kept as its variant and
    sizes; ``scaled_dot_product_attention`` reads it as ``is_causal=True`` (upper-left, or
    square) or as the boolean mask it stands for (lower-right). Made by
    :func:`causal_upper_left` and :func:`causal_lower_right`.

    Example:
        >>> causal_lower_right(2, 3)._materialize().tolist()
        [[True, True, False], [True, True, True]]
    """

    def __init__(self, variant: CausalVariant, seq_len_q: int, seq_len_kv: int) -> None:
        if not isinstance(variant, CausalVariant):
            raise ArgumentError(f"CausalBias: variant must be a CausalVariant, got "
                                f"{type(variant).__name__}")
        self.variant, self.seq_len_q, self.seq_len_kv = variant, seq_len_q, seq_len_kv
        if seq_len_q > seq_len_kv and variant is CausalVariant.LOWER_RIGHT:
            warnings.warn(f"CausalBias: a lower-right causal bias of {seq_len_q} queries over "
                          f"{seq_len_kv} keys leaves the first {seq_len_q - seq_len_kv} query "
                          f"rows nothing to attend to (their output is zeros)", UserWarning,
                          stacklevel=3)

    def _materialize(self, device: Any = None) -> Tensor:
        """The boolean mask (True: may attend), ``(seq_len_q, seq_len_kv)``."""
        offset = 0 if self.variant is CausalVariant.UPPER_LEFT else \
            self.seq_len_kv - self.seq_len_q
        return ones(self.seq_len_q, self.seq_len_kv, dtype=dtypes.bool,
                    device=device).tril(offset)

    def __repr__(self) -> str:
        return repr(self._materialize())


def _attend(op: Callable, args: tuple, kwargs: dict) -> Tensor:
    """``scaled_dot_product_attention`` with a :class:`CausalBias` as its ``attn_mask``."""
    if getattr(op, "__name__", "") != "scaled_dot_product_attention":
        raise TypeError(f"{getattr(op, '__name__', op)}: a CausalBias is only an attn_mask of "
                        f"scaled_dot_product_attention. Hint: bias._materialize() is the "
                        f"boolean mask as a tensor")
    names = ("query", "key", "value", "attn_mask", "dropout_p", "is_causal", "scale",
             "enable_gqa")
    call = {**dict(zip(names, args)), **kwargs}
    bias, query, key = call["attn_mask"], call["query"], call["key"]
    if call.get("is_causal", False):
        raise ArgumentError("scaled_dot_product_attention: a CausalBias attn_mask cannot be "
                            "combined with is_causal=True (the bias is the causal mask)")
    lengths = (query.shape[-2], key.shape[-2]) if min(query.ndim, key.ndim) >= 2 else None
    if lengths != (bias.seq_len_q, bias.seq_len_kv):
        raise ShapeError(f"scaled_dot_product_attention: the CausalBias is for "
                         f"{bias.seq_len_q} queries over {bias.seq_len_kv} keys, but query "
                         f"{tuple(query.shape)} and key {tuple(key.shape)} have "
                         f"{lengths} (L, S)")
    if bias.variant is CausalVariant.UPPER_LEFT or bias.seq_len_q == bias.seq_len_kv:
        call.update(attn_mask=None, is_causal=True)
    else:
        call.update(attn_mask=bias._materialize(query.device), is_causal=False)
    return op(**call)


register(CausalBias, _attend)


def causal_upper_left(*size: int) -> CausalBias:
    """The causal bias ``(L, S)`` anchored top-left: query i attends to keys 0…i (as
    ``is_causal=True``).

    Example:
        >>> causal_upper_left(2, 3)._materialize().tolist()
        [[True, False, False], [True, True, False]]
    """
    return CausalBias(CausalVariant.UPPER_LEFT, *_two("causal_upper_left", size))


def causal_lower_right(*size: int) -> CausalBias:
    """The causal bias ``(L, S)`` anchored bottom-right: query i attends to keys 0…i + S − L.

    Example:
        >>> causal_lower_right(2, 3)._materialize().tolist()
        [[True, True, False], [True, True, True]]
    """
    return CausalBias(CausalVariant.LOWER_RIGHT, *_two("causal_lower_right", size))


def _two(op: str, size: tuple) -> tuple[int, int]:
    if len(size) != 2:
        raise ArgumentError(f"{op}: expected two sizes (query length, key length), got "
                            f"{len(size)}: {size}")
    return size[0], size[1]
