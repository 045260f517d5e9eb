"""The ragged structure of nested tensors: offsets, the symbolic size ``j1`` that stands for
the ragged dimension, and the differentiable padding and unpadding between packed values and
a dense (batch, max length, …) tensor that ops over the ragged dimension compute with.
"""

from __future__ import annotations

import itertools
import weakref
from typing import Any

import numpy as np

from ember.ops.creation import from_numpy, full
from ember.ops.join import cat
from ember.ops.overrides import TensorLikeOperand, outermost_op
from ember.tensor import Tensor

__all__: list[str] = []

_NUMBERS = itertools.count(1)


class RaggedSizeError(TensorLikeOperand):
    """A ragged size used as a number (a TypeError): the ops that take nested tensors catch it,
    as any :class:`~ember.ops.overrides.TensorLikeOperand`, and hand the call over. The
    message names the op the user called, found when it is read (no stack walk when caught)."""

    def __str__(self) -> str:
        op = outermost_op(self.__traceback__)
        message = super().__str__()
        return message if op == outermost_op(None) else f"{op}: {message}"


class RaggedDim:
    """The size of a nested tensor's ragged dimension, as PyTorch's symbolic ``j1``: one per
    ragged structure, equal only to itself, printed ``j<n>``. It is no number: using it as one
    raises an error that points at the lengths.

    Example:
        >>> nt = ember.nested.nested_tensor([ember.zeros(2, 3), ember.zeros(1, 3)])
        >>> j = nt.shape[1]
        >>> j == nt.shape[1], j == ember.nested.nested_tensor([ember.zeros(2, 3)]).shape[1]
        (True, False)
    """

    __slots__ = ("number",)

    def __init__(self) -> None:
        self.number = next(_NUMBERS)

    def __repr__(self) -> str:
        return f"j{self.number}"

    def __index__(self) -> int:
        raise RaggedSizeError(f"the ragged dimension {self} of a nested tensor has no single "
                              "size. Hint: its lengths are nt.offsets().diff(); "
                              "to_padded_tensor() makes a dense tensor")

    __int__ = __index__

    def __mul__(self, other: Any) -> int:
        # a core op computing with the shape (reshape's numel, group_norm's channels % groups):
        # it hands the call over, or the user reads which op met the ragged size
        return self.__index__()

    __rmul__ = __add__ = __radd__ = __sub__ = __rsub__ = __floordiv__ = __rfloordiv__ = \
        __truediv__ = __rtruediv__ = __mod__ = __rmod__ = __mul__


class Ragged:
    """Offsets (B + 1 row boundaries into the packed values: int64, or the integer tensor the
    user gave), the lengths they give, the :class:`RaggedDim` naming them, and index arrays
    for padding, made once per length."""

    __slots__ = ("offsets", "lengths", "dim", "min_seqlen", "max_seqlen", "_indices",
                 "__weakref__")

    def __init__(self, offsets: Tensor, min_seqlen: int | None = None,
                 max_seqlen: int | None = None, dim: RaggedDim | None = None) -> None:
        self.offsets = offsets
        self.lengths = np.diff(offsets.numpy())
        self.dim = RaggedDim() if dim is None else dim
        longest = int(self.lengths.max()) if len(self.lengths) else 0
        shortest = int(self.lengths.min()) if len(self.lengths) else 0
        self.max_seqlen = longest if max_seqlen is None else int(max_seqlen)
        self.min_seqlen = shortest if min_seqlen is None else int(min_seqlen)
        self._indices: dict[Any, Tensor] = {}

    @property
    def batch(self) -> int:
        return len(self.lengths)

    @property
    def total(self) -> int:
        return int(self.offsets.numpy()[-1])

    def _cached(self, key: Any, make: Any) -> Tensor:
        index = self._indices.get(key)
        if index is None:
            index = self._indices[key] = from_numpy(make()).to(self.offsets.device)
        return index

    def row_batch(self) -> Tensor:
        """The batch index of each packed row, (total,)."""
        return self._cached("batch", lambda: np.repeat(np.arange(self.batch), self.lengths))

    def _slots(self, length: int) -> np.ndarray:
        """The slot ``b * length + i`` of each packed row (row i of sequence b)."""
        starts = self.offsets.numpy()[:-1]
        batch = np.repeat(np.arange(self.batch), self.lengths)
        return batch * length + np.arange(self.total) - starts[batch]

    def mask(self, length: int) -> Tensor:
        """(B, length) bool: True where a position holds a value."""
        return self._cached(("mask", length),
                            lambda: np.arange(length)[None, :] < self.lengths[:, None])

    def pad_rows(self, rows: Tensor, padding: float, length: int) -> Tensor:
        """Packed ``rows`` (total, *inner) as (B, length, *inner), ``padding`` past each end."""
        def sources() -> np.ndarray:
            index = np.full(self.batch * length, self.total, dtype=np.int64)
            index[self._slots(length)] = np.arange(self.total)
            return index
        inner = tuple(rows.shape[1:])
        filler = full((1, *inner), padding, dtype=rows.dtype, device=rows.device)
        picked = cat([rows, filler]).index_select(0, self._cached(("pad", length), sources))
        return picked.reshape((self.batch, length, *inner))

    def unpad_rows(self, padded: Tensor) -> Tensor:
        """(B, length, *inner) back to the packed rows (total, *inner)."""
        length, inner = padded.shape[1], tuple(padded.shape[2:])
        flat = padded.reshape((self.batch * length, *inner))
        return flat.index_select(0, self._cached(("unpad", length),
                                                 lambda: self._slots(length)))


_DIMS: dict[int, tuple[weakref.ref, RaggedDim]] = {}  # id(offsets) -> (offsets, its j)
_RAGGED: weakref.WeakValueDictionary = weakref.WeakValueDictionary()  # (id, hints) -> Ragged


def _dim_of(offsets: Tensor) -> RaggedDim:
    """The one ragged size of ``offsets``, for as long as that tensor lives."""
    key = id(offsets)
    entry = _DIMS.get(key)
    if entry is None or entry[0]() is not offsets:
        def forget(ref: weakref.ref) -> None:
            if _DIMS.get(key, (None,))[0] is ref:
                del _DIMS[key]
        entry = _DIMS[key] = (weakref.ref(offsets, forget), RaggedDim())
    return entry[1]


def ragged_for(offsets: Tensor, min_seqlen: int | None = None,
               max_seqlen: int | None = None) -> Ragged:
    """The structure of ``offsets`` with these seqlen hints (when left out, the shortest and
    longest lengths): one ragged size ``j`` for every nested tensor built on one offsets tensor
    while it lives, whatever hints each got, so they combine as in PyTorch; each keeps its own
    hints (how far ``to_padded_tensor`` pads)."""
    key = (id(offsets), min_seqlen, max_seqlen)
    ragged = _RAGGED.get(key)
    if ragged is None or ragged.offsets is not offsets:
        ragged = _RAGGED[key] = Ragged(offsets, min_seqlen, max_seqlen, _dim_of(offsets))
    return ragged
