"""Tensors laid end to end in one vector, padded to a multiple of the world size and cut into
equal shards, rank r keeping shard r: the layout of ZeRO's flat parameter groups and of
FSDP's flat parameters."""

from __future__ import annotations

import numpy as np


class FlatLayout:
    """Where each of some tensors (their sizes given) lies in the flat vector and in this
    rank's shard ``[lo, lo + shard_size)`` of it."""

    __slots__ = ("offsets", "total", "world", "shard_size", "lo")

    def __init__(self, sizes: list[int], rank: int, world: int) -> None:
        self.offsets = np.concatenate([[0], np.cumsum(sizes)]).astype(int).tolist()
        self.total = self.offsets[-1]
        self.world = world
        self.shard_size = -(-self.total // world)
        self.lo = rank * self.shard_size

    def flat(self, arrays: list, dtype: np.dtype) -> np.ndarray:
        """The arrays (one per tensor, None for zeros) end to end in ``dtype``, padded with
        zeros."""
        out = np.zeros(self.shard_size * self.world, dtype)
        for a, lo, hi in zip(arrays, self.offsets, self.offsets[1:]):
            if a is not None:
                out[lo:hi] = np.asarray(a).reshape(-1)
        return out

    def mine(self, arrays: list, dtype: np.dtype) -> np.ndarray:
        """This rank's shard of the arrays laid end to end in ``dtype`` (zeros for None and
        padding)."""
        out = np.zeros(self.shard_size, dtype)
        for a, (lo, hi, start) in zip(arrays, self.pieces()):
            if a is not None and lo < hi:
                out[lo:hi] = np.asarray(a).reshape(-1)[start : start + hi - lo]
        return out

    def pieces(self) -> list[tuple[int, int, int]]:
        """Per tensor, the slice ``[lo, hi)`` of this rank's shard holding part of it and the
        flat index in the tensor where that part starts (an empty slice at 0 when none)."""
        end = self.lo + self.shard_size
        out = []
        for a, b in zip(self.offsets, self.offsets[1:]):
            s, e = max(a, self.lo), min(b, end)
            out.append((s - self.lo, e - self.lo, s - a) if s < e else (0, 0, 0))
        return out
