"""Matrix products with nested tensors, as PyTorch's jagged layout has them: ``F.linear``,
``matmul`` (``@``) and ``bmm``, with a dense operand on either side or two nested tensors of
one ragged structure. A product that leaves the ragged dimension alone computes on the packed
values; one that pairs each sequence with its own dense matrix, or sums over the ragged
dimension, pads with zeros (which add nothing to a product) and unpads.
"""

from __future__ import annotations

from typing import Any

from ember.errors import ShapeError
from ember.nested.functional import implements, padded, unpadded
from ember.nested.nested_tensor import NestedTensor, check_same_structure, unsupported
from ember.ops.join import cat
from ember.ops.linalg import bmm, matmul
from ember.ops.linear import linear
from ember.ops.shape import split
from ember.tensor import Tensor

__all__: list[str] = []

# nt @ (B, n, m) gathers one matrix per row up to this many numbers, else loops over sequences
_ROW_MATRICES = 1 << 20


def _ragged_not_last(op: str, nt: NestedTensor) -> None:
    if nt._ragged_idx == nt.dim() - 1:
        raise ShapeError(f"{op}: the last dimension of a nested tensor of shape {nt.shape} is "
                         "its ragged one. Hint: transpose it away first")


@implements(linear)
def nested_linear(input: NestedTensor, weight: Tensor, bias: Tensor | None = None
                  ) -> NestedTensor:
    """``F.linear`` over the last dimension of each sequence."""
    _ragged_not_last("linear", input)
    return input._with(linear(input._values, weight, bias))


def _refuse(input: Any, other: Any) -> None:
    shapes = " @ ".join(str(tuple(x.shape)) if isinstance(x, (NestedTensor, Tensor)) else
                        type(x).__name__ for x in (input, other))
    raise unsupported(f"matmul: {shapes} (nested tensors multiply a dense matrix on either "
                      "side, a dense (B, …) batch of one matrix per sequence, or a nested tensor "
                      "of the same ragged structure, where the ragged dimension is not the one "
                      "summed over)")


def _per_sequence(nt: NestedTensor, dense: Tensor, nested_first: bool) -> NestedTensor:
    """``nt`` padded with zeros times a dense (B or 1, …) batch of one matrix per sequence (on
    the right when ``nested_first``, else on the left), unpadded; ``dense`` broadcasts against
    the padded shape with size 1 at the ragged dimension, when that one is a batch one."""
    r, n, batch = nt._ragged_idx, nt.dim(), nt._ragged.batch
    if dense.shape[0] not in (1, batch) or (r < n - 2 and dense.shape[r] != 1):
        raise ShapeError(f"matmul: a dense operand of shape {tuple(dense.shape)} with a nested "
                         f"tensor of shape {nt.shape} holds one matrix per sequence: it needs "
                         f"{batch} or 1 first and 1 at the ragged dimension {r}")
    pad = padded(nt, 0.0)
    try:
        return unpadded(nt, matmul(pad, dense) if nested_first else matmul(dense, pad))
    except ShapeError as error:
        raise ShapeError(f"matmul: a nested tensor of shape {nt.shape} with a dense operand of "
                         f"shape {tuple(dense.shape)}: {error}") from None


@implements(matmul, methods=("matmul", "__matmul__"))
def nested_matmul(input: Any, other: Any) -> Any:
    """The product of each sequence with ``other``: a dense matrix (n, m) or vector (n,), a
    dense batch (B or 1, …, n, m) of one matrix per sequence, or a nested tensor of the same
    ragged structure (…, n, m) whose ragged dimension is left of the last two; a nested
    (B, …, n, j) times a nested (B, …, j, m) of one structure sums over the ragged dimension
    (a dense (B, …, n, m)). A dense matrix or (B, …) batch on the left multiplies a nested
    tensor whose ragged dimension is not its second-to-last."""
    if not isinstance(input, NestedTensor):
        return _dense_at_nested(input, other)
    if isinstance(other, NestedTensor):
        return _nested_at_nested(input, other)
    if not isinstance(other, Tensor) or other.ndim > input.dim():
        _refuse(input, other)
    _ragged_not_last("matmul", input)
    if other.ndim <= 2:
        return input._with(matmul(input._values, other))
    if other.ndim != input.dim():
        _refuse(input, other)
    if input.dim() == 3 and input._ragged_idx == 1 and other.shape[0] == 1:
        return input._with(matmul(input._values, other[0]))
    if input.dim() == 3 and input._ragged_idx == 1 and other.shape[0] == input._ragged.batch:
        rows, (n, m) = input._values.shape[0], other.shape[-2:]
        if rows * n * m <= _ROW_MATRICES:  # (short sequences: each row's matrix gathered,
            mats = other.index_select(0, input._ragged.row_batch())  # one batched product)
            return input._with(matmul(input._values.unsqueeze(-2), mats).squeeze(-2))
        pieces = split(input._values, input._ragged.lengths.tolist())  # (one per sequence)
        return input._with(cat([matmul(p, w) for p, w in zip(pieces, other.unbind(0))]))
    return _per_sequence(input, other, True)


def _nested_at_nested(input: NestedTensor, other: NestedTensor) -> Any:
    n, r = input.dim(), input._ragged_idx
    if other.dim() != n:
        _refuse(input, other)
    if r < n - 2:
        return input._with(matmul(input._values, check_same_structure("matmul", input, other)))
    if r == n - 1 and other._ragged_idx == n - 2:  # (…, n, j) @ (…, j, m): a dense result
        if other._ragged is not input._ragged:
            raise ShapeError(f"matmul: nested tensors of shapes {input.shape} and {other.shape} "
                             "sum over ragged dimensions of different structures (each ragged "
                             "size j<n> belongs to one offsets tensor). Hint: build both on one "
                             "offsets tensor, e.g. ember.nested.nested_tensor_from_jagged("
                             "values, nt.offsets())")
        return matmul(padded(input, 0.0), padded(other, 0.0))
    _refuse(input, other)


def _dense_at_nested(input: Any, other: NestedTensor) -> Any:
    n, r = other.dim(), other._ragged_idx
    if not isinstance(input, Tensor) or n < 3 or r == n - 2 or input.ndim not in (2, n):
        _refuse(input, other)
    if input.ndim == 2:
        return other._with(matmul(input, other._values))
    return _per_sequence(other, input, False)


@implements(bmm)
def nested_bmm(input: NestedTensor, mat2: Any) -> Any:
    """A (B, j, n) nested tensor times a dense (B, n, m) (sequence b times matrix b), or a
    (B, n, j) one times a (B, j, m) one of the same structure (a dense (B, n, m))."""
    if not isinstance(input, NestedTensor) or input.dim() != 3 or \
            getattr(mat2, "ndim", None) != 3 and not (isinstance(mat2, NestedTensor)
                                                      and mat2.dim() == 3):
        _refuse(input, mat2)
    return nested_matmul(input, mat2)
