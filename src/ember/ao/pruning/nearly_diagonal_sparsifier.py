"""``NearlyDiagonalSparsifier``: keeps the ``nearliness`` diagonals closest to the main one."""

from __future__ import annotations

from typing import Any

import numpy as np

from ember.ao.pruning.base_sparsifier import BaseSparsifier
from ember.errors import ArgumentError, ShapeError
from ember.nn.module import Module
from ember.ops.creation import from_numpy

__all__ = ["NearlyDiagonalSparsifier"]


class NearlyDiagonalSparsifier(BaseSparsifier):
    """Masks each 2-D tensor to a band: ``nearliness`` (odd) diagonals around the main one
    (0 or less: all zeros).

    Example:
        >>> model = nn.Sequential(nn.Linear(4, 4))
        >>> sparsifier = NearlyDiagonalSparsifier(nearliness=3)
        >>> sparsifier.prepare(model, config=None)
        >>> sparsifier.step()
        >>> model[0].parametrizations.weight[0].mask
        tensor([[1., 1., 0., 0.],
                [1., 1., 1., 0.],
                [0., 1., 1., 1.],
                [0., 0., 1., 1.]])
    """

    def __init__(self, nearliness: int = 1) -> None:
        super().__init__(defaults={"nearliness": nearliness})

    def update_mask(self, module: Module, tensor_name: str, nearliness: int,
                    **kwargs: Any) -> None:
        mask = module.parametrizations[tensor_name][0].mask
        band = np.zeros(mask.shape, mask.numpy().dtype)
        if nearliness > 0:
            shape = tuple(getattr(module, tensor_name).shape)
            if len(shape) != 2:
                raise ShapeError(f"NearlyDiagonalSparsifier: {tensor_name} must be 2-D (a band "
                                 f"around the diagonal), got shape {shape}")
            height, width = shape
            if nearliness % 2 == 0:
                raise ArgumentError(f"nearliness can only be an odd number, got {nearliness}")
            reach = nearliness // 2
            if reach >= min(height, width):
                raise ArgumentError(f"nearliness cannot be larger than the dimensions of tensor: "
                                    f"{nearliness} for shape ({height}, {width})")
            rows, cols = np.indices((height, width))
            band[np.abs(rows - cols) <= reach] = 1
        mask.data = from_numpy(band)
