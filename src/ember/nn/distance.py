"""Distance modules over ``ember.nn.functional``: ``CosineSimilarity`` and
``PairwiseDistance``."""

from __future__ import annotations

from ember.nn import functional as F
from ember.nn.module import Module
from ember.tensor import Tensor

__all__ = ["CosineSimilarity", "PairwiseDistance"]


class CosineSimilarity(Module):
    """The cosine of the angle between ``x1`` and ``x2`` along ``dim``.

    Example:
        >>> nn.CosineSimilarity(dim=1)(ember.tensor([[1.0, 0.0]]), ember.tensor([[2.0, 0.0]]))
        tensor([1.])
    """

    def __init__(self, dim: int = 1, eps: float = 1e-8) -> None:
        super().__init__()
        self.dim, self.eps = dim, eps

    def forward(self, x1: Tensor, x2: Tensor) -> Tensor:
        return F.cosine_similarity(x1, x2, self.dim, self.eps)


class PairwiseDistance(Module):
    """The ``p``-norm of ``x1 - x2 + eps`` along the last dimension.

    Example:
        >>> nn.PairwiseDistance()(ember.tensor([[0.0, 0.0]]), ember.tensor([[3.0, 4.0]]))
        tensor([5.0000])
    """

    def __init__(self, p: float = 2.0, eps: float = 1e-6, keepdim: bool = False) -> None:
        super().__init__()
        self.norm, self.eps, self.keepdim = p, eps, keepdim

    def forward(self, x1: Tensor, x2: Tensor) -> Tensor:
        return F.pairwise_distance(x1, x2, self.norm, self.eps, self.keepdim)
