"""The reference boxes of detectors, as torchvision's: ``AnchorGenerator`` (region proposal
networks, RetinaNet, FCOS: for every feature level, every position and every (size, aspect
ratio)) and SSD's ``DefaultBoxGenerator`` (scales relative to the image)."""

from __future__ import annotations

import math

import ember
from ember import nn
from ember.errors import ArgumentError
from ember.tensor import Tensor
from ember.vision.models.detection.image_list import ImageList

__all__ = ["AnchorGenerator", "DefaultBoxGenerator"]


class AnchorGenerator(nn.Module):
    """Anchors centred on every cell of each feature map: level ``i`` has one box per pair of
    ``sizes[i]`` (the square root of the area) and ``aspect_ratios[i]`` (height / width),
    their corners rounded to whole pixels, repeated with the level's stride. ``forward``
    returns one ``(sum over levels of H·W·A, 4)`` tensor per image.

    Example:
        >>> gen = AnchorGenerator(((16,),), ((1.0,),))
        >>> images = ImageList(ember.zeros(1, 3, 8, 8), [(8, 8)])
        >>> gen(images, [ember.zeros(1, 4, 2, 2)])[0]
        tensor([[-8., -8.,  8.,  8.],
                [-4., -8., 12.,  8.],
                [-8., -4.,  8., 12.],
                [-4., -4., 12., 12.]])
    """

    def __init__(self, sizes: tuple = ((128, 256, 512),),
                 aspect_ratios: tuple = ((0.5, 1.0, 2.0),)) -> None:
        super().__init__()
        if not isinstance(sizes[0], (list, tuple)):
            sizes = tuple((s,) for s in sizes)
        if not isinstance(aspect_ratios[0], (list, tuple)):
            aspect_ratios = (aspect_ratios,) * len(sizes)
        if len(sizes) != len(aspect_ratios):
            raise ArgumentError(f"AnchorGenerator: sizes ({len(sizes)} levels) and aspect_ratios "
                                f"({len(aspect_ratios)} levels) must have the same length")
        self.sizes, self.aspect_ratios = sizes, aspect_ratios
        self.cell_anchors = [self.generate_anchors(s, a) for s, a in zip(sizes, aspect_ratios)]

    @staticmethod
    def generate_anchors(scales: tuple, aspect_ratios: tuple,
                         dtype: ember.dtype = ember.float32) -> Tensor:
        """``(len(aspect_ratios) · len(scales), 4)`` zero-centred boxes, ratio-major."""
        scales = ember.tensor(list(scales), dtype=dtype)
        ratios = ember.tensor(list(aspect_ratios), dtype=dtype)
        h_ratios = ratios.sqrt()
        ws = (1 / h_ratios[:, None] * scales[None, :]).reshape(-1)
        hs = (h_ratios[:, None] * scales[None, :]).reshape(-1)
        return (ember.stack([-ws, -hs, ws, hs], dim=1) / 2).round()

    def num_anchors_per_location(self) -> list[int]:
        return [len(s) * len(a) for s, a in zip(self.sizes, self.aspect_ratios)]

    def grid_anchors(self, grid_sizes: list[tuple[int, int]],
                     strides: list[tuple[int, int]]) -> list[Tensor]:
        """Each level's cell anchors shifted to every ``(row, column)`` of its grid."""
        if len(grid_sizes) != len(self.cell_anchors):
            raise ArgumentError(f"AnchorGenerator: {len(grid_sizes)} feature maps but anchors for "
                                f"{len(self.cell_anchors)} levels. Hint: give sizes and "
                                "aspect_ratios one entry per feature map")
        out = []
        for (rows, cols), (stride_h, stride_w), base in zip(grid_sizes, strides,
                                                             self.cell_anchors):
            shift_y, shift_x = ember.meshgrid(ember.arange(rows) * stride_h,
                                              ember.arange(cols) * stride_w, indexing="ij")
            shift_x, shift_y = shift_x.reshape(-1), shift_y.reshape(-1)
            shifts = ember.stack((shift_x, shift_y, shift_x, shift_y), dim=1).to(base.dtype)
            out.append((shifts[:, None, :] + base[None, :, :]).reshape(-1, 4))
        return out

    def forward(self, image_list: ImageList, feature_maps: list[Tensor]) -> list[Tensor]:
        grid_sizes = [tuple(f.shape[-2:]) for f in feature_maps]
        height, width = image_list.tensors.shape[-2:]
        dtype = feature_maps[0].dtype
        self.cell_anchors = [a.to(dtype) for a in self.cell_anchors]
        strides = [(height // g[0], width // g[1]) for g in grid_sizes]
        anchors = ember.cat(self.grid_anchors(grid_sizes, strides))
        return [anchors for _ in image_list.image_sizes]

    def extra_repr(self) -> str:
        return f"sizes={self.sizes}, aspect_ratios={self.aspect_ratios}"


class DefaultBoxGenerator(nn.Module):
    """SSD's default boxes: on feature map ``k`` (of ``len(aspect_ratios)``), centred on every
    cell, a square of side ``scales[k]``, one of side ``sqrt(scales[k] · scales[k + 1])``, and
    for each ratio ``r`` of ``aspect_ratios[k]`` a ``scales[k]·√r × scales[k]/√r`` box and its
    transpose, all relative to the image (clamped to [0, 1] when ``clip``). The scales run
    evenly from ``min_ratio`` to ``max_ratio`` unless given; ``steps`` (pixels per cell) place
    the centres instead of the grid's own size. ``forward`` returns one ``(ΣHWA, 4)`` corner
    tensor per image, in the batch's pixels.

    Example:
        >>> gen = DefaultBoxGenerator([[2]], scales=[0.5, 1.0])
        >>> gen.num_anchors_per_location()
        [4]
        >>> gen(ImageList(ember.zeros(1, 3, 8, 8), [(8, 8)]), [ember.zeros(1, 4, 1, 1)])[0]
        tensor([[2.0000, 2.0000, 6.0000, 6.0000],
                [1.1716, 1.1716, 6.8284, 6.8284],
                [1.1716, 2.5858, 6.8284, 5.4142],
                [2.5858, 1.1716, 5.4142, 6.8284]])
    """

    def __init__(self, aspect_ratios: list[list[int]], min_ratio: float = 0.15,
                 max_ratio: float = 0.9, scales: list[float] | None = None,
                 steps: list[int] | None = None, clip: bool = True) -> None:
        super().__init__()
        levels = len(aspect_ratios)
        if steps is not None and len(steps) != levels:
            raise ArgumentError(f"DefaultBoxGenerator: {len(steps)} steps for {levels} levels of "
                                "aspect_ratios; give one step per feature map")
        if scales is None:
            if levels > 1:
                spread = max_ratio - min_ratio
                scales = [min_ratio + spread * k / (levels - 1.0) for k in range(levels)]
                scales.append(1.0)
            else:
                scales = [min_ratio, max_ratio]
        if len(scales) < levels + 1:
            raise ArgumentError(f"DefaultBoxGenerator: {len(scales)} scales for {levels} levels; "
                                "give one more scale than feature maps (the last one sizes the "
                                "top level's second square)")
        self.aspect_ratios, self.steps, self.clip = aspect_ratios, steps, clip
        self.scales = list(scales)
        self._wh_pairs = [self._wh_pairs_of_level(k) for k in range(levels)]

    def _wh_pairs_of_level(self, k: int) -> Tensor:
        """``(2 + 2 · len(aspect_ratios[k]), 2)`` relative widths and heights."""
        s_k = self.scales[k]
        between = math.sqrt(s_k * self.scales[k + 1])
        pairs = [[s_k, s_k], [between, between]]
        for ratio in self.aspect_ratios[k]:
            w, h = s_k * math.sqrt(ratio), s_k / math.sqrt(ratio)
            pairs += [[w, h], [h, w]]
        return ember.tensor(pairs, dtype=ember.float32)

    def num_anchors_per_location(self) -> list[int]:
        return [2 + 2 * len(r) for r in self.aspect_ratios]

    def _grid_default_boxes(self, grid_sizes: list[tuple[int, int]],
                            image_size: tuple[int, int], dtype: ember.dtype) -> Tensor:
        """``(ΣHWA, 4)`` relative ``(cx, cy, w, h)`` boxes, position-major per level."""
        boxes = []
        for k, (rows, cols) in enumerate(grid_sizes):
            if self.steps is not None:
                cells_y, cells_x = image_size[0] / self.steps[k], image_size[1] / self.steps[k]
            else:
                cells_y, cells_x = rows, cols
            cy, cx = ember.meshgrid((ember.arange(rows) + 0.5) / cells_y,
                                    (ember.arange(cols) + 0.5) / cells_x, indexing="ij")
            pairs = self._wh_pairs[k].to(dtype)
            if self.clip:
                pairs = pairs.clamp(min=0, max=1)
            centres = ember.stack((cx.reshape(-1), cy.reshape(-1)), dim=1).to(dtype)
            per_cell = len(pairs)
            boxes.append(ember.cat((centres.repeat_interleave(per_cell, dim=0),
                                    pairs.repeat(rows * cols, 1)), dim=1))
        return ember.cat(boxes)

    def forward(self, image_list: ImageList, feature_maps: list[Tensor]) -> list[Tensor]:
        if len(feature_maps) != len(self.aspect_ratios):
            raise ArgumentError(f"DefaultBoxGenerator: {len(feature_maps)} feature maps but "
                                f"aspect ratios for {len(self.aspect_ratios)}")
        grid_sizes = [tuple(int(d) for d in f.shape[-2:]) for f in feature_maps]
        height, width = (int(d) for d in image_list.tensors.shape[-2:])
        relative = self._grid_default_boxes(grid_sizes, (height, width), feature_maps[0].dtype)
        scale = ember.tensor([width, height], dtype=relative.dtype)
        corners = ember.cat(((relative[:, :2] - 0.5 * relative[:, 2:]) * scale,
                             (relative[:, :2] + 0.5 * relative[:, 2:]) * scale), dim=1)
        return [corners for _ in image_list.image_sizes]

    def extra_repr(self) -> str:
        return (f"aspect_ratios={self.aspect_ratios}, clip={self.clip}, scales={self.scales}, "
                f"steps={self.steps}")
