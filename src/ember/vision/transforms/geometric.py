"""Geometric transforms over :mod:`ember.vision.transforms.functional`: the random warps
``RandomPerspective`` and ``ElasticTransform`` (torchvision's draws), and ``FiveCrop`` /
``TenCrop``."""

from __future__ import annotations

import numbers
from collections.abc import Sequence

import ember
from ember.errors import ArgumentError
from ember.tensor import Tensor
from ember.vision.transforms import functional as TF
from ember.vision.transforms._pil import accepts_pil
from ember.vision.transforms.augment import _coin, _Random
from ember.vision.transforms.autoaugment import _fills
from ember.vision.transforms.basic import _hw, _size_pair
from ember.vision.transforms.functional import Image, InterpolationMode

__all__ = ["ElasticTransform", "FiveCrop", "RandomPerspective", "TenCrop"]


class RandomPerspective(_Random):
    """With probability ``p``, a perspective warp moving each corner inwards by up to
    ``distortion_scale`` of half the width and height (torchvision's draws).

    Example:
        >>> RandomPerspective(0.5, p=1.0)(ember.rand(3, 8, 8)).shape
        ember.Size([3, 8, 8])
    """

    def __init__(self, distortion_scale: float = 0.5, p: float = 0.5,
                 interpolation: InterpolationMode = InterpolationMode.BILINEAR,
                 fill: float | Sequence[float] = 0,
                 generator: ember.Generator | None = None) -> None:
        if fill is None:
            fill = 0
        elif not isinstance(fill, (Sequence, numbers.Number)):
            raise TypeError(f"RandomPerspective: fill should be either a sequence or a number, "
                            f"got {type(fill).__name__}")
        self.distortion_scale, self.p = distortion_scale, p
        self.interpolation, self.fill = InterpolationMode(interpolation), fill
        self.generator = generator

    @staticmethod
    def get_params(width: int, height: int, distortion_scale: float,
                   generator: ember.Generator | None = None
                   ) -> tuple[list[list[int]], list[list[int]]]:
        """The image's corners and random end points: each corner moves inwards by up to
        ``distortion_scale · (width // 2)`` across and ``distortion_scale · (height // 2)``
        down or up."""
        dx, dy = int(distortion_scale * (width // 2)), int(distortion_scale * (height // 2))

        def draw(low: int, high: int) -> int:
            return int(ember.randint(low, high, (1,), generator=generator).item())

        left, right = (0, dx + 1), (width - dx - 1, width)
        top, bottom = (0, dy + 1), (height - dy - 1, height)
        ends = [[draw(*left), draw(*top)], [draw(*right), draw(*top)],
                [draw(*right), draw(*bottom)], [draw(*left), draw(*bottom)]]
        starts = [[0, 0], [width - 1, 0], [width - 1, height - 1], [0, height - 1]]
        return starts, ends

    # a PIL image goes to the function, which hands it to Pillow as torchvision does
    def __call__(self, img: Image) -> Image:
        if not _coin(self.p, self.generator):
            return img
        h, w = _hw(img)
        starts, ends = self.get_params(w, h, self.distortion_scale, self.generator)
        return TF.perspective(img, starts, ends, self.interpolation, _fills(img, self.fill))


def _pair(name: str, value: float | Sequence[float]) -> list[float]:
    """torchvision's ``alpha``/``sigma`` forms: a float, or a sequence of two floats."""
    if isinstance(value, float):
        return [value, value]
    if not isinstance(value, Sequence):
        raise TypeError(f"ElasticTransform: {name} should be float or a sequence of floats, "
                        f"got {type(value).__name__}")
    if len(value) != 2:
        raise ArgumentError(f"ElasticTransform: if {name} is a sequence its length should be 2, "
                            f"got {len(value)}")
    if not all(isinstance(v, float) for v in value):
        raise TypeError(f"ElasticTransform: {name} should be a sequence of floats, got "
                        f"{list(value)}")
    return list(value)


class ElasticTransform(_Random):
    """An elastic warp: a displacement field of uniform noise in ``[-1, 1]``, smoothed by a
    Gaussian of ``sigma`` and scaled by ``alpha`` (pixels), per direction, as torchvision's.

    Example:
        >>> ElasticTransform(alpha=20.0, sigma=2.0)(ember.rand(3, 16, 16)).shape
        ember.Size([3, 16, 16])
    """

    def __init__(self, alpha: float | Sequence[float] = 50.0,
                 sigma: float | Sequence[float] = 5.0,
                 interpolation: InterpolationMode = InterpolationMode.BILINEAR,
                 fill: float | Sequence[float] = 0,
                 generator: ember.Generator | None = None) -> None:
        self.alpha, self.sigma = _pair("alpha", alpha), _pair("sigma", sigma)
        if isinstance(fill, numbers.Number):
            fill = [float(fill)]
        elif isinstance(fill, Sequence):
            fill = [float(f) for f in fill]
        else:
            raise TypeError(f"ElasticTransform: fill should be a number or a sequence of "
                            f"numbers, got {type(fill).__name__}")
        self.interpolation, self.fill = InterpolationMode(interpolation), fill
        self.generator = generator

    @staticmethod
    def get_params(alpha: Sequence[float], sigma: Sequence[float], size: Sequence[int],
                   generator: ember.Generator | None = None) -> Tensor:
        """A random displacement field ``(1, H, W, 2)`` for an image of ``size = [H, W]``."""
        fields = []
        for k in range(2):
            d = ember.rand(1, 1, *size, generator=generator) * 2 - 1
            if sigma[k] > 0.0:
                ks = int(8 * sigma[k] + 1)
                ks += 1 - ks % 2
                d = TF.gaussian_blur(d, [ks, ks], list(sigma))
            fields.append(d * alpha[k] / size[k])
        return ember.cat(fields, 1).permute(0, 2, 3, 1)

    @accepts_pil
    def __call__(self, img: Image) -> Image:
        size = list(_hw(img))
        displacement = self.get_params(self.alpha, self.sigma, size, self.generator)
        return TF.elastic_transform(img, displacement, self.interpolation, self.fill)


class FiveCrop(_Random):
    """The four corner crops and the central crop of ``size``, as a tuple.

    Example:
        >>> [c.shape[-1] for c in FiveCrop(2)(ember.rand(1, 4, 5))]
        [2, 2, 2, 2, 2]
    """

    def __init__(self, size: int | Sequence[int]) -> None:
        self.size = _size_pair(size, "FiveCrop")

    @accepts_pil
    def __call__(self, img: Image) -> tuple[Image, ...]:
        return TF.five_crop(img, self.size)


class TenCrop(_Random):
    """:class:`FiveCrop` of the image and of its mirror (left-right, or top-bottom with
    ``vertical_flip``): ten crops.

    Example:
        >>> len(TenCrop(2)(ember.rand(1, 4, 5)))
        10
    """

    def __init__(self, size: int | Sequence[int], vertical_flip: bool = False) -> None:
        self.size, self.vertical_flip = _size_pair(size, "TenCrop"), vertical_flip

    @accepts_pil
    def __call__(self, img: Image) -> tuple[Image, ...]:
        return TF.ten_crop(img, self.size, self.vertical_flip)
