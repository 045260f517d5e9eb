"""How a :class:`~ember.distributed.tensor.DTensor` lies along one mesh dimension
(``torch.distributed.tensor.placement_types``): :class:`Shard` (split along a tensor
dimension, in ``torch.chunk`` pieces), :class:`Replicate` (whole on every rank) or
:class:`Partial` (every rank holds a term; the value is their reduction).

Example:
    >>> Shard(0), Replicate(), Partial()
    (Shard(dim=0), Replicate(), Partial(sum))
    >>> chunk_bounds(5, 4, 3)          # torch.chunk(5 elements, 4): sizes 2, 2, 1, then 0
    (5, 5)
"""

from __future__ import annotations

import math

from ember.errors import ArgumentError

__all__ = ["Partial", "Placement", "Replicate", "Shard", "chunk_bounds"]


class Placement:
    """Base of the placements: answers ``is_shard`` / ``is_replicate`` / ``is_partial``."""

    def is_shard(self, dim: int | None = None) -> bool:
        return False

    def is_replicate(self) -> bool:
        return False

    def is_partial(self) -> bool:
        return False


class Shard(Placement):
    """Split along tensor dimension ``dim``; rank ``i`` of the mesh dimension holds the
    ``i``-th of ``torch.chunk``'s pieces (the last ones smaller, possibly empty)."""

    def __init__(self, dim: int) -> None:
        self.dim = dim

    def is_shard(self, dim: int | None = None) -> bool:
        return dim is None or dim == self.dim

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Shard) and other.dim == self.dim

    def __hash__(self) -> int:
        return hash(("Shard", self.dim))

    def __repr__(self) -> str:
        return f"Shard(dim={self.dim})"


class Replicate(Placement):
    """The whole tensor on every rank of the mesh dimension."""

    def is_replicate(self) -> bool:
        return True

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Replicate)

    def __hash__(self) -> int:
        return hash("Replicate")

    def __repr__(self) -> str:
        return "Replicate()"


_REDUCE_OPS = ("sum", "avg")


class Partial(Placement):
    """Every rank holds a term of the value, which is their ``reduce_op`` (``"sum"`` or
    ``"avg"``) over the mesh dimension (the output of a matmul over a sharded inner
    dimension)."""

    def __init__(self, reduce_op: str = "sum") -> None:
        if reduce_op not in _REDUCE_OPS:
            raise ArgumentError(f"Partial: reduce_op {reduce_op!r} is not supported; Ember's "
                                f"DTensor supports {_REDUCE_OPS}")
        self.reduce_op = reduce_op

    def is_partial(self) -> bool:
        return True

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Partial) and other.reduce_op == self.reduce_op

    def __hash__(self) -> int:
        return hash(("Partial", self.reduce_op))

    def __repr__(self) -> str:
        return f"Partial({self.reduce_op})"


def chunk_bounds(size: int, chunks: int, index: int) -> tuple[int, int]:
    """``[start, end)`` of piece ``index`` when ``size`` elements are split as ``torch.chunk``
    splits them into ``chunks``: pieces of ``ceil(size / chunks)``, the last ones short or
    empty."""
    piece = math.ceil(size / chunks) if size else 0
    return min(index * piece, size), min((index + 1) * piece, size)
