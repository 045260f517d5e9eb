"""Distances and similarities between vectors along a dimension: ``cosine_similarity`` and
``pairwise_distance``, composites of elementwise ops and sums (inputs broadcast)."""

from __future__ import annotations

from ember.errors import DTypeError
from ember.tensor import Tensor

__all__ = ["cosine_similarity", "pairwise_distance"]


def _norm(x: Tensor, p: float, dim: int, keepdim: bool, floor: float = 0.0) -> Tensor:
    """The p-norm along ``dim``; the power sum is clamped at ``floor ** p`` first, which keeps
    the gradient finite for a zero vector."""
    if p == 2:
        return (x * x).sum(dim, keepdim=keepdim).clamp(min=floor * floor).sqrt()
    if p == 1:
        return x.abs().sum(dim, keepdim=keepdim).clamp(min=floor)
    if p == float("inf"):
        return x.abs().amax(dim, keepdim=keepdim).clamp(min=floor)
    return (x.abs() ** p).sum(dim, keepdim=keepdim).clamp(min=floor ** p) ** (1.0 / p)


def cosine_similarity(x1: Tensor, x2: Tensor, dim: int = 1, eps: float = 1e-8) -> Tensor:
    """``x1·x2 / (max(‖x1‖, eps) · max(‖x2‖, eps))`` along ``dim`` (which is removed).

    Example:
        >>> F.cosine_similarity(ember.tensor([[1.0, 0.0]]), ember.tensor([[1.0, 1.0]]))
        tensor([0.7071])
    """
    if not x1.dtype.is_floating_point:
        raise DTypeError(f"cosine_similarity: expected floating inputs, got {x1.dtype.name}")
    dot = (x1 * x2).sum(dim)
    return dot / (_norm(x1, 2, dim, False, eps) * _norm(x2, 2, dim, False, eps))


def pairwise_distance(x1: Tensor, x2: Tensor, p: float = 2.0, eps: float = 1e-6,
                      keepdim: bool = False) -> Tensor:
    """``‖x1 - x2 + eps‖_p`` along the last dimension.

    Example:
        >>> F.pairwise_distance(ember.tensor([[0.0, 0.0]]), ember.tensor([[3.0, 4.0]]))
        tensor([5.0000])
    """
    if not x1.dtype.is_floating_point:
        raise DTypeError(f"pairwise_distance: expected floating inputs, got {x1.dtype.name}")
    return _norm(x1 - x2 + eps, p, -1, keepdim)
