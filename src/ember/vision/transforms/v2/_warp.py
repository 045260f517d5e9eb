"""The random warps as v2 transforms: ``RandomPerspective`` and ``ElasticTransform`` move the
image, its masks, boxes and key points with one draw (v1's draws)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from ember.errors import ArgumentError
from ember.vision.transforms import geometric as v1
from ember.vision.transforms.v2 import functional as F
from ember.vision.transforms.v2._transform import Transform, _RandomApplyTransform
from ember.vision.transforms.v2._utils import (
    Fill,
    _get_fill,
    _number_pair,
    _setup_fill_arg,
    query_size,
)
from ember.vision.transforms.v2.functional import InterpolationMode

__all__ = ["ElasticTransform", "RandomPerspective"]


class RandomPerspective(_RandomApplyTransform):
    """With probability ``p``, a perspective warp moving each corner inwards by up to
    ``distortion_scale`` of half the size (drawn as v1's ``RandomPerspective.get_params``).

    Example:
        >>> from ember.vision import tv_tensors
        >>> k = tv_tensors.KeyPoints([[2.0, 2.0]], canvas_size=(8, 8))
        >>> img, points = RandomPerspective(0.5, p=1.0)(ember.rand(3, 8, 8), k)
        >>> img.shape, type(points).__name__
        (ember.Size([3, 8, 8]), 'KeyPoints')
    """

    def __init__(self, distortion_scale: float = 0.5, p: float = 0.5,
                 interpolation: InterpolationMode = InterpolationMode.BILINEAR,
                 fill: Fill | dict = 0) -> None:
        super().__init__(p)
        if not 0 <= distortion_scale <= 1:
            raise ArgumentError(f"RandomPerspective: distortion_scale should be in [0, 1], got "
                                f"{distortion_scale}")
        self.distortion_scale, self.interpolation = distortion_scale, interpolation
        self.fill, self._fill = fill, _setup_fill_arg(fill)

    def make_params(self, flat_inputs: list) -> dict[str, Any]:
        height, width = query_size(flat_inputs)
        starts, ends = v1.RandomPerspective.get_params(width, height, self.distortion_scale)
        return {"startpoints": starts, "endpoints": ends}

    def transform(self, inpt: Any, params: dict[str, Any]) -> Any:
        return self._call_kernel(F.perspective, inpt, **params, interpolation=self.interpolation,
                                 fill=_get_fill(self._fill, type(inpt)))


class ElasticTransform(Transform):
    """An elastic warp: a displacement field of uniform noise smoothed by a Gaussian of
    ``sigma`` and scaled by ``alpha`` pixels (v1's ``ElasticTransform.get_params``), applied
    to the whole sample.

    Example:
        >>> ElasticTransform(alpha=20.0, sigma=2.0)(ember.rand(3, 16, 16)).shape
        ember.Size([3, 16, 16])
    """

    def __init__(self, alpha: float | Sequence[float] = 50.0,
                 sigma: float | Sequence[float] = 5.0,
                 interpolation: InterpolationMode = InterpolationMode.BILINEAR,
                 fill: Fill | dict = 0) -> None:
        super().__init__()
        self.alpha = _number_pair(alpha, "alpha", "ElasticTransform")
        self.sigma = _number_pair(sigma, "sigma", "ElasticTransform")
        self.interpolation = InterpolationMode(interpolation)
        self.fill, self._fill = fill, _setup_fill_arg(fill)

    def make_params(self, flat_inputs: list) -> dict[str, Any]:
        size = list(query_size(flat_inputs))
        return {"displacement": v1.ElasticTransform.get_params(self.alpha, self.sigma, size)}

    def transform(self, inpt: Any, params: dict[str, Any]) -> Any:
        return self._call_kernel(F.elastic, inpt, params["displacement"],
                                 interpolation=self.interpolation,
                                 fill=_get_fill(self._fill, type(inpt)))
