"""``MultiScaleRoIAlign``: RoI Align over a feature pyramid, each box read from the level
that suits its size (Lin et al., 2017, eq. 1), as torchvision's."""

from __future__ import annotations

import math

import ember
from ember import nn
from ember.errors import ShapeError
from ember.tensor import Tensor
from ember.vision.ops.boxes import box_area
from ember.vision.ops.roi import roi_align

__all__ = ["MultiScaleRoIAlign"]


def _level_scale(feature: Tensor, image_size: tuple[int, int]) -> float:
    """The power of two nearest to the feature's height over the image's."""
    return 2.0 ** round(math.log2(feature.shape[-2] / image_size[0]))


class MultiScaleRoIAlign(nn.Module):
    """RoI Align of per-image boxes on those of the feature maps named ``featmap_names``
    that are present (in the features' order): a box of
    area ``s²`` reads level ``floor(canonical_level + log2(s / canonical_scale))``, clamped
    to the levels present (the levels' scales are inferred from the feature and image sizes).

    Example:
        >>> pool = MultiScaleRoIAlign(["a", "b"], 3, 2)
        >>> feats = {"a": ember.randn(1, 4, 16, 16), "b": ember.randn(1, 4, 8, 8)}
        >>> pool(feats, [ember.tensor([[0.0, 0, 10, 10], [0.0, 0, 60, 60]])], [(64, 64)]).shape
        ember.Size([2, 4, 3, 3])
    """

    def __init__(self, featmap_names: list[str], output_size: int | tuple[int, int] | list[int],
                 sampling_ratio: int, *, canonical_scale: int = 224,
                 canonical_level: int = 4) -> None:
        super().__init__()
        if isinstance(output_size, int):
            output_size = (output_size, output_size)
        self.featmap_names = featmap_names
        self.sampling_ratio = sampling_ratio
        self.output_size = tuple(output_size)
        self.canonical_scale, self.canonical_level = canonical_scale, canonical_level

    def _levels(self, boxes: list[Tensor], k_min: int, k_max: int) -> Tensor:
        sizes = ember.cat([box_area(b) for b in boxes]).sqrt()
        level = ember.floor(self.canonical_level + ember.log2(sizes / self.canonical_scale)
                            + 1e-6)
        return level.clamp(min=k_min, max=k_max).long() - k_min

    def forward(self, x: dict[str, Tensor], boxes: list[Tensor],
                image_shapes: list[tuple[int, int]]) -> Tensor:
        # as torchvision: the named maps that are present (a two-level pyramid uses two)
        features = [v for k, v in x.items() if k in self.featmap_names]
        if not features:
            raise KeyError(f"MultiScaleRoIAlign: the features have none of the maps "
                           f"{self.featmap_names}; they have {list(x)}")
        for i, b in enumerate(boxes):
            if b.ndim != 2 or b.shape[1] != 4:
                raise ShapeError(f"MultiScaleRoIAlign: boxes[{i}] must be (L, 4), got "
                                 f"{tuple(b.shape)}")
        biggest = (max(s[0] for s in image_shapes), max(s[1] for s in image_shapes))
        scales = [_level_scale(f, biggest) for f in features]
        rois = ember.cat([ember.cat((ember.full((len(b), 1), float(i), dtype=b.dtype), b), 1)
                          for i, b in enumerate(boxes)])
        if len(features) == 1:
            return roi_align(features[0], rois, self.output_size, scales[0],
                             self.sampling_ratio)
        k_min, k_max = int(-math.log2(scales[0])), int(-math.log2(scales[-1]))
        levels = self._levels(boxes, k_min, k_max)
        outs, order = [], []
        for level, (feature, scale) in enumerate(zip(features, scales)):
            idx = ember.where(levels == level)[0]
            outs.append(roi_align(feature, rois[idx], self.output_size, scale,
                                  self.sampling_ratio))
            order.append(idx)
        # each box's result back in its place: the inverse of the level-by-level order
        return ember.cat(outs)[ember.argsort(ember.cat(order))]

    def extra_repr(self) -> str:
        return (f"featmap_names={self.featmap_names}, output_size={self.output_size}, "
                f"sampling_ratio={self.sampling_ratio}")
