"""``AnchorGenerator``: the reference boxes of region proposal networks and RetinaNet, as
torchvision's: for every feature level, every position and every (size, aspect ratio)."""

from __future__ import annotations

import ember
from ember import nn
from ember.tensor import Tensor
from ember.vision.models.detection.image_list import ImageList

__all__ = ["AnchorGenerator"]


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
            raise ValueError(f"AnchorGenerator: sizes ({len(sizes)} levels) and aspect_ratios "
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
            raise ValueError(f"AnchorGenerator: {len(grid_sizes)} feature maps but anchors for "
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
