"""Random affine warps and the automatic augmentation policies that pick one operation (or a
few) per image: ``RandomAffine``, ``RandAugment`` and ``TrivialAugmentWide``, with
torchvision's operation spaces and magnitudes (and the operations that ``AutoAugment`` and
``AugMix`` share with them)."""

from __future__ import annotations

import math
import numbers
from collections.abc import Sequence
from typing import Any

import numpy as np

import ember
from ember.errors import ArgumentError
from ember.tensor import Tensor
from ember.vision.transforms import functional as TF
from ember.vision.transforms._pil import accepts_pil_in_rgb, is_pil_image
from ember.vision.transforms.augment import _Random, _two, _uniform
from ember.vision.transforms.basic import _hw
from ember.vision.transforms.functional import Image, InterpolationMode

__all__ = ["RandAugment", "RandomAffine", "TrivialAugmentWide"]


def _span(name: str, value: float | Sequence[float], count: int = 2) -> list[float]:
    """A number ``v`` as ``[-v, v]``; a sequence as given (``count`` values), as floats (a
    list, as torchvision's ``_setup_angle``)."""
    if isinstance(value, numbers.Number):
        if value < 0:
            raise ArgumentError(f"RandomAffine: if {name} is a single number, it must be "
                                f"positive, got {value}")
        return [-float(value), float(value)]
    if len(value) not in (2, count):
        raise ArgumentError(f"RandomAffine: {name} should be a number or a sequence of 2"
                            f"{' or 4' if count == 4 else ''} values, got {value}")
    return [float(v) for v in value]


class RandomAffine(_Random):
    """A random affine warp: rotation from ``degrees``, translation up to ``translate =
    (fx, fy)`` of the width and height, ``scale`` from ``(min, max)`` and shear from
    ``shear`` (``s``: x in ``(-s, s)``; two values: x range; four: x and y ranges).

    Example:
        >>> RandomAffine(15, translate=(0.1, 0.1), scale=(0.9, 1.1))(ember.rand(3, 8, 8)).shape
        ember.Size([3, 8, 8])
    """

    def __init__(self, degrees: float | Sequence[float],
                 translate: Sequence[float] | None = None,
                 scale: Sequence[float] | None = None,
                 shear: float | Sequence[float] | None = None,
                 interpolation: InterpolationMode = InterpolationMode.NEAREST,
                 fill: float | Sequence[float] = 0, center: Sequence[float] | None = None,
                 generator: ember.Generator | None = None) -> None:
        self.degrees = _span("degrees", degrees)
        if translate is not None and not all(0.0 <= t <= 1.0 for t in
                                             _two("RandomAffine", "translate", translate)):
            raise ArgumentError(f"RandomAffine: translation values should be between 0 and 1, "
                                f"got {translate}")
        if scale is not None and not all(s > 0 for s in _two("RandomAffine", "scale", scale)):
            raise ArgumentError(f"RandomAffine: scale values should be positive, got {scale}")
        self.translate, self.scale = translate, scale
        self.shear = None if shear is None else _span("shear", shear, count=4)
        self.interpolation, self.fill = InterpolationMode(interpolation), fill
        self.center, self.generator = center, generator

    def __repr__(self) -> str:  # (torchvision's: the arguments left at their defaults unsaid)
        shown = [f"degrees={self.degrees}"]
        shown += [f"{k}={v}" for k, v in (("translate", self.translate), ("scale", self.scale),
                                          ("shear", self.shear))
                  if v is not None]
        if self.interpolation is not InterpolationMode.NEAREST:
            shown.append(f"interpolation={self.interpolation.value}")
        if self.fill != 0:
            shown.append(f"fill={self.fill}")
        if self.center is not None:
            shown.append(f"center={self.center}")
        return f"{type(self).__name__}({', '.join(shown)})"

    @staticmethod
    def get_params(degrees: Sequence[float], translate: Sequence[float] | None,
                   scale_ranges: Sequence[float] | None, shears: Sequence[float] | None,
                   img_size: Sequence[int], generator: ember.Generator | None = None
                   ) -> tuple[float, tuple[int, int], float, tuple[float, float]]:
        """A random ``(angle, (dx, dy), scale, (shear_x, shear_y))``; ``img_size`` is
        ``(width, height)``."""
        angle = _uniform(degrees[0], degrees[1], generator)
        dx = dy = 0
        if translate is not None:
            max_dx, max_dy = translate[0] * img_size[0], translate[1] * img_size[1]
            dx = int(round(_uniform(-max_dx, max_dx, generator)))
            dy = int(round(_uniform(-max_dy, max_dy, generator)))
        scale = 1.0 if scale_ranges is None else \
            _uniform(scale_ranges[0], scale_ranges[1], generator)
        shear_x = shear_y = 0.0
        if shears is not None:
            shear_x = _uniform(shears[0], shears[1], generator)
            if len(shears) == 4:
                shear_y = _uniform(shears[2], shears[3], generator)
        return angle, (dx, dy), scale, (shear_x, shear_y)

    # a PIL image goes to the function, which hands it to Pillow as torchvision does
    def __call__(self, img: Image) -> Image:
        h, w = _hw(img)
        angle, shift, scale, shear = self.get_params(self.degrees, self.translate, self.scale,
                                                     self.shear, (w, h), self.generator)
        return TF.affine(img, angle, shift, scale, shear, self.interpolation, self.fill,
                         self.center)


def _apply(img: Image, op: str, magnitude: float, interpolation: InterpolationMode,
           fill: Sequence[float] | None) -> Image:
    """One operation of the policies' space, at ``magnitude``."""
    if op in ("ShearX", "ShearY"):
        angle = math.degrees(math.atan(magnitude))
        shear = (angle, 0.0) if op == "ShearX" else (0.0, angle)
        return TF.affine(img, 0.0, (0, 0), 1.0, shear, interpolation, fill, center=(0, 0))
    if op in ("TranslateX", "TranslateY"):
        shift = (int(magnitude), 0) if op == "TranslateX" else (0, int(magnitude))
        return TF.affine(img, 0.0, shift, 1.0, (0.0, 0.0), interpolation, fill)
    if op == "Rotate":
        return TF.rotate(img, magnitude, interpolation, fill=fill)
    enhance = {"Brightness": TF.adjust_brightness, "Color": TF.adjust_saturation,
               "Contrast": TF.adjust_contrast, "Sharpness": TF.adjust_sharpness}
    if op in enhance:
        return enhance[op](img, 1.0 + magnitude)
    if op == "Posterize":
        return TF.posterize(img, int(magnitude))
    if op == "Solarize":
        return TF.solarize(img, magnitude)
    if op == "AutoContrast":
        return TF.autocontrast(img)
    if op == "Equalize":
        return TF.equalize(img)
    if op == "Invert":
        return TF.invert(img)
    return img  # Identity


def _space(bins: int, shear: float, translate: tuple[float, float], rotate: float,
           enhance: float, posterize_steps: int) -> dict[str, tuple[np.ndarray, bool]]:
    """The operations, their magnitude bins and whether the sign is random. The bins are
    float32 as torchvision's (``torch.linspace``): TrivialAugmentWide's translation bin 15
    of 31 is 15.999999 there, 15 pixels once truncated, where float64 gives 16."""

    def spaced(start: float, end: float) -> np.ndarray:
        return ember.linspace(start, end, bins, dtype=ember.float32).numpy()

    steps = np.arange(bins, dtype=np.float32) / np.float32((bins - 1) / posterize_steps)
    return {"Identity": (np.zeros(()), False),
            "ShearX": (spaced(0.0, shear), True),
            "ShearY": (spaced(0.0, shear), True),
            "TranslateX": (spaced(0.0, translate[0]), True),
            "TranslateY": (spaced(0.0, translate[1]), True),
            "Rotate": (spaced(0.0, rotate), True),
            "Brightness": (spaced(0.0, enhance), True),
            "Color": (spaced(0.0, enhance), True),
            "Contrast": (spaced(0.0, enhance), True),
            "Sharpness": (spaced(0.0, enhance), True),
            "Posterize": (8 - np.round(steps), False),
            "Solarize": (spaced(255.0, 0.0), False),
            "AutoContrast": (np.zeros(()), False),
            "Equalize": (np.zeros(()), False)}


def _fills(img: Image, fill: float | Sequence[float] | None) -> list[float] | None:
    """A fill as one value per channel (a number repeated; None kept), as torchvision's
    transforms pass it for tensors."""
    if fill is None or is_pil_image(img):  # Pillow takes a number for every band
        return fill
    channels = img.shape[-3] if isinstance(img, Tensor) else (img.shape[2] if img.ndim == 3
                                                               else 1)
    return [float(fill)] * channels if isinstance(fill, numbers.Number) else \
        [float(f) for f in fill]


def _check_uint8(op: str, img: Image) -> None:
    dtype = img.dtype if isinstance(img, Tensor) else ember.from_numpy(np.asarray(img)).dtype
    if dtype is not ember.uint8:
        raise TypeError(f"{op}: expected a uint8 image (as torchvision's policies do), got "
                        f"{dtype}. Hint: apply it before ToTensor, or convert with "
                        "(img * 255).to(ember.uint8)")


def _run_policy(policy: Any, img: Image) -> Image:
    """The operations ``policy._ops`` draws, applied in turn to the uint8 ``img``."""
    _check_uint8(type(policy).__name__, img)
    fill = _fills(img, policy.fill)
    for op, magnitude in policy._ops(img):
        img = _apply(img, op, magnitude, policy.interpolation, fill)
    return img


class RandAugment(_Random):
    """``num_ops`` operations drawn uniformly from torchvision's RandAugment space, each at
    bin ``magnitude`` of ``num_magnitude_bins`` with a random sign where it has one. Takes
    uint8 images.

    Example:
        >>> img = ember.randint(0, 256, (3, 16, 16), dtype=ember.uint8)
        >>> RandAugment()(img).shape
        ember.Size([3, 16, 16])
    """

    def __init__(self, num_ops: int = 2, magnitude: int = 9, num_magnitude_bins: int = 31,
                 interpolation: InterpolationMode = InterpolationMode.NEAREST,
                 fill: float | Sequence[float] | None = None,
                 generator: ember.Generator | None = None) -> None:
        if not 0 <= magnitude < num_magnitude_bins:
            raise ArgumentError(f"RandAugment: magnitude must be in [0, {num_magnitude_bins}), "
                                f"got {magnitude}")
        self.num_ops, self.magnitude, self.num_magnitude_bins = num_ops, magnitude, \
            num_magnitude_bins
        self.interpolation, self.fill = InterpolationMode(interpolation), fill
        self.generator = generator

    def _ops(self, img: Image) -> list[tuple[str, float]]:
        """The operations of one call with their signed magnitudes (all the draws)."""
        h, w = _hw(img)
        space = _space(self.num_magnitude_bins, 0.3, (150.0 / 331.0 * w, 150.0 / 331.0 * h),
                       30.0, 0.9, 4)
        names = list(space)
        ops = []
        for _ in range(self.num_ops):
            op = names[int(ember.randint(0, len(names), (1,), generator=self.generator))]
            bins, signed = space[op]
            magnitude = float(bins[self.magnitude]) if bins.ndim else 0.0
            if signed and int(ember.randint(0, 2, (1,), generator=self.generator)):
                magnitude = -magnitude
            ops.append((op, magnitude))
        return ops

    @accepts_pil_in_rgb
    def __call__(self, img: Image) -> Image:
        return _run_policy(self, img)


class TrivialAugmentWide(_Random):
    """One operation drawn uniformly from torchvision's wide space, at a uniformly drawn
    magnitude bin with a random sign where it has one. Takes uint8 images.

    Example:
        >>> img = ember.randint(0, 256, (3, 16, 16), dtype=ember.uint8)
        >>> TrivialAugmentWide()(img).shape
        ember.Size([3, 16, 16])
    """

    def __init__(self, num_magnitude_bins: int = 31,
                 interpolation: InterpolationMode = InterpolationMode.NEAREST,
                 fill: float | Sequence[float] | None = None,
                 generator: ember.Generator | None = None) -> None:
        self.num_magnitude_bins = num_magnitude_bins
        self.interpolation, self.fill = InterpolationMode(interpolation), fill
        self.generator = generator

    def _ops(self, img: Image) -> list[tuple[str, float]]:
        """The operation of one call with its signed magnitude (all the draws)."""
        space = _space(self.num_magnitude_bins, 0.99, (32.0, 32.0), 135.0, 0.99, 6)
        names = list(space)
        op = names[int(ember.randint(0, len(names), (1,), generator=self.generator))]
        bins, signed = space[op]
        magnitude = float(bins[int(ember.randint(0, len(bins), (1,), generator=self.generator))]
                          ) if bins.ndim else 0.0
        if signed and int(ember.randint(0, 2, (1,), generator=self.generator)):
            magnitude = -magnitude
        return [(op, magnitude)]

    @accepts_pil_in_rgb
    def __call__(self, img: Image) -> Image:
        _check_uint8("TrivialAugmentWide", img)
        ((op, magnitude),) = self._ops(img)
        return _apply(img, op, magnitude, self.interpolation, _fills(img, self.fill))
