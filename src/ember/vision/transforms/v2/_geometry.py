"""The geometric v2 transforms: flips, resizing, crops, padding, rotations and affine warps,
applied alike to every image, video, mask, box set and key point set of a sample; and the
multi-crops ``FiveCrop`` / ``TenCrop`` of images and videos."""

from __future__ import annotations

import numbers
from collections.abc import Sequence
from typing import Any

import ember
from ember.errors import ArgumentError
from ember.vision import tv_tensors
from ember.vision.transforms import augment as v1
from ember.vision.transforms.autoaugment import RandomAffine as _V1Affine
from ember.vision.transforms.basic import _check_mode, _padding4, _size_pair
from ember.vision.transforms.v2 import functional as F
from ember.vision.transforms.v2._transform import Transform, _RandomApplyTransform
from ember.vision.transforms.v2._utils import (
    Fill,
    _get_fill,
    _setup_fill_arg,
    query_size,
)
from ember.vision.transforms.v2.functional import InterpolationMode
from ember.vision.transforms.v2.functional._geometry import _size_for_max_size

__all__ = ["CenterCrop", "FiveCrop", "Pad", "RandomAffine", "RandomCrop",
           "RandomHorizontalFlip", "RandomResize", "RandomResizedCrop", "RandomRotation",
           "RandomVerticalFlip", "Resize", "TenCrop"]


class RandomHorizontalFlip(_RandomApplyTransform):
    """Mirrors the whole sample left-right with probability ``p``.

    Example:
        >>> from ember.vision import tv_tensors
        >>> boxes = tv_tensors.BoundingBoxes([0, 0, 1, 1], format="XYXY", canvas_size=(2, 4))
        >>> RandomHorizontalFlip(p=1.0)(ember.zeros(1, 2, 4), boxes)[1].tolist()
        [[3, 0, 4, 1]]
    """

    def transform(self, inpt: Any, params: dict[str, Any]) -> Any:
        return self._call_kernel(F.horizontal_flip, inpt)


class RandomVerticalFlip(_RandomApplyTransform):
    """Mirrors the whole sample top-bottom with probability ``p``.

    Example:
        >>> RandomVerticalFlip(p=1.0)(ember.tensor([[[1], [2]]])).tolist()
        [[[2], [1]]]
    """

    def transform(self, inpt: Any, params: dict[str, Any]) -> Any:
        return self._call_kernel(F.vertical_flip, inpt)


class Resize(Transform):
    """Resizes to ``size`` (``(h, w)``, or one number for the smaller edge; None: the longer
    edge becomes ``max_size``).

    Example:
        >>> Resize(8)(ember.zeros(3, 16, 32)).shape
        ember.Size([3, 8, 16])
    """

    def __init__(self, size: int | Sequence[int] | None,
                 interpolation: InterpolationMode = InterpolationMode.BILINEAR,
                 max_size: int | None = None, antialias: bool | None = True) -> None:
        super().__init__()
        if isinstance(size, numbers.Integral) and not isinstance(size, bool):  # (4.5: refused)
            size = [int(size)]
        if size is None and not isinstance(max_size, int):
            raise ArgumentError(f"Resize: max_size must be an int when size is None, got "
                                f"{max_size!r}")
        if not (size is None or isinstance(size, Sequence) and len(size) in (1, 2)):
            raise ArgumentError(f"Resize: size should be an int, a sequence of 1 or 2 ints, or "
                                f"None, got {size!r}")
        self.size = None if size is None else list(size)
        self.interpolation = InterpolationMode(interpolation)
        self.max_size, self.antialias = max_size, antialias

    def make_params(self, flat_inputs: list) -> dict[str, Any]:
        if self.size is not None:
            return {"size": self.size, "max_size": self.max_size}
        return {"size": _size_for_max_size(query_size(flat_inputs), self.max_size),
                "max_size": None}

    def transform(self, inpt: Any, params: dict[str, Any]) -> Any:
        return self._call_kernel(F.resize, inpt, params["size"], interpolation=self.interpolation,
                                 max_size=params["max_size"], antialias=self.antialias)


class RandomResize(Transform):
    """Resizes the smaller edge to a size drawn uniformly from ``[min_size, max_size)``.

    Example:
        >>> RandomResize(4, 5)(ember.zeros(1, 8, 16)).shape
        ember.Size([1, 4, 8])
    """

    def __init__(self, min_size: int, max_size: int,
                 interpolation: InterpolationMode = InterpolationMode.BILINEAR,
                 antialias: bool | None = True) -> None:
        super().__init__()
        if not 0 < min_size < max_size:
            raise ArgumentError(f"RandomResize: expected 0 < min_size < max_size, got {min_size} "
                                f"and {max_size}")
        self.min_size, self.max_size = min_size, max_size
        self.interpolation, self.antialias = InterpolationMode(interpolation), antialias

    def make_params(self, flat_inputs: list) -> dict[str, Any]:
        return {"size": [int(ember.randint(self.min_size, self.max_size, ()))]}

    def transform(self, inpt: Any, params: dict[str, Any]) -> Any:
        return self._call_kernel(F.resize, inpt, params["size"], interpolation=self.interpolation,
                                 antialias=self.antialias)


class CenterCrop(Transform):
    """The central ``size`` window of the sample.

    Example:
        >>> CenterCrop(2)(ember.zeros(1, 4, 4)).shape
        ember.Size([1, 2, 2])
    """

    def __init__(self, size: int | Sequence[int]) -> None:
        super().__init__()
        self.size = _size_pair(size, "CenterCrop")

    def transform(self, inpt: Any, params: dict[str, Any]) -> Any:
        return self._call_kernel(F.center_crop, inpt, output_size=self.size)


class RandomResizedCrop(Transform):
    """A random window covering ``scale`` of the area with an aspect ratio in ``ratio``
    (drawn as v1's ``RandomResizedCrop.get_params`` draws it), resized to ``size``.

    Example:
        >>> RandomResizedCrop(8)(ember.zeros(3, 20, 30)).shape
        ember.Size([3, 8, 8])
    """

    def __init__(self, size: int | Sequence[int], scale: tuple[float, float] = (0.08, 1.0),
                 ratio: tuple[float, float] = (3 / 4, 4 / 3),
                 interpolation: InterpolationMode = InterpolationMode.BILINEAR,
                 antialias: bool | None = True) -> None:
        super().__init__()
        parsed = v1.RandomResizedCrop(size, scale, ratio, interpolation, antialias)
        self.size, self.scale, self.ratio = parsed.size, tuple(scale), tuple(ratio)
        self.interpolation, self.antialias = parsed.interpolation, antialias

    def make_params(self, flat_inputs: list) -> dict[str, Any]:
        height, width = query_size(flat_inputs)
        top, left, h, w = v1.RandomResizedCrop.get_params(ember.empty(0, height, width),
                                                          self.scale, self.ratio)
        return {"top": top, "left": left, "height": h, "width": w}

    def transform(self, inpt: Any, params: dict[str, Any]) -> Any:
        return self._call_kernel(F.resized_crop, inpt, **params, size=self.size,
                                 interpolation=self.interpolation, antialias=self.antialias)


class Pad(Transform):
    """Pads by ``padding`` with ``fill`` (a number, per-channel values, or a dict of them per
    input type) or by the ``edge``, ``reflect`` or ``symmetric`` modes.

    Example:
        >>> Pad([1, 2])(ember.zeros(1, 2, 2)).shape
        ember.Size([1, 6, 4])
    """

    def __init__(self, padding: int | Sequence[int], fill: Fill | dict = 0,
                 padding_mode: str = "constant") -> None:
        super().__init__()
        _padding4(padding)
        _check_mode(padding_mode)
        self.padding = list(padding) if isinstance(padding, Sequence) else padding
        self.fill, self._fill = fill, _setup_fill_arg(fill)
        self.padding_mode = padding_mode

    def transform(self, inpt: Any, params: dict[str, Any]) -> Any:
        return self._call_kernel(F.pad, inpt, padding=self.padding,
                                 fill=_get_fill(self._fill, type(inpt)),
                                 padding_mode=self.padding_mode)


class RandomCrop(Transform):
    """A ``size`` window at a random place, after optional ``padding``; ``pad_if_needed`` pads
    a smaller sample on both sides first, as torchvision does.

    Example:
        >>> RandomCrop(2, padding=1)(ember.ones(1, 3, 3)).shape
        ember.Size([1, 2, 2])
    """

    def __init__(self, size: int | Sequence[int], padding: int | Sequence[int] | None = None,
                 pad_if_needed: bool = False, fill: Fill | dict = 0,
                 padding_mode: str = "constant") -> None:
        super().__init__()
        self.size = _size_pair(size, "RandomCrop")
        _check_mode(padding_mode)
        self.padding = None if padding is None else _padding4(padding)
        self.pad_if_needed, self.fill, self._fill = pad_if_needed, fill, _setup_fill_arg(fill)
        self.padding_mode = padding_mode

    def make_params(self, flat_inputs: list) -> dict[str, Any]:
        height, width = query_size(flat_inputs)
        left, top, right, bottom = self.padding or (0, 0, 0, 0)
        height, width = height + top + bottom, width + left + right
        crop_h, crop_w = self.size
        if self.pad_if_needed and height < crop_h:
            diff = crop_h - height
            top, bottom, height = top + diff, bottom + diff, height + 2 * diff
        if self.pad_if_needed and width < crop_w:
            diff = crop_w - width
            left, right, width = left + diff, right + diff, width + 2 * diff
        if height < crop_h or width < crop_w:
            raise ArgumentError(f"RandomCrop: required crop size {(crop_h, crop_w)} is larger than "
                                f"the {'padded ' if self.padding else ''}input image size "
                                f"{(height, width)}")
        y = int(ember.randint(0, height - crop_h + 1, ())) if height > crop_h else 0
        x = int(ember.randint(0, width - crop_w + 1, ())) if width > crop_w else 0
        return {"padding": [left, top, right, bottom], "top": y, "left": x,
                "needs_crop": height > crop_h or width > crop_w}

    def transform(self, inpt: Any, params: dict[str, Any]) -> Any:
        if any(params["padding"]):
            inpt = self._call_kernel(F.pad, inpt, padding=params["padding"],
                                     fill=_get_fill(self._fill, type(inpt)),
                                     padding_mode=self.padding_mode)
        if not params["needs_crop"]:
            return inpt
        return self._call_kernel(F.crop, inpt, params["top"], params["left"], *self.size)


class RandomRotation(Transform):
    """A rotation by an angle drawn uniformly from ``degrees`` (a number ``d``: ``[-d, d]``).

    Example:
        >>> RandomRotation(30)(ember.rand(3, 5, 5)).shape
        ember.Size([3, 5, 5])
    """

    def __init__(self, degrees: float | Sequence[float],
                 interpolation: InterpolationMode = InterpolationMode.NEAREST,
                 expand: bool = False, center: Sequence[float] | None = None,
                 fill: Fill | dict = 0) -> None:
        super().__init__()
        parsed = v1.RandomRotation(degrees, interpolation, expand, center)
        self.degrees, self.interpolation = parsed.degrees, parsed.interpolation
        self.expand, self.center = expand, None if center is None else list(center)
        self.fill, self._fill = fill, _setup_fill_arg(fill)

    def make_params(self, flat_inputs: list) -> dict[str, Any]:
        return {"angle": v1.RandomRotation.get_params(self.degrees)}

    def transform(self, inpt: Any, params: dict[str, Any]) -> Any:
        return self._call_kernel(F.rotate, inpt, params["angle"],
                                 interpolation=self.interpolation, expand=self.expand,
                                 center=self.center, fill=_get_fill(self._fill, type(inpt)))


class RandomAffine(Transform):
    """A random affine warp (rotation from ``degrees``, translation up to ``translate`` of the
    size, ``scale`` and ``shear`` ranges), drawn as v1's ``RandomAffine.get_params``.

    Example:
        >>> RandomAffine(15, translate=(0.1, 0.1))(ember.rand(3, 8, 8)).shape
        ember.Size([3, 8, 8])
    """

    def __init__(self, degrees: float | Sequence[float],
                 translate: Sequence[float] | None = None,
                 scale: Sequence[float] | None = None,
                 shear: float | Sequence[float] | None = None,
                 interpolation: InterpolationMode = InterpolationMode.NEAREST,
                 fill: Fill | dict = 0, center: Sequence[float] | None = None) -> None:
        super().__init__()
        parsed = _V1Affine(degrees, translate, scale, shear, interpolation, center=center)
        self.degrees, self.translate, self.scale = parsed.degrees, translate, scale
        self.shear, self.interpolation = parsed.shear, parsed.interpolation
        self.center = None if center is None else list(center)
        self.fill, self._fill = fill, _setup_fill_arg(fill)

    def make_params(self, flat_inputs: list) -> dict[str, Any]:
        height, width = query_size(flat_inputs)
        angle, translate, scale, shear = _V1Affine.get_params(
            self.degrees, self.translate, self.scale, self.shear, (width, height))
        return {"angle": angle, "translate": translate, "scale": scale, "shear": shear}

    def transform(self, inpt: Any, params: dict[str, Any]) -> Any:
        return self._call_kernel(F.affine, inpt, **params, interpolation=self.interpolation,
                                 fill=_get_fill(self._fill, type(inpt)), center=self.center)


class FiveCrop(Transform):
    """The four corner crops and the central crop of ``size`` of each image and video, as a
    tuple of five (masks, boxes and key points are refused, as torchvision refuses them).

    Example:
        >>> [c.shape[-1] for c in FiveCrop(2)(ember.rand(1, 4, 5))]
        [2, 2, 2, 2, 2]
    """

    def __init__(self, size: int | Sequence[int]) -> None:
        super().__init__()
        self.size = _size_pair(size, type(self).__name__)

    def _check_inputs(self, flat_inputs: list) -> None:
        for inpt in flat_inputs:
            if isinstance(inpt, (tv_tensors.BoundingBoxes, tv_tensors.Mask,
                                 tv_tensors.KeyPoints)):
                raise TypeError(f"{type(inpt).__name__} inputs are not supported by "
                                f"{type(self).__name__}()")

    def transform(self, inpt: Any, params: dict[str, Any]) -> Any:
        return self._call_kernel(F.five_crop, inpt, self.size)


class TenCrop(FiveCrop):
    """:class:`FiveCrop` of each image and video and of its mirror image (left-right, or
    top-bottom with ``vertical_flip``), as a tuple of ten.

    Example:
        >>> len(TenCrop(2, vertical_flip=True)(ember.rand(3, 4, 4)))
        10
    """

    def __init__(self, size: int | Sequence[int], vertical_flip: bool = False) -> None:
        super().__init__(size)
        self.vertical_flip = vertical_flip

    def transform(self, inpt: Any, params: dict[str, Any]) -> Any:
        return self._call_kernel(F.ten_crop, inpt, self.size, vertical_flip=self.vertical_flip)
