"""``ember.nn.attention.flex_attention`` (PyTorch's ``torch.nn.attention.flex_attention``):
attention whose scores a user's ``score_mod(score, b, h, q_idx, kv_idx)`` rewrites and whose
pattern a :class:`BlockMask` restricts.

Both run on whole blocks at once: the mods are called with broadcasting index tensors
b (B,1,1,1), h (1,H,1,1), q_idx (1,1,L,1) and kv_idx (1,1,1,S) (what PyTorch gets with
vmap), so a mod written for scalars — comparisons, arithmetic, indexing a captured tensor —
runs vectorised. With a block mask, each block of query rows multiplies only against the
key/value blocks some batch entry or head lists for it, so causal or sliding-window attention
does about half or less of the dense work; the mask_mod is skipped where every listed block
is full. Everything is written in Ember ops, so gradients reach query, key, value and any
tensor a score_mod captures (a learnable bias table), to any order.

Example:
    >>> from ember.nn.attention.flex_attention import create_block_mask, flex_attention
    >>> q = ember.randn(1, 2, 200, 16)
    >>> bm = create_block_mask(lambda b, h, qi, kv: qi >= kv, None, None, 200, 200)
    >>> out, lse = flex_attention(q, q, q, block_mask=bm, return_lse=True)
    >>> out.shape, lse.shape
    (ember.Size([1, 2, 200, 16]), ember.Size([1, 2, 200]))
"""

from __future__ import annotations

import math
import warnings
from typing import Any, NamedTuple

import numpy as np

import ember
from ember.errors import ArgumentError, DTypeError, ShapeError
from ember.nn.attention.block_mask import (
    BlockMask,
    _mask_mod_signature,
    _score_mod_signature,
    _sliced_mask_mod_error,
    and_masks,
    check_boolean_mask,
    create_block_mask,
    create_mask,
    index_grids,
    noop_mask,
    or_masks,
)
from ember.tensor import Tensor

__all__ = ["AuxOutput", "AuxRequest", "BlockMask", "and_masks", "create_block_mask",
           "create_mask", "flex_attention", "noop_mask", "or_masks"]


class AuxRequest(NamedTuple):
    """Which extra outputs :func:`flex_attention` returns (its ``return_aux``).

    Example:
        >>> q = ember.randn(1, 1, 3, 4)
        >>> out, aux = flex_attention(q, q, q, return_aux=AuxRequest(lse=True))
        >>> aux.lse.shape, aux.max_scores
        (ember.Size([1, 1, 3]), None)
    """

    lse: bool = False
    max_scores: bool = False


class AuxOutput(NamedTuple):
    """The extra outputs of :func:`flex_attention`; None where not requested.

    Example:
        >>> AuxOutput()
        AuxOutput(lse=None, max_scores=None)
    """

    lse: Tensor | None = None
    max_scores: Tensor | None = None


class _Strip(NamedTuple):
    """One block row of work: query rows, the key/value position runs it reads, the
    (Bm, Hm, 1, S') mask of listed blocks when not every batch entry and head lists them all,
    and whether the mask_mod must run (some listed block is only partly allowed)."""

    rows: slice
    runs: list[tuple[int, int]]
    listed: np.ndarray | None
    partial: bool


def flex_attention(query: Tensor, key: Tensor, value: Tensor,
                   score_mod: _score_mod_signature | None = None,
                   block_mask: BlockMask | None = None, scale: float | None = None,
                   enable_gqa: bool = False, return_lse: bool = False,
                   kernel_options: dict[str, Any] | None = None, *,
                   return_aux: AuxRequest | None = None) -> Any:
    """``softmax(score_mod(Q Kᵀ · scale) masked by block_mask) V`` for query (B, Hq, L, E),
    key (B, Hkv, S, E) and value (B, Hkv, S, Ev).

    ``score_mod(score, b, h, q_idx, kv_idx)`` gets the scaled scores and broadcasting index
    tensors; ``block_mask`` (from :func:`create_block_mask`) skips whole blocks and applies
    its mask_mod. ``scale`` defaults to ``1/sqrt(E)``; ``enable_gqa`` lets Hq be a multiple of
    Hkv. ``return_lse`` (deprecated in PyTorch for ``return_aux=AuxRequest(lse=True)``) also
    returns each row's natural-log log-sum-exp (B, Hq, L); rows that may attend to nothing
    give zeros and an lse of -inf. ``kernel_options`` tune PyTorch's Triton kernels and are
    accepted and ignored.

    Example:
        >>> q = ember.randn(1, 1, 4, 8)
        >>> alibi = lambda score, b, h, qi, kv: score - (qi - kv).abs()
        >>> flex_attention(q, q, q, score_mod=alibi).shape
        ember.Size([1, 1, 4, 8])
    """
    _check_inputs(query, key, value, block_mask, enable_gqa)
    if score_mod is not None and not callable(score_mod):
        raise TypeError(f"flex_attention: score_mod must be callable (score, b, h, q_idx, "
                        f"kv_idx) -> score, got {type(score_mod).__name__}")
    if return_lse and return_aux is not None:
        raise ArgumentError("flex_attention: cannot specify both return_lse and return_aux; "
                            "return_lse is deprecated, use return_aux=AuxRequest(lse=True)")
    if return_lse:
        warnings.warn("flex_attention: return_lse is deprecated, use "
                      "return_aux=AuxRequest(lse=True) instead", FutureWarning, stacklevel=2)
    batch, heads, length, _ = query.shape
    groups = heads // key.shape[1]
    work = ember.float64 if query.dtype is ember.float64 else ember.float32
    factor = 1.0 / math.sqrt(query.shape[-1]) if scale is None else scale
    q = query.to(work) * factor  # (scaling the queries, not the larger score blocks)
    k = key.to(work).repeat_interleave(groups, dim=1).expand(batch, heads, *key.shape[2:])
    v = value.to(work).repeat_interleave(groups, dim=1).expand(batch, heads, *value.shape[2:])
    strips = _plan(block_mask, length, key.shape[2])
    mask_mod = block_mask.mask_mod if block_mask is not None else noop_mask
    parts = [_attend_strip(q, k, v, strip, score_mod, mask_mod) for strip in strips]
    out = ember.cat([p[0] for p in parts], 2).to(query.dtype)
    if return_aux is not None:
        return out, AuxOutput(ember.cat([p[1] for p in parts], 2) if return_aux.lse else None,
                              ember.cat([p[2] for p in parts], 2) if return_aux.max_scores
                              else None)
    return (out, ember.cat([p[1] for p in parts], 2)) if return_lse else out


def _plan(block_mask: BlockMask | None, length: int, source: int) -> list[_Strip]:
    """The strips of work: one over everything without a block mask, else one per block of
    query rows, over the union of the key/value blocks any batch entry or head lists."""
    if block_mask is None or length == 0:
        return [_Strip(slice(0, length), [(0, source)], None, False)]
    q_block, kv_block = block_mask.BLOCK_SIZE
    listed, full = block_mask.dense_blocks()
    strips = []
    for i in range(-(-length // q_block)):
        cols = np.flatnonzero(listed[:, :, i].any(axis=(0, 1)))
        cols = cols[cols * kv_block < source]
        positions = np.concatenate([np.arange(c * kv_block, min((c + 1) * kv_block, source))
                                    for c in cols]) if cols.size else np.zeros(0, np.int64)
        listed_here = listed[:, :, i][:, :, positions // kv_block]
        partial = full is None or not full[:, :, i][:, :, cols].all()
        strips.append(_Strip(slice(i * q_block, min((i + 1) * q_block, length)),
                             _runs(positions), None if listed_here.all()
                             else listed_here[:, :, None, :], partial))
    return strips


def _runs(positions: np.ndarray) -> list[tuple[int, int]]:
    """Sorted positions → [(start, stop)] of their contiguous runs."""
    if positions.size == 0:
        return []
    breaks = np.flatnonzero(np.diff(positions) != 1) + 1
    starts = np.concatenate([[0], breaks])
    stops = np.concatenate([breaks, [positions.size]])
    return [(int(positions[a]), int(positions[b - 1]) + 1) for a, b in zip(starts, stops)]


def _attend_strip(q: Tensor, k: Tensor, v: Tensor, strip: _Strip,
                  score_mod: _score_mod_signature | None,
                  mask_mod: _mask_mod_signature) -> tuple[Tensor, Tensor, Tensor]:
    """(output, lse, max score) of the strip's (scaled) query rows over its key/value runs."""
    batch, heads = q.shape[:2]
    qs = q[:, :, strip.rows]
    if not strip.runs:  # no block listed: nothing to attend to
        rows = qs.shape[2]
        dead = ember.full((batch, heads, rows), float("-inf"), dtype=q.dtype, device=q.device)
        return ember.zeros((batch, heads, rows, v.shape[-1]), dtype=q.dtype,
                           device=q.device), dead, dead
    ks, vs = (_gather(t, strip.runs) for t in (k, v))
    kv_idx = ember.cat([ember.arange(a, b, device=q.device) for a, b in strip.runs])
    grids = index_grids(batch, heads, ember.arange(strip.rows.start, strip.rows.stop,
                                                   device=q.device), kv_idx)
    scores = qs @ ks.transpose(-2, -1)
    if score_mod is not None:
        scores = _mod_result("score_mod", score_mod(scores, *grids), scores).expand(
            *scores.shape).to(q.dtype)
    allowed = None
    if strip.partial and mask_mod is not noop_mask:
        allowed = check_boolean_mask("flex_attention",
                                     _mod_result("mask_mod", mask_mod(*grids), scores))
    if strip.listed is not None:
        listed = ember.tensor(strip.listed, device=q.device)
        allowed = listed if allowed is None else allowed & listed
    if allowed is not None:
        scores = ember.where(allowed, scores, float("-inf"))
    return _softmax_attend(scores, vs)


def _mod_result(name: str, result: Any, scores: Tensor) -> Tensor:
    """A mod's result as a tensor broadcasting to the scores' shape (a mod that ignores some
    of its inputs returns a smaller one); a shape that does not broadcast raises."""
    result = ember.as_tensor(result, device=scores.device)
    shape = tuple(scores.shape)
    if result.ndim > len(shape) or any(
            n not in (1, m) for n, m in zip(result.shape[::-1], shape[::-1])):
        raise ShapeError(f"flex_attention: {name} returned shape {tuple(result.shape)}, which "
                         f"does not broadcast to the scores' shape {shape}; a mod gets "
                         f"broadcasting index tensors b (B,1,1,1), h (1,H,1,1), q_idx "
                         f"(1,1,L,1), kv_idx (1,1,1,S) and must return one value per position")
    return result


def _gather(t: Tensor, runs: list[tuple[int, int]]) -> Tensor:
    """The positions of ``runs`` along dim 2 (a view when there is one run)."""
    if len(runs) == 1:
        return t[:, :, runs[0][0]:runs[0][1]]
    return ember.cat([t[:, :, a:b] for a, b in runs], 2)


def _softmax_attend(scores: Tensor, value: Tensor) -> tuple[Tensor, Tensor, Tensor]:
    """softmax(scores) @ value, the log-sum-exp and the max of each row; a row of -inf gives
    zeros, lse -inf, and finite gradients."""
    top = scores.amax(-1, keepdim=True)
    dead = ember.isneginf(top)
    shift = ember.where(dead, 0.0, top.detach())
    weights = (scores - shift).exp()
    total = ember.where(dead, 1.0, weights.sum(-1, keepdim=True))
    lse = ember.where(dead, float("-inf"), total.log() + shift)
    return (weights @ value) / total, lse.squeeze(-1), top.squeeze(-1)


def _check_inputs(query: Tensor, key: Tensor, value: Tensor, block_mask: BlockMask | None,
                  enable_gqa: bool) -> None:
    """PyTorch's checks of flex_attention's arguments, with the shapes in the message."""
    op = "flex_attention"
    for name, t in (("query", query), ("key", key), ("value", value)):
        if not isinstance(t, Tensor):
            raise TypeError(f"{op}: {name} must be a Tensor, got {type(t).__name__}")
    shapes = f"query {tuple(query.shape)}, key {tuple(key.shape)}, value {tuple(value.shape)}"
    if query.ndim != 4 or key.ndim != 4 or value.ndim != 4:
        raise NotImplementedError(f"{op}: query, key and value must be 4-D (B, H, L, E); got "
                                  f"{shapes}")
    if not (query.dtype is key.dtype is value.dtype):
        raise ArgumentError(f"{op}: expected query, key and value to have the same dtype, got "
                            f"{query.dtype.name}, {key.dtype.name}, {value.dtype.name}")
    if not query.dtype.is_floating_point or query.dtype.is_complex:
        raise DTypeError(f"{op}: expected real floating inputs, got {query.dtype.name}")
    if not (query.device == key.device == value.device):
        raise ArgumentError(f"{op}: query, key and value must be on one device, got "
                            f"{query.device}, {key.device}, {value.device}")
    if query.shape[-1] != key.shape[-1]:
        raise ArgumentError(f"{op}: expect query and key/value to have the same embedding "
                            f"dimension but got E={query.shape[-1]} and E={key.shape[-1]} "
                            f"({shapes})")
    if key.shape[2] == 0:
        raise IndexError(f"{op}: key and value have length 0, so no query has anything to "
                         f"attend to (as in PyTorch, this is an error); got {shapes}")
    if key.shape[:3] != value.shape[:3]:
        raise ShapeError(f"{op}: key and value must share batch, heads and length; got "
                         f"{shapes}")
    hq, hkv = query.shape[1], key.shape[1]
    if not enable_gqa and hq != hkv:
        raise ArgumentError(f"{op}: expect query and key/value to have the same number of heads "
                            f"but got Hq={hq} and Hkv={hkv}; try enable_gqa=True for GQA")
    if hq % hkv:
        raise ArgumentError(f"{op}: for GQA the query heads must be a multiple of the key/value "
                            f"heads, got Hq={hq} and Hkv={hkv}")
    if query.shape[0] != key.shape[0]:
        if key.shape[0] != 1 or block_mask is None \
                or block_mask.kv_num_blocks.shape[0] != query.shape[0]:
            raise ArgumentError(f"{op}: expect query and key/value to have the same batch size "
                                f"(key/value may have 1 with a block_mask of the query's batch "
                                f"size); got {shapes}")
    if block_mask is not None:
        _check_block_mask(block_mask, query, key)


def _check_block_mask(block_mask: BlockMask, query: Tensor, key: Tensor) -> None:
    op = "flex_attention"
    if not isinstance(block_mask, BlockMask):
        raise TypeError(f"{op}: block_mask must be a BlockMask (see create_block_mask), got "
                        f"{type(block_mask).__name__}")
    if block_mask.mask_mod is _sliced_mask_mod_error:
        raise RuntimeError(f"{op}: cannot use mask_mod from a sliced BlockMask; set "
                           f"sliced.mask_mod from the original BlockMask's mask_mod")
    length, source = query.shape[2], key.shape[2]
    mask_q, mask_kv = block_mask.seq_lengths
    if (length, source) != (mask_q, mask_kv):
        hint = ("create a new block mask for these lengths" if length > mask_q or
                source > mask_kv else "create a new block mask with the correct lengths")
        raise ArgumentError(f"{op}: block_mask was created for block_mask.shape="
                            f"{block_mask.shape} but got q_len={length} and kv_len={source}; "
                            f"{hint}")
    dims = block_mask.kv_num_blocks.shape
    q_blocks = -(-length // block_mask.BLOCK_SIZE[0])
    if len(dims) != 3 or dims[0] not in (1, query.shape[0]) or dims[1] not in (
            1, query.shape[1]) or dims[2] < q_blocks:
        raise ShapeError(f"{op}: block_mask.kv_num_blocks has shape {tuple(dims)}; expected "
                         f"(B or 1, Hq or 1, ≥{q_blocks}) for query {tuple(query.shape)} "
                         f"and BLOCK_SIZE {block_mask.BLOCK_SIZE}")
    if block_mask.kv_num_blocks.device != query.device:
        raise RuntimeError(f"{op}: expect q/k/v and block_mask on one device, got "
                           f"{query.device} and {block_mask.kv_num_blocks.device}")
