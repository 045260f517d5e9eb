"""Block-sparse masks for :func:`ember.nn.attention.flex_attention.flex_attention`, under
PyTorch's names (``torch.nn.attention.flex_attention``): ``mask_mod`` functions
``(b, h, q_idx, kv_idx) -> bool`` evaluated on broadcasting index tensors, the dense mask
they give (:func:`create_mask`) and the :class:`BlockMask` that lists, for each block of
``BLOCK_SIZE`` query rows, the key/value blocks it may attend to (partially or fully), so
attention can skip the blocks that are masked out entirely.

Example:
    >>> from ember.nn.attention.flex_attention import create_block_mask
    >>> bm = create_block_mask(lambda b, h, q, kv: q >= kv, 1, 1, 256, 256, BLOCK_SIZE=128)
    >>> bm.to_dense()[0, 0].tolist()
    [[1, 0], [1, 1]]
"""

from __future__ import annotations

import inspect
import math
from collections.abc import Callable
from numbers import Integral
from typing import Any

import numpy as np

import ember
from ember.errors import ArgumentError
from ember.tensor import Tensor

__all__ = ["BlockMask", "and_masks", "create_block_mask", "create_mask", "noop_mask",
           "or_masks"]

_score_mod_signature = Callable[[Tensor, Tensor, Tensor, Tensor, Tensor], Tensor]
_mask_mod_signature = Callable[[Tensor, Tensor, Tensor, Tensor], Tensor]

_DEFAULT_SPARSE_BLOCK_SIZE = 128


def noop_mask(batch: Tensor, head: Tensor, token_q: Tensor, token_kv: Tensor) -> Tensor:
    """The mask_mod that lets every query attend to every key.

    Example:
        >>> noop_mask(*(ember.arange(2),) * 4)
        tensor(True)
    """
    return ember.ones((), dtype=ember.bool, device=batch.device)


def _sliced_mask_mod_error(batch: Tensor, head: Tensor, token_q: Tensor,
                           token_kv: Tensor) -> Tensor:
    """The mask_mod of a sliced BlockMask: slicing drops the original one, as in PyTorch."""
    raise RuntimeError("Cannot use mask_mod from a sliced BlockMask: slicing a BlockMask with "
                       "[] resets its mask_mod; set sliced.mask_mod from the original "
                       "BlockMask's mask_mod")


def or_masks(*mask_mods: _mask_mod_signature) -> _mask_mod_signature:
    """The mask_mod that allows what any of ``mask_mods`` allows.

    Example:
        >>> m = or_masks(lambda b, h, q, kv: q == kv, lambda b, h, q, kv: kv == 0)
        >>> create_mask(m, 1, 1, 3, 3)[0, 0].int().tolist()
        [[1, 0, 0], [1, 1, 0], [1, 0, 1]]
    """
    _check_callables("or_masks", mask_mods)

    def or_mask(b: Tensor, h: Tensor, q_idx: Tensor, kv_idx: Tensor) -> Tensor:
        result = ember.zeros((), dtype=ember.bool, device=b.device)
        for mask in mask_mods:
            result = result | mask(b, h, q_idx, kv_idx)
        return result
    return or_mask


def and_masks(*mask_mods: _mask_mod_signature) -> _mask_mod_signature:
    """The mask_mod that allows what all of ``mask_mods`` allow.

    Example:
        >>> m = and_masks(lambda b, h, q, kv: q >= kv, lambda b, h, q, kv: q - kv < 2)
        >>> create_mask(m, 1, 1, 3, 3)[0, 0].int().tolist()
        [[1, 0, 0], [1, 1, 0], [0, 1, 1]]
    """
    _check_callables("and_masks", mask_mods)

    def and_mask(b: Tensor, h: Tensor, q_idx: Tensor, kv_idx: Tensor) -> Tensor:
        result = ember.ones((), dtype=ember.bool, device=b.device)
        for mask in mask_mods:
            result = result & mask(b, h, q_idx, kv_idx)
        return result
    return and_mask


def _check_callables(op: str, mask_mods: tuple) -> None:
    if not all(callable(m) for m in mask_mods):
        raise RuntimeError(f"{op}: all inputs should be callable mask_mods, got {mask_mods}")


def is_score_mod(fn: Callable) -> bool:
    """True for a score_mod (5 positional parameters), False for a mask_mod (4), as PyTorch
    tells them apart; anything else raises."""
    params = inspect.signature(fn).parameters.values()
    count = sum(1 for p in params if p.default is inspect.Parameter.empty
                and p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD))
    if count not in (4, 5):
        raise TypeError(f"expected a mask_mod (b, h, q_idx, kv_idx) or a score_mod (score, b, h, "
                        f"q_idx, kv_idx), got {fn!r} with {count} positional parameters")
    return count == 5


def index_grids(batch: int, heads: int, q_idx: Tensor, kv_idx: Tensor) -> tuple[Tensor, ...]:
    """Index tensors b (B,1,1,1), h (1,H,1,1), q (1,1,L,1), kv (1,1,1,S) that broadcast to the
    score shape, so a mod written for scalars runs once over all positions."""
    device = q_idx.device
    return (ember.arange(batch, device=device).view(batch, 1, 1, 1),
            ember.arange(heads, device=device).view(1, heads, 1, 1),
            q_idx.view(1, 1, -1, 1), kv_idx.view(1, 1, 1, -1))


def create_mask(mod_fn: _score_mod_signature | _mask_mod_signature, B: int | None,
                H: int | None, Q_LEN: int, KV_LEN: int,
                device: str | ember.device | None = None) -> Tensor:
    """The dense (B, H, Q_LEN, KV_LEN) mask of a mask_mod (of the dtype it returns), or the
    boolean one of a score_mod (True where it leaves the score finite).

    Example:
        >>> create_mask(lambda b, h, q, kv: q >= kv, 1, 1, 2, 3).int().tolist()
        [[[[1, 0, 0], [1, 1, 0]]]]
    """
    batch, heads = B or 1, H or 1
    device = device or "cpu"
    b, h, q, kv = index_grids(batch, heads, ember.arange(Q_LEN, device=device),
                              ember.arange(KV_LEN, device=device))
    shape = (batch, heads, Q_LEN, KV_LEN)
    if is_score_mod(mod_fn):
        out = mod_fn(ember.zeros(shape, device=device), b, h, q, kv)
        return ember.logical_not(ember.isneginf(ember.as_tensor(out, device=device))).expand(
            *shape).contiguous()
    return ember.as_tensor(mod_fn(b, h, q, kv), device=device).expand(*shape).contiguous()


def check_boolean_mask(op: str, mask: Tensor) -> Tensor:
    """``mask`` (a mask_mod's result) when boolean; any other dtype raises, as in PyTorch,
    rather than being read as truthiness."""
    if mask.dtype is not ember.bool:
        raise TypeError(f"{op}: mask_mod must return booleans (True where attention is "
                        f"allowed), got {mask.dtype.name}; compare instead, e.g. "
                        f"q_idx >= kv_idx, or convert with .bool()")
    return mask


def _dense_to_ordered(dense: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(…, rows, cols) 0/1 blocks → number of blocks per row and their column indices first
    (then the others, in order), as int32."""
    dense = dense.astype(np.int32)
    order = np.argsort(-dense, axis=-1, kind="stable")
    return dense.sum(-1).astype(np.int32), order.astype(np.int32)


def _ordered_to_dense(num_blocks: np.ndarray, indices: np.ndarray, cols: int) -> np.ndarray:
    """Inverse of :func:`_dense_to_ordered` (int32 0/1 of shape (…, rows, cols))."""
    listed = np.arange(indices.shape[-1]) < num_blocks[..., None]
    bad = listed & ((indices < 0) | (indices >= cols))
    if bad.any():
        raise IndexError(f"BlockMask: a listed key/value block index is out of range [0, "
                         f"{cols}): got {sorted(set(indices[bad].tolist()))}; each row's first "
                         f"num_blocks entries of kv_indices must be block columns")
    dense = np.zeros((*indices.shape[:-1], cols + 1), dtype=np.int32)
    np.put_along_axis(dense, np.where(listed, indices, cols).astype(np.int64), 1, axis=-1)
    return dense[..., :cols]


def _transpose_ordered(num_blocks: np.ndarray, indices: np.ndarray) -> tuple:
    dense = _ordered_to_dense(num_blocks, indices, indices.shape[-1])
    return _dense_to_ordered(np.swapaxes(dense, -2, -1))


def _block_sizes(op: str, BLOCK_SIZE: int | tuple[int, int]) -> tuple[int, int]:
    """(query block, key/value block) from an int or a pair, both positive."""
    sizes = (BLOCK_SIZE,) * 2 if isinstance(BLOCK_SIZE, Integral) else tuple(BLOCK_SIZE)
    if len(sizes) != 2 or not all(isinstance(n, Integral) and n > 0 for n in sizes):
        raise ArgumentError(f"{op}: BLOCK_SIZE must be positive, an int or a (query, key/value) "
                            f"pair of ints, got {BLOCK_SIZE!r}")
    return int(sizes[0]), int(sizes[1])


def _np(t: Tensor | None) -> np.ndarray | None:
    return None if t is None else t.detach().cpu().numpy()


class BlockMask:
    """PyTorch's block-sparse attention mask: for each block of ``BLOCK_SIZE[0]`` query rows,
    ``kv_num_blocks``/``kv_indices`` list the key/value blocks (``BLOCK_SIZE[1]`` columns)
    that are partly allowed (``mask_mod`` decides inside them) and
    ``full_kv_num_blocks``/``full_kv_indices`` those allowed entirely; every other block is
    skipped. ``q_num_blocks``/``q_indices`` (and the full ones) are the same by columns.
    Build one with :func:`create_block_mask` or :meth:`from_kv_blocks`.

    Example:
        >>> bm = create_block_mask(lambda b, h, q, kv: q >= kv, 1, 1, 384, 384)
        >>> bm.shape, round(bm.sparsity(), 2)
        ((1, 1, 384, 384), 33.33)
    """

    def __init__(self, seq_lengths: tuple[int, int], kv_num_blocks: Tensor,
                 kv_indices: Tensor, full_kv_num_blocks: Tensor | None,
                 full_kv_indices: Tensor | None, q_num_blocks: Tensor | None,
                 q_indices: Tensor | None, full_q_num_blocks: Tensor | None,
                 full_q_indices: Tensor | None,
                 BLOCK_SIZE: tuple[int, int] = (_DEFAULT_SPARSE_BLOCK_SIZE,) * 2,
                 mask_mod: _mask_mod_signature = noop_mask) -> None:
        if kv_indices.ndim < 2:
            raise RuntimeError(f"BlockMask: kv_indices must have at least 2 dimensions (…, "
                               f"q blocks, kv blocks), got shape {tuple(kv_indices.shape)}")
        if (full_kv_num_blocks is None) != (full_kv_indices is None):
            raise ArgumentError("BlockMask: full_kv_num_blocks and full_kv_indices must be both "
                                "provided or omitted")
        self.seq_lengths = tuple(seq_lengths)
        self.kv_num_blocks, self.kv_indices = kv_num_blocks, kv_indices
        self.full_kv_num_blocks, self.full_kv_indices = full_kv_num_blocks, full_kv_indices
        self.q_num_blocks, self.q_indices = q_num_blocks, q_indices
        self.full_q_num_blocks, self.full_q_indices = full_q_num_blocks, full_q_indices
        self.BLOCK_SIZE = tuple(BLOCK_SIZE)
        self.mask_mod = mask_mod

    @classmethod
    def from_kv_blocks(cls, kv_num_blocks: Tensor, kv_indices: Tensor,
                       full_kv_num_blocks: Tensor | None = None,
                       full_kv_indices: Tensor | None = None,
                       BLOCK_SIZE: int | tuple[int, int] = _DEFAULT_SPARSE_BLOCK_SIZE,
                       mask_mod: _mask_mod_signature | None = None,
                       seq_lengths: tuple[int, int] | None = None,
                       compute_q_blocks: bool = True) -> BlockMask:
        """A BlockMask from its key/value block lists; the query-side lists are derived
        (``compute_q_blocks``), ``seq_lengths`` default to the blocks' extent.

        Example:
            >>> bm = BlockMask.from_kv_blocks(ember.tensor([[[1, 1]]], dtype=ember.int32),
            ...                               ember.tensor([[[[0, 1], [1, 0]]]]), BLOCK_SIZE=4)
            >>> bm.to_dense()[0, 0].tolist(), bm.shape
            ([[1, 0], [0, 1]], (1, 1, 8, 8))
        """
        if kv_indices.ndim < 2:
            raise RuntimeError(f"BlockMask: kv_indices must have at least 2 dimensions, got "
                               f"shape {tuple(kv_indices.shape)}")
        if (full_kv_num_blocks is None) != (full_kv_indices is None):
            raise ArgumentError("BlockMask: full_kv_num_blocks and full_kv_indices must be both "
                                "provided or omitted")
        block = _block_sizes("BlockMask.from_kv_blocks", BLOCK_SIZE)
        if seq_lengths is None:
            seq_lengths = (kv_indices.shape[-2] * block[0], kv_indices.shape[-1] * block[1])
        q_side: list[Tensor | None] = [None] * 4
        if compute_q_blocks:
            device = kv_indices.device
            pairs = [(kv_num_blocks, kv_indices), (full_kv_num_blocks, full_kv_indices)]
            for i, (num, idx) in enumerate(pairs):
                if num is not None:
                    q_side[2 * i:2 * i + 2] = (ember.tensor(a, device=device)
                                               for a in _transpose_ordered(_np(num), _np(idx)))
        return cls(seq_lengths, kv_num_blocks, kv_indices, full_kv_num_blocks,
                   full_kv_indices, *q_side, BLOCK_SIZE=block,
                   mask_mod=mask_mod if mask_mod is not None else noop_mask)

    @property
    def shape(self) -> tuple[int, ...]:
        """(*batch dims, Q_LEN, KV_LEN)."""
        return (*self.kv_indices.shape[:-2], *self.seq_lengths)

    def numel(self) -> int:
        """The number of mask elements, sparsity not counted.

        Example:
            >>> create_block_mask(noop_mask, 2, 1, 4, 5).numel()
            40
        """
        return math.prod(self.shape)

    def sparsity(self) -> float:
        """The percentage of blocks skipped (not computed), as PyTorch counts it (against the
        unpadded lengths, so it can be negative when the lengths are not block multiples).

        Example:
            >>> create_block_mask(lambda b, h, q, kv: q >= kv, 1, 1, 512, 512).sparsity()
            37.5
        """
        computed = int(self.kv_num_blocks.sum().item())
        if self.full_kv_num_blocks is not None:
            computed += int(self.full_kv_num_blocks.sum().item())
        return 100 * (1 - computed * self.BLOCK_SIZE[0] * self.BLOCK_SIZE[1] / self.numel())

    def dense_blocks(self) -> tuple[np.ndarray, np.ndarray | None]:
        """(listed, full): boolean (…, q blocks, kv blocks) arrays, listed covering partial and
        full blocks, full None when the mask keeps no full blocks."""
        cols = self.kv_indices.shape[-1]
        listed = _ordered_to_dense(_np(self.kv_num_blocks), _np(self.kv_indices), cols) > 0
        if self.full_kv_num_blocks is None:
            return listed, None
        full = _ordered_to_dense(_np(self.full_kv_num_blocks), _np(self.full_kv_indices),
                                 self.full_kv_indices.shape[-1]) > 0
        return listed | full, full

    def to_dense(self) -> Tensor:
        """The (…, q blocks, kv blocks) int32 0/1 matrix of blocks computed (partial or full).

        Example:
            >>> create_block_mask(lambda b, h, q, kv: q >= kv, 1, 1, 4, 4,
            ...                   BLOCK_SIZE=2).to_dense().tolist()
            [[[[1, 0], [1, 1]]]]
        """
        return ember.tensor(self.dense_blocks()[0].astype(np.int32),
                            device=self.kv_indices.device)

    def __getitem__(self, index: Any) -> BlockMask:
        """The mask of some batch entries, heads or query-block rows; an integer keeps its
        dimension (as PyTorch's) and one out of range raises an IndexError (PyTorch's gives an
        empty mask). The result's mask_mod raises until it is set again.

        Example:
            >>> bm = create_block_mask(lambda b, h, q, kv: q >= kv, 2, 4, 256, 256)
            >>> bm[1, 2:].kv_num_blocks.shape
            ember.Size([1, 2, 2])
        """
        index = index if isinstance(index, tuple) else (index,)
        if len(index) > 3:
            raise IndexError(f"BlockMask: at most 3 indices (batch, head, query block), got "
                             f"{len(index)}")
        sizes = self.kv_num_blocks.shape[:3]
        for dim, (i, n) in enumerate(zip(index, sizes)):
            if isinstance(i, int) and not -n <= i < n:
                raise IndexError(f"BlockMask: index {i} is out of range for dimension {dim} "
                                 f"(batch, head, query block) of size {n}")
        index = tuple(slice(i % n, i % n + 1) if isinstance(i, int) else
                      (_np(i) if isinstance(i, Tensor) else i) for i, n in zip(index, sizes))

        def take(t: Tensor | None) -> Tensor | None:
            return None if t is None else ember.tensor(np.ascontiguousarray(_np(t)[index]),
                                                       device=t.device)
        return BlockMask.from_kv_blocks(
            take(self.kv_num_blocks), take(self.kv_indices), take(self.full_kv_num_blocks),
            take(self.full_kv_indices), BLOCK_SIZE=self.BLOCK_SIZE,
            mask_mod=_sliced_mask_mod_error, seq_lengths=self.seq_lengths,
            compute_q_blocks=self.q_indices is not None)

    def to(self, device: str | ember.device) -> BlockMask:
        """The same mask with its index tensors on ``device``.

        Example:
            >>> create_block_mask(noop_mask, 1, 1, 4, 4).to("cpu").kv_indices.device
            device(type='cpu')
        """
        names = ("kv_num_blocks", "kv_indices", "full_kv_num_blocks", "full_kv_indices",
                 "q_num_blocks", "q_indices", "full_q_num_blocks", "full_q_indices")
        moved = [None if getattr(self, n) is None else getattr(self, n).to(device)
                 for n in names]
        return BlockMask(self.seq_lengths, *moved, BLOCK_SIZE=self.BLOCK_SIZE,
                         mask_mod=self.mask_mod)

    def __repr__(self) -> str:
        def shape(t: Tensor | None) -> object:
            return None if t is None else t.shape
        lines = [f"    {n}={shape(getattr(self, n))}," for n in (
            "kv_num_blocks", "kv_indices", "full_kv_num_blocks", "full_kv_indices",
            "q_num_blocks", "q_indices", "full_q_num_blocks", "full_q_indices")]
        name = getattr(self.mask_mod, "__name__", self.mask_mod)
        return "\n".join(["BlockMask(", *lines, f"    BLOCK_SIZE={self.BLOCK_SIZE},",
                          f"    shape={self.shape},", f"    sparsity={self.sparsity():.2f}%,",
                          f"    mask_mod={name}", ")"])


def create_block_mask(mask_mod: _mask_mod_signature, B: int | None, H: int | None,
                      Q_LEN: int, KV_LEN: int, device: str | ember.device | None = None,
                      BLOCK_SIZE: int | tuple[int, int] = _DEFAULT_SPARSE_BLOCK_SIZE,
                      _compile: bool = False, separate_full_blocks: bool = True) -> BlockMask:
    """The :class:`BlockMask` of ``mask_mod`` for (B, H, Q_LEN, KV_LEN) attention (B or H
    None: one mask shared by all): a block with every element allowed is full, one with some
    allowed partial (``separate_full_blocks=False`` lists them all as partial), one with none
    is skipped. Lengths need not be block multiples (the last blocks, padded, are never
    full). ``_compile`` is accepted for PyTorch compatibility and changes nothing.

    Example:
        >>> bm = create_block_mask(lambda b, h, q, kv: q >= kv, None, None, 300, 300)
        >>> bm.kv_num_blocks.tolist(), bm.full_kv_num_blocks.tolist()
        ([[[1, 1, 3]]], [[[0, 1, 0]]])
    """
    if is_score_mod(mask_mod):
        raise TypeError(f"create_block_mask requires a mask_mod (b, h, q_idx, kv_idx), got "
                        f"the score_mod {mask_mod!r}; masks made from a score_mod come from "
                        f"create_mask")
    qb, kb = _block_sizes("create_block_mask", BLOCK_SIZE)
    mask = _np(check_boolean_mask("create_block_mask",
                                  create_mask(mask_mod, B, H, Q_LEN, KV_LEN, device)))
    rows, cols = -(-Q_LEN // qb), -(-KV_LEN // kb)
    padded = np.zeros((*mask.shape[:2], rows * qb, cols * kb), dtype=np.int32)
    padded[..., :Q_LEN, :KV_LEN] = mask
    counts = padded.reshape(*mask.shape[:2], rows, qb, cols, kb).sum(axis=(3, 5))
    full = counts == qb * kb if separate_full_blocks else np.zeros_like(counts, dtype=bool)
    device = device or "cpu"
    pairs = [_dense_to_ordered((counts > 0) & ~full)]
    if separate_full_blocks:
        pairs.append(_dense_to_ordered(full))
    kv = [ember.tensor(a, device=device) for pair in pairs for a in pair]
    kv += [None] * (4 - len(kv))
    return BlockMask.from_kv_blocks(*kv, BLOCK_SIZE=(qb, kb), mask_mod=mask_mod,
                                    seq_lengths=(Q_LEN, KV_LEN))
