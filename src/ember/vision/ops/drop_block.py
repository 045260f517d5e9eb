"""DropBlock (Ghiasi et al., 2018) under torchvision's names: dropout of contiguous square (or
cubic) blocks of a feature map, for convolutional networks where dropping single pixels
removes little information."""

from __future__ import annotations

import ember
import ember.nn.functional as F
from ember import nn
from ember.errors import ArgumentError
from ember.tensor import Tensor

__all__ = ["DropBlock2d", "DropBlock3d", "drop_block2d", "drop_block3d"]


def _drop_block(op: str, input: Tensor, p: float, block_size: int, inplace: bool, eps: float,
                training: bool, dims: int) -> Tensor:
    """``drop_block2d`` (``dims=2``) or ``drop_block3d`` (``dims=3``)."""
    if not 0.0 <= p <= 1.0:
        raise ArgumentError(f"{op}: drop probability has to be between 0 and 1, but got {p}")
    if input.ndim != dims + 2:
        raise ArgumentError(f"{op}: input should be {dims + 2} dimensional (N, C, "
                            f"{'D, ' if dims == 3 else ''}H, W), got shape {tuple(input.shape)}")
    if not training or p == 0.0:
        return input
    spatial = input.shape[2:]
    block_size = min(block_size, *spatial)
    if block_size % 2 == 0:
        raise ArgumentError(f"{op}: block size should be odd, got {block_size} (after clipping to "
                            f"the input's spatial size {tuple(spatial)})")
    # seeds are drawn only where a whole block fits; gamma makes p the expected dropped share
    valid = [s - block_size + 1 for s in spatial]
    volume = 1
    for s, v in zip(spatial, valid):
        volume *= s / v
    gamma = p * volume / block_size ** dims
    seeds = ember.empty(*input.shape[:2], *valid, dtype=input.dtype).bernoulli_(min(gamma, 1.0))
    half = block_size // 2
    # each seed covers the block_size-wide block that starts at it: pad by half on every side,
    # then a stride-1 max pool (padded by half again) spreads it over the block
    pool = F.max_pool2d if dims == 2 else F.max_pool3d
    blocks = pool(F.pad(seeds, [half] * (2 * dims), value=0.0), block_size, stride=1,
                  padding=half)
    keep = 1 - blocks
    scale = keep.numel() / (eps + keep.sum())
    if inplace:
        return input.mul_(keep).mul_(scale)
    return input * keep * scale


def drop_block2d(input: Tensor, p: float, block_size: int, inplace: bool = False,
                 eps: float = 1e-6, training: bool = True) -> Tensor:
    """Zeroes random ``block_size × block_size`` blocks of each ``(N, C, H, W)`` channel so
    that a share ``p`` of the pixels is dropped on average, and rescales the rest by the
    share kept (``block_size`` is clipped to the map and must then be odd).

    Example:
        >>> drop_block2d(ember.ones(1, 1, 4, 4), 0.5, 3, training=False).sum().item()
        16.0
    """
    return _drop_block("drop_block2d", input, p, block_size, inplace, eps, training, 2)


def drop_block3d(input: Tensor, p: float, block_size: int, inplace: bool = False,
                 eps: float = 1e-6, training: bool = True) -> Tensor:
    """:func:`drop_block2d` with cubic blocks on ``(N, C, D, H, W)`` inputs.

    Example:
        >>> drop_block3d(ember.ones(1, 1, 3, 3, 3), 0.0, 3).sum().item()
        27.0
    """
    return _drop_block("drop_block3d", input, p, block_size, inplace, eps, training, 3)


class DropBlock2d(nn.Module):
    """:func:`drop_block2d` as a layer (active in training mode).

    Example:
        >>> DropBlock2d(0.1, 3).eval()(ember.ones(1, 2, 5, 5)).shape
        ember.Size([1, 2, 5, 5])
    """

    def __init__(self, p: float, block_size: int, inplace: bool = False,
                 eps: float = 1e-6) -> None:
        super().__init__()
        self.p, self.block_size, self.inplace, self.eps = p, block_size, inplace, eps

    def forward(self, input: Tensor) -> Tensor:
        return drop_block2d(input, self.p, self.block_size, self.inplace, self.eps,
                            self.training)

    def __repr__(self) -> str:
        return (f"{type(self).__name__}(p={self.p}, block_size={self.block_size}, "
                f"inplace={self.inplace})")


class DropBlock3d(DropBlock2d):
    """:func:`drop_block3d` as a layer (active in training mode).

    Example:
        >>> DropBlock3d(0.1, 3).eval()(ember.ones(1, 2, 3, 3, 3)).shape
        ember.Size([1, 2, 3, 3, 3])
    """

    def forward(self, input: Tensor) -> Tensor:
        return drop_block3d(input, self.p, self.block_size, self.inplace, self.eps,
                            self.training)
