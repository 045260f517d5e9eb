"""The colour v2 transforms. They change images and videos (and the pure tensor taken as the
image); masks, boxes and labels pass through."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import ember
from ember.vision.transforms import augment as v1
from ember.vision.transforms.v2 import functional as F
from ember.vision.transforms.v2._transform import Transform, _RandomApplyTransform
from ember.vision.transforms.v2._utils import query_chw

__all__ = ["RGB", "ColorJitter", "Grayscale", "RandomAdjustSharpness", "RandomAutocontrast",
           "RandomChannelPermutation", "RandomEqualize", "RandomGrayscale", "RandomInvert",
           "RandomPhotometricDistort", "RandomPosterize", "RandomSolarize"]

Range = float | Sequence[float]


def _draw(span: tuple[float, float] | None) -> float | None:
    return None if span is None else v1._uniform(span[0], span[1], None)


class ColorJitter(Transform):
    """Random brightness, contrast, saturation and hue changes in a random order; as
    torchvision's v2, the order is drawn first and then the four factors.

    Example:
        >>> ColorJitter(0.4, 0.4, 0.4, 0.1)(ember.rand(3, 4, 4)).shape
        ember.Size([3, 4, 4])
    """

    def __init__(self, brightness: Range | None = None, contrast: Range | None = None,
                 saturation: Range | None = None, hue: Range | None = None) -> None:
        super().__init__()
        self.brightness = v1._range("brightness", brightness or 0)
        self.contrast = v1._range("contrast", contrast or 0)
        self.saturation = v1._range("saturation", saturation or 0)
        self.hue = v1._range("hue", hue or 0, center=0.0, bound=(-0.5, 0.5), clip_first=False)

    def make_params(self, flat_inputs: list) -> dict[str, Any]:
        order = ember.randperm(4).tolist()
        factors = [_draw(s) for s in (self.brightness, self.contrast, self.saturation,
                                      self.hue)]
        return {"order": order, "factors": factors}

    def transform(self, inpt: Any, params: dict[str, Any]) -> Any:
        fns = (F.adjust_brightness, F.adjust_contrast, F.adjust_saturation, F.adjust_hue)
        for k in params["order"]:
            if params["factors"][k] is not None:
                inpt = self._call_kernel(fns[k], inpt, params["factors"][k])
        return inpt


class RandomPhotometricDistort(Transform):
    """SSD's photometric distortion: brightness, contrast (before or after the rest),
    saturation and hue changes and a channel shuffle, each with probability ``p``.

    Example:
        >>> RandomPhotometricDistort(p=1.0)(ember.rand(3, 4, 4)).shape
        ember.Size([3, 4, 4])
    """

    def __init__(self, brightness: tuple[float, float] = (0.875, 1.125),
                 contrast: tuple[float, float] = (0.5, 1.5),
                 saturation: tuple[float, float] = (0.5, 1.5),
                 hue: tuple[float, float] = (-0.05, 0.05), p: float = 0.5) -> None:
        super().__init__()
        self.brightness = v1._range("brightness", brightness)
        self.contrast = v1._range("contrast", contrast)
        self.hue = v1._range("hue", hue, center=0.0, bound=(-0.5, 0.5), clip_first=False)
        self.saturation = v1._range("saturation", saturation)
        self.p = p

    def make_params(self, flat_inputs: list) -> dict[str, Any]:
        channels = query_chw(flat_inputs)[0]
        params = {name: _draw(getattr(self, name)) if ember.rand(1).item() < self.p else None
                  for name in ("brightness", "contrast", "saturation", "hue")}
        params["contrast_before"] = ember.rand(()).item() < 0.5
        params["permutation"] = ember.randperm(channels).tolist() \
            if ember.rand(1).item() < self.p else None
        return params

    def transform(self, inpt: Any, params: dict[str, Any]) -> Any:
        if params["brightness"] is not None:
            inpt = self._call_kernel(F.adjust_brightness, inpt, params["brightness"])
        if params["contrast"] is not None and params["contrast_before"]:
            inpt = self._call_kernel(F.adjust_contrast, inpt, params["contrast"])
        if params["saturation"] is not None:
            inpt = self._call_kernel(F.adjust_saturation, inpt, params["saturation"])
        if params["hue"] is not None:
            inpt = self._call_kernel(F.adjust_hue, inpt, params["hue"])
        if params["contrast"] is not None and not params["contrast_before"]:
            inpt = self._call_kernel(F.adjust_contrast, inpt, params["contrast"])
        if params["permutation"] is not None:
            inpt = self._call_kernel(F.permute_channels, inpt, params["permutation"])
        return inpt


class Grayscale(Transform):
    """Converts to grayscale with 1 or 3 channels.

    Example:
        >>> Grayscale()(ember.rand(3, 2, 2)).shape
        ember.Size([1, 2, 2])
    """

    def __init__(self, num_output_channels: int = 1) -> None:
        super().__init__()
        self.num_output_channels = num_output_channels

    def transform(self, inpt: Any, params: dict[str, Any]) -> Any:
        return self._call_kernel(F.rgb_to_grayscale, inpt, self.num_output_channels)


class RGB(Transform):
    """Makes one-channel images three-channel ones (three-channel images pass unchanged).

    Example:
        >>> RGB()(ember.rand(1, 2, 2)).shape
        ember.Size([3, 2, 2])
    """

    def transform(self, inpt: Any, params: dict[str, Any]) -> Any:
        return self._call_kernel(F.grayscale_to_rgb, inpt)


class RandomGrayscale(_RandomApplyTransform):
    """Grayscale, keeping the number of channels, with probability ``p``.

    Example:
        >>> RandomGrayscale(p=1.0)(ember.rand(3, 2, 2)).shape
        ember.Size([3, 2, 2])
    """

    def __init__(self, p: float = 0.1) -> None:
        super().__init__(p=p)

    def make_params(self, flat_inputs: list) -> dict[str, Any]:
        return {"channels": query_chw(flat_inputs)[0]}

    def transform(self, inpt: Any, params: dict[str, Any]) -> Any:
        return self._call_kernel(F.rgb_to_grayscale, inpt, params["channels"])


class RandomChannelPermutation(Transform):
    """Shuffles the channels of images and videos (one permutation per call).

    Example:
        >>> out = RandomChannelPermutation()(ember.arange(3.0).reshape(3, 1, 1))
        >>> sorted(out.flatten().tolist())
        [0.0, 1.0, 2.0]
    """

    def make_params(self, flat_inputs: list) -> dict[str, Any]:
        return {"permutation": ember.randperm(query_chw(flat_inputs)[0]).tolist()}

    def transform(self, inpt: Any, params: dict[str, Any]) -> Any:
        return self._call_kernel(F.permute_channels, inpt, params["permutation"])


class _RandomPointOp(_RandomApplyTransform):
    """A colour function applied with probability ``p`` with the arguments ``_args``."""

    _functional: Any
    _args: tuple[str, ...] = ()

    def transform(self, inpt: Any, params: dict[str, Any]) -> Any:
        return self._call_kernel(type(self)._functional, inpt,
                                 *(getattr(self, a) for a in self._args))


class RandomInvert(_RandomPointOp):
    """Inverts the colours with probability ``p``.

    Example:
        >>> RandomInvert(p=1.0)(ember.tensor([[[0.25]]])).tolist()
        [[[0.75]]]
    """

    _functional = staticmethod(F.invert)


class RandomAutocontrast(_RandomPointOp):
    """Maximizes the contrast with probability ``p``."""

    _functional = staticmethod(F.autocontrast)


class RandomEqualize(_RandomPointOp):
    """Equalizes the histogram with probability ``p``."""

    _functional = staticmethod(F.equalize)


class RandomPosterize(_RandomPointOp):
    """Keeps ``bits`` bits per channel with probability ``p``."""

    _functional, _args = staticmethod(F.posterize), ("bits",)

    def __init__(self, bits: int, p: float = 0.5) -> None:
        super().__init__(p=p)
        self.bits = bits


class RandomSolarize(_RandomPointOp):
    """Inverts the values at or above ``threshold`` with probability ``p``."""

    _functional, _args = staticmethod(F.solarize), ("threshold",)

    def __init__(self, threshold: float, p: float = 0.5) -> None:
        super().__init__(p=p)
        self.threshold = threshold


class RandomAdjustSharpness(_RandomPointOp):
    """Adjusts the sharpness by ``sharpness_factor`` with probability ``p``."""

    _functional, _args = staticmethod(F.adjust_sharpness), ("sharpness_factor",)

    def __init__(self, sharpness_factor: float, p: float = 0.5) -> None:
        super().__init__(p=p)
        self.sharpness_factor = sharpness_factor
