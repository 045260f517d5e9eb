"""Embedding lookup: rows of a weight matrix picked by integer indices, and bags of them
reduced (``embedding_bag``: a composite of the lookup and a segment sum or max).

Two primitives, each the other's transpose: ``embedding`` (a row gather) and
``embedding_backward`` (a scatter-add of rows into a (num_embeddings, dim) gradient). The
scatter-add is one pass of numba (:mod:`ember.ops.embedding_numba`) where it applies, else
vectorised by sorting: repeated indices become runs summed with one ``add.reduceat``, which
also counts them for ``scale_grad_by_freq`` (its sums may differ from numba's in the last
bit: it adds a run's terms in another order). The ``padding_idx`` row gets no gradient.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from ember import dtypes
from ember.autograd.grad_mode import no_grad
from ember.backend import compiled
from ember.errors import (
    ArgumentError,
    DTypeError,
    IndexOutOfRange,
    ShapeError,
    dtype_name,
    is_floating_input,
    refuse_non_tensor,
)
from ember.layouts import sparse_coo
from ember.ops.convert import HALF, cast
from ember.ops.creation import arange
from ember.ops.gather import index_add
from ember.ops.index_checks import first_out_of_range
from ember.ops.int_args import as_float, as_int
from ember.ops.join import cat
from ember.ops.norms import vector_norm
from ember.ops.overrides import TensorLikeOperand, handle
from ember.ops.primitive import DISPATCH, Primitive, TensorSpec, apply, primitive
from ember.ops.scatter_reduce import scatter_reduce
from ember.ops.search import searchsorted
from ember.ops.select import where
from ember.ops.unary import in_float32
from ember.tensor import Tensor

__all__: list[str] = []

_KERNELS = compiled.register("ember.ops.embedding_numba")


def _runs(xp: Any, indices: Any) -> tuple[Any, Any, Any, Any]:
    """Sort order of the flat indices, the distinct indices, where each run starts, counts."""
    flat = indices.reshape(-1)
    order = xp.argsort(flat, kind="stable")
    ordered = flat[order]
    distinct, starts, counts = xp.unique(ordered, return_index=True, return_counts=True)
    return order, distinct, starts, counts


def _added_in_numba(xp: Any, grad: Any, indices: Any, out: Any) -> bool:
    """Adds the rows of ``grad`` (…, dim) into ``out``'s at ``indices`` with numba's kernel,
    if it takes them (float32/float64 NumPy arrays); returns whether it did."""
    if xp is not np or grad.dtype not in (np.float32, np.float64) or \
            not compiled.numba_enabled():
        return False
    kernels = compiled.load(_KERNELS)
    if kernels is None:
        return False
    flat = indices.reshape(-1)
    if flat.dtype not in (np.int32, np.int64):
        flat = flat.astype(np.int64)
    rows = np.ascontiguousarray(grad).reshape(-1, out.shape[1])
    if not rows.flags.aligned:  # (the kernel's signatures)
        return False
    bad = kernels.add_rows_at(rows, np.ascontiguousarray(flat), out)
    if bad >= 0:
        raise _out_of_range(indices.reshape(-1)[bad], grad, indices, out.shape[0])
    return True


def _out_of_range(index: Any, grad: Any, indices: Any, n: int) -> IndexOutOfRange:
    return IndexOutOfRange(f"embedding_backward: index {index} is out of range for {n} "
                           f"embeddings (gradient {grad.shape} {grad.dtype}, indices "
                           f"{indices.shape} {indices.dtype}). Hint: pass the indices the "
                           f"forward embedding looked up, each in [0, {n - 1}]")


@primitive
class Embedding(Primitive):
    name = "embedding"
    limited_dtypes = dtypes.ALL_LIMITED  # (PyTorch's embedding takes every dtype)

    def forward(self, xp, weight, indices, *, padding_idx, scale_grad_by_freq):
        n = weight.shape[0]
        bad = first_out_of_range(indices, n)  # here, so that compiled code checks too
        if bad is not None:
            raise IndexOutOfRange(f"embedding: index {bad} is out of range for {n} embeddings "
                                  f"(weight shape {weight.shape}); expected indices in "
                                  f"[0, {n - 1}]. Hint: num_embeddings must exceed the "
                                  "largest index (the vocabulary size, with any padding or "
                                  "unknown-token ids)")
        return xp.take(weight, indices, axis=0)

    def infer(self, weight, indices, *, padding_idx, scale_grad_by_freq):
        if len(weight.shape) != 2:
            raise ShapeError(f"embedding: weight must be 2-D (num_embeddings, embedding_dim), "
                             f"got shape {weight.shape}")
        return TensorSpec(tuple(indices.shape) + weight.shape[1:], weight.dtype)

    def reads(self, ctx, i):
        return i == 1  # the weight's shape only, as PyTorch keeps only the indices

    def vjp(self, ctx, g):
        weight, indices = ctx.inputs
        if not weight.requires_grad:
            return None, None
        return apply(EmbeddingBackward, g, indices, num_weights=weight.shape[0],
                     **ctx.params), None

    def jvp(self, ctx, dweight, dindices):
        return apply(Embedding, dweight, ctx.inputs[1], **ctx.params)


@primitive
class EmbeddingBackward(Primitive):
    """Sums the rows of ``grad`` (…, dim) into a (num_weights, dim) matrix at ``indices``
    (float16/bfloat16 ones in float32: a running half sum stalls)."""

    name = "embedding_backward"

    @in_float32
    def forward(self, xp, grad, indices, *, num_weights, padding_idx, scale_grad_by_freq):
        dim = grad.shape[-1]
        out = xp.zeros((num_weights, dim), dtype=grad.dtype)
        if indices.size == 0 or dim == 0:  # (rows of no width: nothing to add, or reshape)
            return out
        if _added_in_numba(xp, grad, indices, out):
            if scale_grad_by_freq:
                counts = xp.bincount(indices.reshape(-1), minlength=num_weights)
                out /= xp.maximum(counts, 1)[:, None].astype(grad.dtype)
        else:
            bad = first_out_of_range(indices, num_weights)  # (NumPy would wrap a negative)
            if bad is not None:
                raise _out_of_range(bad, grad, indices, num_weights)
            order, distinct, starts, counts = _runs(xp, indices)
            sums = xp.add.reduceat(grad.reshape(-1, dim)[order], starts, axis=0)
            if scale_grad_by_freq:
                sums /= counts[:, None].astype(grad.dtype)
            out[distinct] = sums
        if padding_idx is not None:
            out[padding_idx] = 0
        return out

    def infer(self, grad, indices, *, num_weights, padding_idx, scale_grad_by_freq):
        return TensorSpec((num_weights, grad.shape[-1]), grad.dtype)

    def reads(self, ctx, i):
        return i == 1  # linear in grad

    def vjp(self, ctx, gg):
        # A gather of ``gg`` at the indices, zero at padding. No 1/count: Embedding's own vjp
        # already divides by it on the way back to the weight, and the two together give the
        # true second derivative of the (frequency-scaled) first one, as PyTorch computes it.
        grad, indices = ctx.inputs
        if not grad.requires_grad:
            return None, None
        p = ctx.params
        rows = apply(Embedding, gg, indices, padding_idx=p["padding_idx"],
                     scale_grad_by_freq=p["scale_grad_by_freq"])
        pad = p["padding_idx"]
        if pad is None:
            return rows, None
        return rows * cast(indices != pad, gg.dtype).unsqueeze(-1), None

    def jvp(self, ctx, dgrad, dindices):
        return apply(EmbeddingBackward, dgrad, ctx.inputs[1], **ctx.params)


@primitive
class SparseGradEmbedding(type(Embedding)):
    """``embedding`` whose weight gradient is a sparse COO tensor (``sparse=True``): one entry
    per looked-up index (uncoalesced, as PyTorch's), none for ``padding_idx``."""

    name = "embedding_sparse_grad"

    def vjp(self, ctx, g):
        from ember.sparse.tensor import SparseTensor  # (a package over the ops: imported late)

        weight, indices = ctx.inputs
        if not weight.requires_grad:
            return None, None
        if ctx.params["scale_grad_by_freq"]:  # (the forward runs: PyTorch's too)
            raise ArgumentError("embedding backward: scale_grad_by_freq is not supported with "
                                "sparse gradients (as in PyTorch); use sparse=False")
        flat = cast(indices.reshape((-1,)), dtypes.int64)  # (a sparse tensor's indices are int64)
        rows = g.reshape((-1, weight.shape[1]))
        pad = ctx.params["padding_idx"]
        if pad is not None:
            kept = (flat != pad).nonzero().reshape((-1,))
            flat, rows = flat[kept], rows[kept]
        return SparseTensor(sparse_coo, tuple(weight.shape), (flat.reshape((1, -1)),), rows,
                            flat.shape[0] <= 1), None

    def jvp(self, ctx, dweight, dindices):
        return apply(Embedding, dweight, ctx.inputs[1], **ctx.params)


def _renorm_(weight: Tensor, indices: Tensor, max_norm: float, norm_type: float) -> None:
    """Rescales, in place, the referenced rows whose ``norm_type``-norm exceeds ``max_norm``.

    Ember ops under no_grad, not NumPy on the arrays: so a compiled function renormalises at
    every call (the write is a state update of the weight). A repeated index writes its row
    twice, with the same value. As PyTorch's: each norm (in the weight's dtype) is compared
    and turned into a scale in float64, rounded to the weight's dtype to multiply the row."""
    with no_grad():
        idx = indices.reshape((-1,))
        rows = apply(Embedding, weight, idx, padding_idx=None, scale_grad_by_freq=False)
        norms = vector_norm(rows, norm_type, dim=1, keepdim=True).to(dtypes.float64)
        scale = where(norms > max_norm, max_norm / (norms + 1e-7), 1.0)
        # eagerly a write into the rows; traced, an index_put
        weight[idx] = rows * scale.to(rows.dtype)


def _check_indices(op: str, input: Tensor, offsets: Tensor | None = None) -> Tensor:
    """``input``, refused if its dtype is not int64 or int32, as PyTorch does (int8, int16
    and uint8 too), unless ``offsets`` of one of those promote it to it (PyTorch's bag ops
    take the two in their common dtype): then converted."""
    dtype = input.dtype if offsets is None or offsets.dtype not in _INDEX_DTYPES or \
        input.dtype.is_floating_point else dtypes.promote_types(input.dtype, offsets.dtype)
    if is_floating_input(op, "input", input) or dtype not in _INDEX_DTYPES:
        raise DTypeError(f"{op}: indices (input) must be an int64 or int32 integer tensor, as in "
                         f"PyTorch, got {dtype_name(op, 'input', input)}. Hint: input.long()")
    return input if dtype is input.dtype else cast(input, dtype)


_INDEX_DTYPES = (dtypes.int64, dtypes.int32)


def embedding(input: Tensor, weight: Tensor, padding_idx: int | None = None,
              max_norm: float | None = None, norm_type: float = 2.0,
              scale_grad_by_freq: bool = False, sparse: bool = False) -> Tensor:
    """Looks up rows of ``weight`` (num_embeddings, dim) at the integer ``input`` indices.

    The ``padding_idx`` row receives no gradient; ``max_norm`` renormalises the rows used, in
    place; ``scale_grad_by_freq`` divides each row's gradient by its count in ``input``.

    Example:
        >>> w = ember.randn(10, 3, requires_grad=True)
        >>> F.embedding(ember.tensor([[1, 2], [2, 9]]), w).shape
        ember.Size([2, 2, 3])
    """
    _check_indices("embedding", input)
    if weight.ndim != 2:
        raise ShapeError(f"embedding: weight must be 2-D (num_embeddings, embedding_dim), got "
                         f"shape {tuple(weight.shape)}")
    n = weight.shape[0]
    if padding_idx is not None:
        padding_idx = as_int(padding_idx, "embedding", "padding_idx")
        if not -n <= padding_idx < n:
            raise IndexOutOfRange(f"embedding: padding_idx {padding_idx} must be within "
                                  f"num_embeddings ({n})")
        padding_idx = padding_idx % n
    try:  # a tensor-like operand (a DTensor) raises where its internals are first read
        if max_norm is not None:
            _renorm_(weight, input, as_float(max_norm, "embedding", "max_norm"),
                     as_float(norm_type, "embedding", "norm_type"))
        return apply(SparseGradEmbedding if sparse else Embedding, weight, input,
                     padding_idx=padding_idx, scale_grad_by_freq=bool(scale_grad_by_freq))
    except TensorLikeOperand:
        return handle(embedding, (input, weight, padding_idx, max_norm, norm_type,
                                  scale_grad_by_freq, sparse), {})


_BAG_MODES = ("sum", "mean", "max")
_BAG_DTYPES = (dtypes.float16, dtypes.bfloat16, dtypes.float32, dtypes.float64)  # (torch's)


def _check_offsets(op: str, offsets: Any, include_last_offset: bool, length: int) -> None:
    """Refuses offsets (a backend array) that do not start at 0, pass the input's end or
    decrease."""
    if int(offsets[0]) != 0:
        raise ArgumentError(f"{op}: offsets[0] must be 0 (the first bag starts at the first "
                            f"index), got {int(offsets[0])}")
    if int(offsets.max()) > length:
        raise IndexOutOfRange(f"{op}: offsets must not exceed the input's length "
                              f"{length}, got {int(offsets.max())}")
    starts = offsets[:-1] if include_last_offset else offsets
    if bool((starts[1:] < starts[:-1]).any()):
        raise ArgumentError(f"{op}: offsets must not decrease (each bag starts where the one "
                            f"before it ends), got {offsets.tolist()}")


def _bags(op: str, input: Tensor, offsets: Tensor | None,
          include_last_offset: bool) -> tuple[Tensor, Tensor, int]:
    """The flat indices, each one's bag number (``bags`` for entries past the last bag) and
    the number of bags."""
    for name, value in (("input", input), ("offsets", offsets)):
        if not isinstance(value, Tensor) and value is not None:  # (before its shape is judged)
            refuse_non_tensor(op, name, value)
    input = _check_indices(op, input, offsets if isinstance(offsets, Tensor) else None)
    if input.ndim == 2:
        if offsets is not None:
            raise ShapeError(f"{op}: offsets must be None for a 2-D input {tuple(input.shape)} "
                             "(each row is a bag)")
        b, length = input.shape
        bag = arange(b, device=input.device).reshape((b, 1)).expand((b, length))
        return input.reshape((-1,)), bag.reshape((-1,)), b
    if input.ndim != 1 or offsets is None or offsets.ndim != 1:
        raise ShapeError(f"{op}: expected a 2-D input (one bag per row), or a 1-D input with "
                         f"1-D offsets; got input {tuple(input.shape)} and offsets "
                         f"{None if offsets is None else tuple(offsets.shape)}")
    if offsets.dtype.is_floating_point or offsets.dtype is dtypes.bool_:
        raise DTypeError(f"{op}: offsets must be an integer tensor, got {offsets.dtype.name}")
    if include_last_offset and offsets.shape[0] == 0:
        raise ShapeError(f"{op}: include_last_offset=True needs at least one offset (the end "
                         "of the last bag), got empty offsets. Hint: pass offsets [0] for no "
                         "bags, or include_last_offset=False")
    # include_last_offset: the last offset ends the last bag, which, as in PyTorch's kernel,
    # runs to the end of the input whatever that offset says
    starts = offsets[:-1] if include_last_offset else offsets
    if DISPATCH.handler is None and offsets.shape[0]:  # (on the arrays: no ops to record)
        _check_offsets(op, offsets._data, include_last_offset, input.shape[0])
    b = starts.shape[0]
    position = arange(input.shape[0], dtype=input.dtype, device=input.device)
    if b == 0:  # every entry past the last bag (dropped)
        return input, position.new_zeros(position.shape), 0
    return input, searchsorted(starts.to(input.dtype), position, right=True) - 1, b


def _sliced(sums: Tensor, bags: int, spare: int) -> Tensor:
    """The bags' rows of ``sums``, without the ``spare`` row of the entries left out."""
    return sums[:bags] if spare else sums


def _bag_max(rows: Tensor, bag: Tensor, bags: int) -> Tensor:
    """Each bag's column-wise maximum of the (M, dim) ``rows`` in it (``bag``: each row's bag,
    ``bags`` for rows left out), zeros for an empty bag. As in PyTorch, the whole gradient
    of a maximum goes to the first of the rows tied for it (``amax`` would share it). NaN as
    PyTorch's kernel, which replaces a bag's first value only by a greater one: a NaN first
    is the maximum, a later NaN is passed over."""
    m, dim = rows.shape
    spread = bag.reshape((m, 1)).expand((m, dim))
    values = rows.detach()
    top = scatter_reduce(rows.new_zeros((bags + 1, dim)), 0, spread,
                         where(values != values, -math.inf, values), "amax", include_self=False)
    row = arange(m, device=rows.device)
    position = row.reshape((m, 1)).expand((m, dim))
    tied = where(values == top.gather(0, spread), position, m)
    first = scatter_reduce(position.new_full((bags + 1, dim), m), 0, spread, tied,
                           "amin")[:bags]  # m (zeros): an empty bag
    # each bag's first row (m for an empty one), found once for all columns
    start = scatter_reduce(row.new_full((bags + 1,), m), 0, bag, row, "amin")[:bags]
    padded = cat([rows, rows.new_zeros((1, dim))])
    lead = padded.detach()[start]
    return padded.gather(0, where(lead != lead, start.reshape((bags, 1)), first))


def _rows_max(rows: Tensor) -> Tensor:
    """:func:`_bag_max` of (B, L, dim) ``rows``, L > 0 in each bag, with no size made from B
    (an export with a dynamic batch reads it)."""
    values = rows.detach()
    gone = values != values
    first = where(gone, -math.inf, values).argmax(1, keepdim=True)  # (the first of ties)
    return rows.gather(1, where(gone[:, :1], 0, first)).squeeze(1)


def embedding_bag(input: Tensor, weight: Tensor, offsets: Tensor | None = None,
                  max_norm: float | None = None, norm_type: float = 2.0,
                  scale_grad_by_freq: bool = False, mode: str = "mean", sparse: bool = False,
                  per_sample_weights: Tensor | None = None, include_last_offset: bool = False,
                  padding_idx: int | None = None) -> Tensor:
    """Sums, averages or takes the maximum of bags of embeddings without materialising them.

    A 2-D ``input`` (B, L) holds one bag per row; a 1-D one with ``offsets`` (B,) holds bag i
    from ``offsets[i]`` to the next offset (``include_last_offset``: offsets has B + 1
    entries, the last the end; as in PyTorch, the last bag runs to the end of ``input``
    whatever that entry says). ``per_sample_weights`` (mode ``"sum"`` only) scales each
    row; indices equal to ``padding_idx`` are left out of their bag. Empty bags give zeros.

    Example:
        >>> w = ember.arange(6.0).reshape(3, 2)
        >>> F.embedding_bag(ember.tensor([0, 2, 1]), w, ember.tensor([0, 2]), mode="sum")
        tensor([[4., 6.],
                [2., 3.]])
    """
    op = "embedding_bag"
    if mode not in _BAG_MODES:
        raise ArgumentError(f"{op}: mode must be one of {', '.join(_BAG_MODES)}, got {mode!r}")
    if mode == "max" and (sparse or scale_grad_by_freq):  # (PyTorch's ValueErrors)
        what = "scaling the gradient by the frequency" if scale_grad_by_freq else \
            "sparse weights"  # (PyTorch checks the frequency flag first)
        raise ArgumentError(f"{op}: max mode does not support {what} (as in PyTorch); use "
                            "mode='sum' or 'mean', or sparse=False and scale_grad_by_freq=False")
    if per_sample_weights is not None:
        if mode != "sum":
            raise ArgumentError(f"{op}: per_sample_weights is only supported for mode='sum', "
                                f"got mode={mode!r}")
        if tuple(per_sample_weights.shape) != tuple(input.shape):
            raise ShapeError(f"{op}: per_sample_weights {tuple(per_sample_weights.shape)} "
                             f"must have the shape of input {tuple(input.shape)}")
    flat, bag, b = _bags(op, input, offsets, include_last_offset)
    n = weight.shape[0]
    if padding_idx is not None:
        padding_idx = as_int(padding_idx, op, "padding_idx")  # (1.5 matched no index)
    if padding_idx is not None and not -n <= padding_idx < n:
        raise IndexOutOfRange(f"{op}: padding_idx {padding_idx} must be within "
                              f"num_embeddings ({n})")
    # (the dtypes last, as PyTorch's kernel checks them, in every mode)
    if weight.dtype not in _BAG_DTYPES:
        raise DTypeError(f"{op}: weight must be float16, bfloat16, float32 or float64, got "
                         f"{weight.dtype.name}. Hint: weight.float()")
    if per_sample_weights is not None and per_sample_weights.dtype != weight.dtype:
        raise DTypeError(f"{op}: per_sample_weights ({per_sample_weights.dtype.name}) must "
                         f"have the weight's dtype ({weight.dtype.name}). Hint: "
                         "per_sample_weights.to(weight.dtype)")  # (as PyTorch: no silent cast)
    # (a sparse gradient leaves the padding entries out, as PyTorch's)
    rows = embedding(flat, weight, padding_idx if sparse else None, max_norm, norm_type,
                     scale_grad_by_freq, sparse)
    if padding_idx is not None:  # padding entries go to a bag past the last, dropped below
        bag = where(flat == padding_idx % n, b, bag)
    dim = weight.shape[1]
    if mode == "max" and input.ndim == 2 and padding_idx is None and input.shape[1]:
        return _rows_max(rows.reshape((b, input.shape[1], dim)))  # (rows of equal bags)
    if mode == "max":
        return _bag_max(rows, bag, b)
    if rows.dtype in HALF:  # weighted, summed (and averaged) in float32, as PyTorch
        rows = rows.float()
    if per_sample_weights is not None:
        rows = rows * per_sample_weights.reshape((-1, 1)).to(rows.dtype)
    if input.ndim == 2 and padding_idx is None and input.shape[1]:  # (rows of equal bags)
        rows = rows.reshape((b, input.shape[1], dim))
        return (rows.sum(1) if mode == "sum" else rows.mean(1)).to(weight.dtype)
    # (a row for the entries left out, past the last bag, where there may be some)
    spare = int(padding_idx is not None or b == 0)
    out = _sliced(index_add(rows.new_zeros((b + spare, dim)), 0, bag, rows), b, spare)
    if mode == "mean":
        counts = index_add(rows.new_zeros((b + spare,)), 0, bag, rows.new_ones(bag.shape))
        out = out / _sliced(counts, b, spare).clamp(min=1).reshape((b, 1))
    return out.to(weight.dtype)
