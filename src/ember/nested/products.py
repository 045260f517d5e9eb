"""Matrix products with nested tensors, as PyTorch's jagged layout has them: ``F.linear``,
``matmul`` (``@``) and ``bmm``, with a dense operand on either side or two nested tensors of
one ragged structure. A product that leaves the ragged dimension alone computes on the packed
values; one that pairs each sequence with its own dense matrix, or sums over the ragged
dimension, pads with zeros (which add nothing to a product) and unpads.
"""

from __future__ import annotations

from typing import Any

from ember.errors import ArgumentError, ShapeError
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
    if not isinstance(input, NestedTensor) or isinstance(weight, NestedTensor):
        raise ArgumentError(f"linear: a nested tensor is taken as the input, not the weight "
                            f"(got input {_shape(input)} and a nested weight {weight.shape}), "
                            "as PyTorch's. Hint: the weight is a dense (out_features, "
                            "in_features) matrix: F.linear(nt, weight)")
    _ragged_not_last("linear", input)
    if weight.ndim and weight.shape[-1] != input.shape[-1]:  # (named with the nested shape)
        raise ShapeError(f"linear: input of shape {input.shape} has {input.shape[-1]} features "
                         f"but weight of shape {tuple(weight.shape)} expects {weight.shape[-1]}")
    return input._with(linear(input._values, weight, bias))


def _shape(x: Any) -> str:
    return str(x.shape) if isinstance(x, NestedTensor) else str(tuple(x.shape))


def _refuse(op: str, input: Any, other: Any) -> None:
    shapes = " @ ".join(_shape(x) if isinstance(x, (NestedTensor, Tensor)) else
                        type(x).__name__ for x in (input, other))
    raise unsupported(f"{op}: {shapes} (nested tensors multiply a dense matrix on either "
                      "side, a dense (B, …) batch of one matrix per sequence, or a nested tensor "
                      "of the same ragged structure, where the ragged dimension is not the one "
                      "summed over)")


def _check_inner(op: str, input: Any, other: Any) -> None:
    """The sizes the product sums over (neither ragged) agree; else the error names the nested
    shape, not its packed values'."""
    if other.ndim == 0:
        raise ShapeError(f"{op}: {_shape(input)} @ (): both operands need at least 1 dimension; "
                         "use mul (*) to scale by a 0-d tensor")
    n, k = input.shape[-1], other.shape[-2 if other.ndim > 1 else 0]
    if n != k:
        raise ShapeError(f"{op}: {_shape(input)} @ {_shape(other)}: inner sizes {n} and {k} "
                         "differ")


def _per_sequence(op: str, nt: NestedTensor, dense: Tensor, nested_first: bool
                  ) -> NestedTensor:
    """``nt`` padded with zeros times a dense (B or 1, …) batch of one matrix per sequence (on
    the right when ``nested_first``, else on the left), unpadded; ``dense`` broadcasts against
    the padded shape with size 1 at the ragged dimension, when that one is a batch one."""
    r, n, batch = nt._ragged_idx, nt.dim(), nt._ragged.batch
    if dense.shape[0] not in (1, batch) or (r < n - 2 and dense.shape[r] != 1):
        raise ShapeError(f"{op}: a dense operand of shape {tuple(dense.shape)} with a nested "
                         f"tensor of shape {nt.shape} holds one matrix per sequence: it needs "
                         f"{batch} or 1 first and 1 at the ragged dimension {r}")
    pad = padded(nt, 0.0)
    try:
        return unpadded(nt, matmul(pad, dense) if nested_first else matmul(dense, pad))
    except ShapeError as error:
        raise ShapeError(f"{op}: a nested tensor of shape {nt.shape} with a dense operand of "
                         f"shape {tuple(dense.shape)}: {error}") from None


@implements(matmul, methods=("matmul", "__matmul__"))
def nested_matmul(input: Any, other: Any) -> Any:
    """The product of each sequence with ``other``: a dense matrix (n, m) or vector (n,), a
    dense batch (B or 1, …, n, m) of one matrix per sequence, or a nested tensor of the same
    ragged structure (…, n, m) whose ragged dimension is left of the last two; a nested
    (B, …, n, j) times a nested (B, …, j, m) of one structure sums over the ragged dimension
    (a dense (B, …, n, m)). A dense matrix or (B, …) batch on the left multiplies a nested
    tensor whose ragged dimension is not its second-to-last."""
    return _product("matmul", input, other)


def _product(op: str, input: Any, other: Any) -> Any:
    """``nested_matmul``, its errors naming ``op`` (the function the user called)."""
    if not isinstance(input, NestedTensor):
        return _dense_at_nested(op, input, other)
    if isinstance(other, NestedTensor):
        return _nested_at_nested(op, input, other)
    if not isinstance(other, Tensor) or other.ndim > input.dim():
        _refuse(op, input, other)
    _ragged_not_last(op, input)
    _check_inner(op, input, other)
    if other.ndim <= 2:
        return input._with(matmul(input._values, other))
    if other.ndim != input.dim():
        _refuse(op, input, other)
    if input.dim() == 3 and input._ragged_idx == 1 and other.shape[0] == 1:
        return input._with(matmul(input._values, other[0]))
    if input.dim() == 3 and input._ragged_idx == 1 and other.shape[0] == input._ragged.batch:
        rows, (n, m) = input._values.shape[0], other.shape[-2:]
        if rows * n * m <= _ROW_MATRICES:  # (short sequences: each row's matrix gathered,
            mats = other.index_select(0, input._ragged.row_batch())  # one batched product)
            return input._with(matmul(input._values.unsqueeze(-2), mats).squeeze(-2))
        pieces = split(input._values, input._ragged.lengths.tolist())  # (one per sequence)
        return input._with(cat([matmul(p, w) for p, w in zip(pieces, other.unbind(0))]))
    return _per_sequence(op, input, other, True)


def _nested_at_nested(op: str, input: NestedTensor, other: NestedTensor) -> Any:
    n, r = input.dim(), input._ragged_idx
    if other.dim() != n:
        _refuse(op, input, other)
    if r < n - 2:
        values = check_same_structure(op, input, other)
        _check_inner(op, input, other)
        return input._with(matmul(input._values, values))
    if r == n - 1 and other._ragged_idx == n - 2:  # (…, n, j) @ (…, j, m): a dense result
        if other._ragged.dim is not input._ragged.dim:
            raise ShapeError(f"{op}: nested tensors of shapes {input.shape} and {other.shape} "
                             "sum over ragged dimensions of different structures (each ragged "
                             "size j<n> belongs to one offsets tensor). Hint: build both on one "
                             "offsets tensor, e.g. ember.nested.nested_tensor_from_jagged("
                             "values, nt.offsets())")
        # (one length: the two may have different max_seqlen hints)
        length = input._ragged.max_seqlen
        return matmul(padded(input, 0.0), padded(other, 0.0, length))
    _refuse(op, input, other)


def _dense_at_nested(op: str, input: Any, other: NestedTensor) -> Any:
    n, r = other.dim(), other._ragged_idx
    if not isinstance(input, Tensor) or n < 3 or r == n - 2 or input.ndim not in (2, n):
        _refuse(op, input, other)
    _check_inner(op, input, other)
    if input.ndim == 2:
        return other._with(matmul(input, other._values))
    return _per_sequence(op, other, input, False)


@implements(bmm)
def nested_bmm(input: NestedTensor, mat2: Any) -> Any:
    """A (B, j, n) nested tensor times a dense (B, n, m) (sequence b times matrix b), or a
    (B, n, j) one times a (B, j, m) one of the same structure (a dense (B, n, m))."""
    if not isinstance(input, NestedTensor) or input.dim() != 3 or \
            getattr(mat2, "ndim", None) != 3 and not (isinstance(mat2, NestedTensor)
                                                      and mat2.dim() == 3):
        _refuse("bmm", input, mat2)
    return _product("bmm", input, mat2)
