"""Distances and similarities between vectors along a dimension: ``cosine_similarity`` and
``pairwise_distance``, composites of elementwise ops, sums and norms (inputs broadcast)."""

from __future__ import annotations

from ember.errors import DTypeError
from ember.ops.broadcast import broadcast_tensors
from ember.ops.norms import vector_norm
from ember.tensor import Tensor

__all__ = ["cosine_similarity", "pairwise_distance"]


def _clamped_norm(x: Tensor, dim: int, eps: float) -> Tensor:
    """``max(‖x‖₂, eps)`` along ``dim``, clamping the squared norm at ``eps²`` before the root,
    which keeps the gradient finite for a zero vector."""
    return (x * x).sum(dim).clamp(min=eps * eps).sqrt()


def cosine_similarity(x1: Tensor, x2: Tensor, dim: int = 1, eps: float = 1e-8) -> Tensor:
    """``x1·x2 / (max(‖x1‖, eps) · max(‖x2‖, eps))`` along ``dim`` (which is removed). The
    inputs broadcast first, so a vector broadcast along ``dim`` has the norm of its copies.

    Example:
        >>> F.cosine_similarity(ember.tensor([[1.0, 0.0]]), ember.tensor([[1.0, 1.0]]))
        tensor([0.7071])
    """
    if not x1.dtype.is_floating_point:
        raise DTypeError(f"cosine_similarity: expected floating inputs, got {x1.dtype.name}")
    x1, x2 = broadcast_tensors(x1, x2)
    return (x1 * x2).sum(dim) / (_clamped_norm(x1, dim, eps) * _clamped_norm(x2, dim, eps))


def pairwise_distance(x1: Tensor, x2: Tensor, p: float = 2.0, eps: float = 1e-6,
                      keepdim: bool = False) -> Tensor:
    """``‖x1 - x2 + eps‖_p`` along the last dimension, for any ``p`` ``vector_norm`` takes
    (0 counts the non-zero entries, ``±inf`` takes the largest/smallest ``|entry|``).

    Example:
        >>> F.pairwise_distance(ember.tensor([[0.0, 0.0]]), ember.tensor([[3.0, 4.0]]))
        tensor([5.0000])
    """
    if not x1.dtype.is_floating_point:
        raise DTypeError(f"pairwise_distance: expected floating inputs, got {x1.dtype.name}")
    return vector_norm(x1 - x2 + eps, p, -1, keepdim)
