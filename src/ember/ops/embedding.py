"""Embedding lookup: rows of a weight matrix picked by integer indices.

Two primitives, each the other's transpose: ``embedding`` (a row gather) and
``embedding_backward`` (a scatter-add of rows into a (num_embeddings, dim) gradient). The
scatter-add is vectorised by sorting: repeated indices become runs summed with one
``add.reduceat``, which also counts them for ``scale_grad_by_freq``; the ``padding_idx`` row
gets no gradient.
"""

from __future__ import annotations

from typing import Any

from ember.autograd.grad_mode import no_grad
from ember.errors import DTypeError, IndexOutOfRange, ShapeError
from ember.ops.convert import cast
from ember.ops.indexing import first_out_of_range
from ember.ops.norms import vector_norm
from ember.ops.primitive import Primitive, TensorSpec, apply, primitive
from ember.ops.select import where
from ember.tensor import Tensor

__all__: list[str] = []


def _runs(xp: Any, indices: Any) -> tuple[Any, Any, Any, Any]:
    """Sort order of the flat indices, the distinct indices, where each run starts, counts."""
    flat = indices.reshape(-1)
    order = xp.argsort(flat, kind="stable")
    ordered = flat[order]
    distinct, starts, counts = xp.unique(ordered, return_index=True, return_counts=True)
    return order, distinct, starts, counts


@primitive
class Embedding(Primitive):
    name = "embedding"

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
    """Sums the rows of ``grad`` (…, dim) into a (num_weights, dim) matrix at ``indices``."""

    name = "embedding_backward"

    def forward(self, xp, grad, indices, *, num_weights, padding_idx, scale_grad_by_freq):
        dim = grad.shape[-1]
        out = xp.zeros((num_weights, dim), dtype=grad.dtype)
        if indices.size == 0:
            return out
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


def _renorm_(weight: Tensor, indices: Tensor, max_norm: float, norm_type: float) -> None:
    """Rescales, in place, the referenced rows whose ``norm_type``-norm exceeds ``max_norm``.

    Ember ops under no_grad, not NumPy on the arrays: so a compiled function renormalises at
    every call (the write is a state update of the weight). A repeated index writes its row
    twice, with the same value."""
    with no_grad():
        idx = indices.reshape((-1,))
        rows = apply(Embedding, weight, idx, padding_idx=None, scale_grad_by_freq=False)
        norms = vector_norm(rows, norm_type, dim=1, keepdim=True)
        scale = where(norms > max_norm, max_norm / (norms + 1e-7), 1.0)
        weight[idx] = rows * scale  # eagerly a write into the rows; traced, an index_put


def embedding(input: Tensor, weight: Tensor, padding_idx: int | None = None,
              max_norm: float | None = None, norm_type: float = 2.0,
              scale_grad_by_freq: bool = False, sparse: bool = False) -> Tensor:
    """Looks up rows of ``weight`` (num_embeddings, dim) at the integer ``input`` indices.

    The ``padding_idx`` row receives no gradient; ``max_norm`` renormalises the rows used, in
    place; ``scale_grad_by_freq`` divides each row's gradient by its count in ``input``.

    Example:
        >>> w = ember.randn(10, 3, requires_grad=True)
        >>> F.embedding(ember.tensor([[1, 2], [2, 9]]), w).shape
        (2, 2, 3)
    """
    if input.dtype.is_floating_point or input.dtype.name == "bool":
        raise DTypeError(f"embedding: indices must be an integer tensor, got "
                         f"{input.dtype.name}")
    if weight.ndim != 2:
        raise ShapeError(f"embedding: weight must be 2-D (num_embeddings, embedding_dim), got "
                         f"shape {tuple(weight.shape)}")
    if sparse:
        raise NotImplementedError("embedding: sparse gradients are not supported; use "
                                  "sparse=False")
    n = weight.shape[0]
    if padding_idx is not None:
        if not -n <= padding_idx < n:
            raise IndexOutOfRange(f"embedding: padding_idx {padding_idx} must be within "
                                  f"num_embeddings ({n})")
        padding_idx = int(padding_idx) % n
    if max_norm is not None:
        _renorm_(weight, input, max_norm, norm_type)
    return apply(Embedding, weight, input, padding_idx=padding_idx,
                 scale_grad_by_freq=bool(scale_grad_by_freq))
