"""``Flatten`` and ``Unflatten``: reshape modules for use in a ``Sequential``."""

from __future__ import annotations

from typing import Any

from ember.nn.module import Module
from ember.tensor import Tensor

__all__ = ["Flatten", "Unflatten"]


class Flatten(Module):
    """Flattens dims ``start_dim … end_dim`` into one (by default all but the batch dim).

    Example:
        >>> nn.Flatten()(ember.zeros(32, 1, 5, 5)).shape
        ember.Size([32, 25])
    """

    def __init__(self, start_dim: int = 1, end_dim: int = -1) -> None:
        super().__init__()
        self.start_dim, self.end_dim = start_dim, end_dim

    def forward(self, input: Tensor) -> Tensor:
        return input.flatten(self.start_dim, self.end_dim)

    def extra_repr(self) -> str:
        return f"start_dim={self.start_dim}, end_dim={self.end_dim}"


class Unflatten(Module):
    """Splits dim ``dim`` into ``unflattened_size``.

    Example:
        >>> nn.Unflatten(1, (2, 5, 5))(ember.zeros(2, 50)).shape
        ember.Size([2, 2, 5, 5])
    """

    def __init__(self, dim: int | str, unflattened_size: Any) -> None:
        super().__init__()
        self.dim, self.unflattened_size = dim, tuple(unflattened_size)

    def forward(self, input: Tensor) -> Tensor:
        return input.unflatten(self.dim, self.unflattened_size)

    def extra_repr(self) -> str:
        return f"dim={self.dim}, unflattened_size={self.unflattened_size}"
