"""``Flatten`` and ``Unflatten``: reshape modules for use in a ``Sequential``."""

from __future__ import annotations

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

    def __init__(self, dim: int, unflattened_size: tuple[int, ...] | list[int]) -> None:
        super().__init__()
        if not isinstance(unflattened_size, (tuple, list)):
            raise TypeError("unflattened_size must be a tuple of ints, but found type "
                            f"{type(unflattened_size).__name__}")
        for i, size in enumerate(unflattened_size):
            if not isinstance(size, int):
                raise TypeError("unflattened_size must be tuple of ints, but found element of "
                                f"type {type(size).__name__} at pos {i}")
        self.dim, self.unflattened_size = dim, unflattened_size  # as given (PyTorch's repr)

    def forward(self, input: Tensor) -> Tensor:
        return input.unflatten(self.dim, self.unflattened_size)

    def extra_repr(self) -> str:
        return f"dim={self.dim}, unflattened_size={self.unflattened_size}"
