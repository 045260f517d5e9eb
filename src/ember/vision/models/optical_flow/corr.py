"""RAFT's correlation block: the all-pairs correlation volume of two feature maps, average-
pooled into a pyramid, and looked up around each pixel's current match (paper §3.2).

Example:
    >>> from ember.vision.models.optical_flow._utils import make_coords_grid
    >>> corr = CorrBlock(num_levels=2, radius=1)
    >>> corr.build_pyramid(ember.randn(1, 8, 4, 4), ember.randn(1, 8, 4, 4))
    >>> corr.index_pyramid(make_coords_grid(1, 4, 4)).shape
    ember.Size([1, 18, 4, 4])
"""

from __future__ import annotations

import math

import ember
import ember.nn.functional as F
from ember import Tensor, nn
from ember.errors import ArgumentError, ShapeError
from ember.vision.models.optical_flow._utils import grid_sample

__all__ = ["CorrBlock"]


class CorrBlock(nn.Module):
    """``build_pyramid`` keeps the correlation pyramid of two (N, C, h, w) feature maps (the
    dot products of every pixel pair over √C, then ``num_levels - 1`` 2×2 average pools of the
    second map's axes); ``index_pyramid`` samples each level bilinearly on the
    (2·radius+1)² square around the given matches (halved per level) and returns
    (N, out_channels, h, w), ``out_channels = num_levels · (2·radius+1)²``."""

    def __init__(self, *, num_levels: int = 4, radius: int = 4) -> None:
        super().__init__()
        self.num_levels = num_levels
        self.radius = radius
        self.corr_pyramid: list[Tensor] = []
        self.out_channels = num_levels * (2 * radius + 1) ** 2

    def build_pyramid(self, fmap1: Tensor, fmap2: Tensor) -> None:
        if fmap1.shape != fmap2.shape:
            raise ShapeError(f"CorrBlock.build_pyramid: the feature maps differ in shape, "
                             f"{tuple(fmap1.shape)} and {tuple(fmap2.shape)}")
        least = 2 ** self.num_levels  # the coarsest level keeps 2 pixels a side
        if any(size < least for size in fmap1.shape[-2:]):
            raise ShapeError(
                f"CorrBlock.build_pyramid: feature maps of {tuple(fmap1.shape[-2:])} are too "
                f"small for {self.num_levels} pyramid levels: H and W must be at least {least}. "
                f"Hint: RAFT's encoders downsample 8 times, so images need at least "
                f"{8 * least} pixels a side")
        n, c, h, w = fmap1.shape
        corr = fmap1.reshape(n, c, h * w).transpose(1, 2) @ fmap2.reshape(n, c, h * w)
        corr = corr.reshape(n * h * w, 1, h, w) / math.sqrt(c)
        self.corr_pyramid = [corr]
        for _ in range(self.num_levels - 1):
            corr = F.avg_pool2d(corr, kernel_size=2, stride=2)
            self.corr_pyramid.append(corr)

    def index_pyramid(self, centroids_coords: Tensor) -> Tensor:
        if not self.corr_pyramid:
            raise ArgumentError("CorrBlock.index_pyramid: no pyramid yet. Hint: call "
                                "build_pyramid(fmap1, fmap2) first")
        side = 2 * self.radius + 1
        n, _, h, w = centroids_coords.shape
        steps = ember.arange(-self.radius, self.radius + 1, dtype=centroids_coords.dtype,
                             device=centroids_coords.device)
        # as RAFT's: the x offset runs down the sampled window, the y offset across it
        dx, dy = ember.meshgrid(steps, steps, indexing="ij")
        window = ember.stack([dx, dy], dim=-1).view(1, side, side, 2)
        centres = centroids_coords.permute(0, 2, 3, 1).reshape(n * h * w, 1, 1, 2)
        levels = []
        for corr in self.corr_pyramid:
            sampled = grid_sample(corr, centres + window, mode="bilinear", align_corners=True)
            levels.append(sampled.view(n, h, w, side * side))
            centres = centres / 2
        return ember.cat(levels, dim=-1).permute(0, 3, 1, 2).contiguous()
