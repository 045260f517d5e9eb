"""Nested-tensor ops that reorder, pick or cut dimensions, as PyTorch's jagged layout has
them: ``permute``, ``movedim``, ``select``, ``chunk`` (also of the batch), ``diff`` and the
indexing ``nt[i, …]`` / ``nt[..., k]``; each acts on the packed values.
"""

from __future__ import annotations

import operator
from collections.abc import Sequence
from typing import Any

from ember.errors import ArgumentError, ArgumentTypeError, IndexOutOfRange, ShapeError
from ember.nested.functional import from_rows, implements, logical_dim, to_rows
from ember.nested.nested_tensor import NestedTensor, check_same_structure, unsupported
from ember.nested.ragged import ragged_for
from ember.ops.construct import diff
from ember.ops.creation import from_numpy
from ember.ops.dims import normalize_dim
from ember.ops.shape import chunk, movedim, permute, select
from ember.tensor import Tensor

__all__: list[str] = []


@implements(permute)
def nested_permute(input: NestedTensor, *dims: Any) -> NestedTensor:
    """The dimensions reordered; the batch one stays first (``nt.permute(0, 2, 1, 3)``)."""
    if len(dims) == 1 and isinstance(dims[0], (tuple, list)):
        dims = tuple(dims[0])
    n = input.dim()
    order = [normalize_dim(d, n, "permute") for d in dims]
    if len(order) != n or sorted(order) != list(range(n)):
        raise ArgumentError(f"permute: dims {tuple(dims)} must be a permutation of the {n} dims "
                            f"of a nested tensor of shape {input.shape}")
    if order[0] != 0:
        raise ArgumentError(f"permute: dims {tuple(dims)} move the batch dimension 0 of a "
                            f"nested tensor of shape {input.shape}; it must stay first")
    values = input._values.permute(*(d - 1 for d in order[1:]))
    return input._with(values, order.index(input._ragged_idx))


@implements(movedim)
def nested_movedim(input: NestedTensor, source: int | Sequence[int],
                   destination: int | Sequence[int]) -> NestedTensor:
    """Dimensions ``source`` moved to ``destination`` (neither the batch dimension)."""
    sources = [source] if isinstance(source, int) else list(source)
    targets = [destination] if isinstance(destination, int) else list(destination)
    if len(sources) != len(targets):
        raise ArgumentError(f"movedim: source {source} and destination {destination} must "
                            "have the same number of dims")
    n = input.dim()
    src = [logical_dim(input, d, "movedim") for d in sources]
    dst = [logical_dim(input, d, "movedim") for d in targets]
    rest = iter(d for d in range(n) if d not in src)
    placed = dict(zip(dst, src))
    return nested_permute(input, *(placed[i] if i in placed else next(rest) for i in range(n)))


@implements(select, methods=("select",))
def nested_select(input: NestedTensor, dim: int, index: int) -> Tensor | NestedTensor:
    """Sequence ``index`` (``dim`` 0, a dense tensor) or the slice ``index`` of a dimension
    that is not the ragged one (a nested tensor)."""
    d = logical_dim(input, dim, "select", batch=True, ragged=False)
    if d == 0:
        return input[index]
    r = input._ragged_idx
    return input._with(input._values.select(d - 1, index), r - (d < r))


@implements(diff)
def nested_diff(input: NestedTensor, n: int = 1, dim: int = -1,
                prepend: NestedTensor | None = None,
                append: NestedTensor | None = None) -> NestedTensor:
    """The ``n``-th differences along ``dim`` (neither batch nor ragged), as ``Tensor.diff``;
    ``prepend``/``append`` are nested tensors of this structure."""
    d = logical_dim(input, dim, "diff", ragged=False)
    ends = [None if x is None else check_same_structure("diff", input, x)
            for x in (prepend, append)]
    return input._with(input._values.diff(n, d - 1, *ends))


@implements(chunk)
def nested_chunk(input: NestedTensor, chunks: int, dim: int = 0) -> tuple[NestedTensor, ...]:
    """``chunks`` pieces along ``dim`` (not the ragged one); along the batch dimension, nested
    tensors of up to ``ceil(B / chunks)`` sequences each, as in PyTorch."""
    d = logical_dim(input, dim, "chunk", batch=True, ragged=False)
    if d != 0:
        return tuple(input._with(v) for v in input._values.chunk(chunks, d - 1))
    if chunks <= 0:
        raise ArgumentError(f"chunk: chunks must be positive, got {chunks}")
    ragged, step = input._ragged, -(-input._ragged.batch // chunks)
    bounds, rows = ragged.offsets.numpy(), to_rows(input)
    pieces = []
    for first in range(0, ragged.batch, step):
        last = min(first + step, ragged.batch)
        offsets = from_numpy(bounds[first:last + 1] - bounds[first]).to(ragged.offsets.device)
        values = from_rows(input, rows[int(bounds[first]):int(bounds[last])])
        pieces.append(NestedTensor(values, ragged_for(offsets), input._ragged_idx))
    return tuple(pieces)


def expand(self: NestedTensor, *sizes: Any) -> NestedTensor:
    """Size-1 dims other than batch and ragged expanded (a view); the batch and ragged sizes
    are given as they are or -1, as in PyTorch: ``nt.unsqueeze(-1).expand(B, -1, D, 2)``."""
    if len(sizes) == 1 and isinstance(sizes[0], (tuple, list)):
        sizes = tuple(sizes[0])
    r, batch = self._ragged_idx, self._ragged.batch
    if len(sizes) != self.dim() or sizes[0] not in (-1, batch) or \
            not (sizes[r] is self._ragged.dim or sizes[r] == -1):
        raise ShapeError(f"expand: a nested tensor of shape {self.shape} expands only dims "
                         f"other than batch and ragged: give {self.dim()} sizes with {batch} or "
                         f"-1 first and {self._ragged.dim} or -1 at dim {r}, got {sizes}")
    inner = [-1 if i == r else size for i, size in enumerate(sizes) if i]
    return self._with(self._values.expand(*inner))


def getitem(self: NestedTensor, index: Any) -> Tensor | NestedTensor:
    """Sequence ``i`` as a dense tensor (``nt[i]``), indexed further (``nt[i, 1:]``), or
    ``nt[..., k]``/``nt[..., a:b]``/``nt[..., None]``: the values indexed in dims right of the
    ragged one."""
    index = index if isinstance(index, tuple) else (index,)
    first = index[0] if index else None
    if not isinstance(first, bool) and _is_int(first):
        sequence = self.unbind()[_in_batch(self, operator.index(first))]
        return sequence[index[1:]] if len(index) > 1 else sequence
    rest = [i for i in index[1:] if i is not None]  # (None: a new size-1 dim)
    if first is Ellipsis and len(index) > 1 and len(rest) <= self.dim() - 1 - self._ragged_idx \
            and all(isinstance(i, slice) or (_is_int(i) and not isinstance(i, bool))
                    for i in rest):
        return self._with(self._values[index])
    raise unsupported(f"indexing with {index if len(index) > 1 else first!r}")


def _is_int(i: Any) -> bool:
    try:
        operator.index(i)
    except TypeError:
        return False
    return True


def _in_batch(nt: NestedTensor, i: int) -> int:
    batch = nt._ragged.batch
    if not -batch <= i < batch:
        raise IndexOutOfRange(f"index {i} is out of range for a nested tensor of {batch} "
                              f"sequences (shape {nt.shape})")
    return i


NestedTensor.__getitem__ = getitem
NestedTensor.expand = expand


def matrix_transpose(self: NestedTensor) -> NestedTensor:
    """The last two dimensions swapped (``nt.mT``, ``nt.mH`` and ``nt.adjoint()`` of real
    values), as ``nt.transpose(-2, -1)``."""
    return self.transpose(-2, -1) if not self.is_complex() else self.transpose(-2, -1).conj()


def is_same_size(self: NestedTensor, other: Any) -> bool:
    """Whether ``other`` is a nested tensor of this shape (its ragged size the same ``j``: one
    offsets tensor), as PyTorch answers.

    Example:
        >>> nt = ember.nested.nested_tensor([ember.ones(2, 3), ember.ones(1, 3)])
        >>> nt.is_same_size(nt * 2), nt.is_same_size(ember.nested.nested_tensor(nt.unbind()))
        (True, False)
    """
    if not isinstance(other, NestedTensor):
        raise ArgumentTypeError("is_same_size: expected a nested tensor (layout ember.jagged), "
                                f"got {type(other).__name__}")
    return self.shape == other.shape


def _as(op: str) -> Any:
    def method(self: NestedTensor, other: NestedTensor) -> NestedTensor:
        if not isinstance(other, NestedTensor):
            raise ArgumentTypeError(f"{op}_as: expected a nested tensor, got "
                                    f"{type(other).__name__}")
        return getattr(self, op)(*other.shape)
    method.__name__ = method.__qualname__ = f"{op}_as"
    method.__doc__ = f"``{op}`` to ``other``'s shape (a nested tensor of the same ragged size)."
    return method


def type_(self: NestedTensor, dtype: Any = None, non_blocking: bool = False) -> Any:
    """The values' type name (no ``dtype``), or the nested tensor converted to ``dtype``."""
    if dtype is None:
        return self._values.type()
    return self._with(self._values.type(dtype, non_blocking))


def sum_to_size(self: NestedTensor, *size: Any) -> Tensor:
    """A dense tensor of shape ``size``: the sum over batch and ragged dims together (every
    row of every sequence) and over the dims ``size`` gives 1, as PyTorch's
    ``values().sum_to_size(size)``; a size of all the dims, with 1 on the ragged one and 1 or
    the batch size on the batch one, sums each sequence (``(B, 1, …)``) or all of them.

    Example:
        >>> nt = ember.nested.nested_tensor([ember.ones(2, 3), ember.ones(1, 3)])
        >>> nt.sum_to_size(2, 1, 3)
        tensor([[[2., 2., 2.]],
        <BLANKLINE>
                [[1., 1., 1.]]])
    """
    size = tuple(size[0]) if len(size) == 1 and isinstance(size[0], (tuple, list)) else size
    if self._ragged_idx == 1 and len(size) == self.dim() and size[1] == 1 and \
            size[0] in (1, self._ragged.batch):  # (per sequence, then as a dense tensor)
        return self.sum(dim=1, keepdim=True).sum_to_size(size)
    if self._ragged_idx != 1 or len(size) >= self.dim():
        raise ShapeError(f"sum_to_size: a nested tensor of shape {self.shape} sums to a size "
                         f"of at most {self.dim() - 1} dims (its batch and ragged dims summed "
                         f"together, the ragged one second) or of {self.dim()} with 1 on the "
                         f"ragged dim and 1 or {self._ragged.batch} on the batch one, got "
                         f"{size}")
    return self._values.sum_to_size(size)


NestedTensor.sum_to_size = sum_to_size
NestedTensor.mT = NestedTensor.mH = property(matrix_transpose)
NestedTensor.adjoint = matrix_transpose
NestedTensor.is_same_size = is_same_size
NestedTensor.view_as, NestedTensor.reshape_as, NestedTensor.expand_as = (
    _as("view"), _as("reshape"), _as("expand"))
NestedTensor.type = type_
