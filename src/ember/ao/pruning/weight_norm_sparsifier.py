"""``WeightNormSparsifier``: zeroes the blocks of a 2-D tensor with the smallest norms, and
within the kept blocks optionally the smallest entries (``torch.ao.pruning``'s rules: blocks
tile the tensor from its top-left corner, the edge blocks may stick out)."""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

import numpy as np

from ember.ao.pruning.base_sparsifier import BaseSparsifier
from ember.ao.pruning.selection import torch_smallest, torch_smallest_per_row
from ember.errors import ArgumentError, ShapeError
from ember.nn.module import Module
from ember.ops.creation import from_numpy
from ember.tensor import Tensor

__all__ = ["WeightNormSparsifier"]

_F32 = np.float32


def _padded_shape(shape: tuple[int, int], block: tuple[int, int]) -> tuple[int, int]:
    return (math.ceil(shape[0] / block[0]) * block[0], math.ceil(shape[1] / block[1]) * block[1])


def _blocks(padded: np.ndarray, block: tuple[int, int]) -> np.ndarray:
    """``padded`` (a multiple of ``block`` in size) as (block rows, block cols, values of a
    block in row-major order)."""
    (bh, bw), (ph, pw) = block, padded.shape
    return padded.reshape(ph // bh, bh, pw // bw, bw).transpose(0, 2, 1, 3).reshape(
        ph // bh, pw // bw, bh * bw)


def _unblocks(values: np.ndarray, block: tuple[int, int]) -> np.ndarray:
    """The inverse of :func:`_blocks`."""
    rows, cols, _ = values.shape
    return values.reshape(rows, cols, *block).transpose(0, 2, 1, 3).reshape(
        rows * block[0], cols * block[1])


def _tensor_mask(data: np.ndarray, sparsity_level: float, block: tuple[int, int]) -> np.ndarray:
    """Zeros over the ``round(sparsity_level * blocks)`` blocks of least mean ``data`` (at
    most all blocks but one)."""
    padded_shape = _padded_shape(data.shape, block)
    if sparsity_level >= 1.0:
        return np.zeros(padded_shape, _F32)
    if sparsity_level <= 0.0:
        return np.ones(padded_shape, _F32)
    h, w = data.shape
    padded = np.zeros(padded_shape, _F32)
    padded[:h, :w] = data
    count = np.zeros(padded_shape, _F32)
    count[:h, :w] = 1
    sums = np.zeros(_blocks(padded, block).shape[:2], _F32)
    for k in range(block[0] * block[1]):  # (summed in order, as PyTorch's average pooling)
        sums += _blocks(padded, block)[..., k]
    means = (sums / _blocks(count, block).sum(-1)).ravel()
    k = max(0, min(means.size - 1, round(sparsity_level * means.size)))
    keep = np.ones(means.size, _F32)
    keep[torch_smallest(means, k)] = 0
    mask = np.repeat(keep.reshape(sums.shape)[..., None], block[0] * block[1], axis=-1)
    return _unblocks(mask, block)[:h, :w]


def _block_mask(data: np.ndarray, block: tuple[int, int], zeros_per_block: int) -> np.ndarray:
    """Zeros on the ``zeros_per_block`` least entries of ``data`` within each block (the
    padded size: PyTorch's)."""
    h, w = data.shape
    padded = np.full(_padded_shape(data.shape, block), np.nan, data.dtype)
    padded[:h, :w] = data
    values = _blocks(padded, block)
    mask = np.ones(values.shape, _F32).reshape(-1, values.shape[-1])
    smallest = torch_smallest_per_row(values.reshape(mask.shape), zeros_per_block)
    np.put_along_axis(mask, smallest, 0, axis=-1)
    return _unblocks(mask.reshape(values.shape), block)


class WeightNormSparsifier(BaseSparsifier):
    """Zeroes ``sparsity_level`` of the ``sparse_block_shape`` blocks (rows, columns) of each
    2-D tensor, those of least norm (``norm`` 2: squares; 1: absolute values; or a function),
    and, when ``zeros_per_block`` is less than a block's size, only that many of the least
    entries in the other blocks (the mask is then boolean, as PyTorch's). Each group's config
    may override the three settings. The norms are of the masked tensor; where blocks (or
    entries) of equal norm straddle the threshold, e.g. blocks zeroed at a higher level
    earlier, the choice among them is PyTorch's (its ``topk`` replayed, see
    :mod:`ember.ao.pruning.selection`).

    Example:
        >>> model = nn.Sequential(nn.Linear(4, 2))
        >>> with ember.no_grad():
        ...     _ = model[0].weight.copy_(ember.tensor([[1.0, 2, 3, 4], [8, 7, 6, 5]]))
        >>> sparsifier = WeightNormSparsifier(sparsity_level=0.5, sparse_block_shape=(1, 2))
        >>> sparsifier.prepare(model, config=None)
        >>> sparsifier.step()
        >>> model[0].parametrizations.weight[0].mask
        tensor([[0., 0., 0., 0.],
                [1., 1., 1., 1.]])
    """

    def __init__(self, sparsity_level: float = 0.5, sparse_block_shape: tuple[int, int] = (1, 4),
                 zeros_per_block: int | None = None,
                 norm: Callable[[Tensor], Tensor] | int | None = None) -> None:
        if zeros_per_block is None:
            zeros_per_block = math.prod(sparse_block_shape)
        if norm is None or norm == 2:
            self.norm_fn = lambda t: t * t
        elif callable(norm):
            self.norm_fn = norm
        elif norm == 1:
            self.norm_fn = lambda t: t.abs()
        else:
            raise NotImplementedError(f"WeightNormSparsifier: L-{norm} is not yet implemented; "
                                      "use norm 1, 2 or a function of the tensor")
        super().__init__(defaults={"sparsity_level": sparsity_level,
                                   "sparse_block_shape": sparse_block_shape,
                                   "zeros_per_block": zeros_per_block})

    def update_mask(self, module: Module, tensor_name: str, sparsity_level: float,
                    sparse_block_shape: tuple[int, int], zeros_per_block: int,
                    **kwargs: Any) -> None:
        block = tuple(sparse_block_shape)
        values_per_block = math.prod(block)
        if zeros_per_block > values_per_block:
            raise ArgumentError("Number of zeros per block cannot be more than the total number of "
                                f"elements in that block: {zeros_per_block} > {values_per_block} "
                                f"(sparse_block_shape {block})")
        if zeros_per_block < 0:
            raise ArgumentError(f"Number of zeros per block should be positive, got "
                                f"{zeros_per_block}")
        mask = module.parametrizations[tensor_name][0].mask
        if sparsity_level <= 0 or zeros_per_block == 0:
            mask.data = from_numpy(np.ones(mask.shape, mask.numpy().dtype))
            return
        if sparsity_level >= 1.0 and zeros_per_block == values_per_block:
            mask.data = from_numpy(np.zeros(mask.shape, mask.numpy().dtype))
            return
        data = self.norm_fn(getattr(module, tensor_name)).detach().numpy()
        if data.ndim != 2:
            raise ShapeError(f"WeightNormSparsifier: {tensor_name} must be 2-D (rows, columns "
                             f"of blocks), got shape {tuple(data.shape)}")
        new = _tensor_mask(data, sparsity_level, block)
        if values_per_block != zeros_per_block:
            within = _block_mask(data, block, zeros_per_block)
            if within.shape != new.shape:
                raise ShapeError(f"WeightNormSparsifier: with zeros_per_block "
                                 f"({zeros_per_block}) below the block size, {tensor_name}'s "
                                 f"shape {tuple(data.shape)} must be a multiple of "
                                 f"sparse_block_shape {block}")
            new = np.logical_or(new, within)
        mask.data = from_numpy(np.ascontiguousarray(new))
