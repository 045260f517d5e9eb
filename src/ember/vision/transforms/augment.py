"""Resizing and augmentation transforms under torchvision's names, over the functions of
:mod:`ember.vision.transforms.functional`. Random choices draw from Ember's default
generator, or from the ``generator`` a transform is given."""

from __future__ import annotations

import math
import numbers
from collections.abc import Callable, Sequence
from functools import partial
from typing import Any

import ember
from ember.errors import ArgumentError, ArgumentTypeError
from ember.tensor import Tensor
from ember.vision.transforms import functional as TF
from ember.vision.transforms._pil import accepts_pil, colours_pil
from ember.vision.transforms.basic import _hw, _listing, _size_pair
from ember.vision.transforms.functional import Image, InterpolationMode

__all__ = ["ColorJitter", "GaussianBlur", "Grayscale", "RandomAdjustSharpness", "RandomApply",
           "RandomAutocontrast", "RandomChoice", "RandomEqualize", "RandomErasing",
           "RandomGrayscale", "RandomInvert", "RandomOrder", "RandomPosterize",
           "RandomResizedCrop", "RandomRotation", "RandomSolarize", "Resize"]


def _uniform(low: float, high: float, generator: ember.Generator | None) -> float:
    return float(ember.empty(1).uniform_(low, high, generator=generator).item())


def _two(op: str, name: str, value: Sequence[Any]) -> Sequence[Any]:
    """``value`` if it holds two values (a range, or a per-axis pair), as torchvision checks."""
    if not isinstance(value, Sequence) or isinstance(value, str):
        raise ArgumentTypeError(f"{op}: {name} should be a sequence of 2 values, got "
                                f"{type(value).__name__}")
    if len(value) != 2:
        raise ArgumentError(f"{op}: if {name} is a sequence, it must be of len 2, got {value!r}")
    return value


def _coin(p: float, generator: ember.Generator | None) -> bool:
    return ember.rand(1, generator=generator).item() < p


class _Random:
    """A transform with a generator (Ember's default one unless given)."""

    generator: ember.Generator | None = None

    def __repr__(self) -> str:
        shown = ", ".join(f"{k}={v}" for k, v in vars(self).items() if k != "generator")
        return f"{type(self).__name__}({shown})"


class Resize(_Random):
    """:func:`~ember.vision.transforms.functional.resize` to ``size``.

    Example:
        >>> Resize(8)(ember.zeros(3, 16, 32)).shape
        ember.Size([3, 8, 16])
    """

    def __init__(self, size: int | Sequence[int],
                 interpolation: InterpolationMode = InterpolationMode.BILINEAR,
                 max_size: int | None = None, antialias: bool | None = True) -> None:
        TF.check_size(size)
        self.size, self.interpolation = size, InterpolationMode(interpolation)
        self.max_size, self.antialias = max_size, antialias

    def __call__(self, img: Image) -> Image:
        return TF.resize(img, self.size, self.interpolation, self.max_size, self.antialias)

    def __repr__(self) -> str:
        return (f"{type(self).__name__}(size={self.size}, interpolation="
                f"{self.interpolation.value}, max_size={self.max_size}, "
                f"antialias={self.antialias})")


class RandomResizedCrop(_Random):
    """A random window covering ``scale`` of the area with an aspect ratio in ``ratio``
    (log-uniform), resized to ``size``; after ten misses, the central window of the nearest
    allowed ratio (torchvision's procedure).

    Example:
        >>> RandomResizedCrop(8)(ember.zeros(3, 20, 30)).shape
        ember.Size([3, 8, 8])
    """

    def __init__(self, size: int | Sequence[int], scale: tuple[float, float] = (0.08, 1.0),
                 ratio: tuple[float, float] = (3 / 4, 4 / 3),
                 interpolation: InterpolationMode = InterpolationMode.BILINEAR,
                 antialias: bool | None = True, generator: ember.Generator | None = None):
        _two("RandomResizedCrop", "scale", scale)
        _two("RandomResizedCrop", "ratio", ratio)
        if scale[0] > scale[1] or ratio[0] > ratio[1]:
            raise ArgumentError(f"RandomResizedCrop: scale and ratio should be of kind (min, max), "
                                f"got scale={scale}, ratio={ratio}")
        self.size = _size_pair(size, "RandomResizedCrop")
        self.scale, self.ratio = scale, ratio
        self.interpolation, self.antialias = InterpolationMode(interpolation), antialias
        self.generator = generator

    def __repr__(self) -> str:
        scale, ratio = (tuple(round(v, 4) for v in r) for r in (self.scale, self.ratio))
        return (f"{type(self).__name__}(size={self.size}, scale={scale}, ratio={ratio}, "
                f"interpolation={self.interpolation.value}, antialias={self.antialias})")

    @staticmethod
    def get_params(img: Image, scale: Sequence[float], ratio: Sequence[float],
                   generator: ember.Generator | None = None) -> tuple[int, int, int, int]:
        """A random ``(top, left, height, width)`` window."""
        height, width = _hw(img)
        area = height * width
        log_ratio = (math.log(ratio[0]), math.log(ratio[1]))
        for _ in range(10):
            target = area * _uniform(scale[0], scale[1], generator)
            aspect = math.exp(_uniform(log_ratio[0], log_ratio[1], generator))
            w = int(round(math.sqrt(target * aspect)))
            h = int(round(math.sqrt(target / aspect)))
            if 0 < w <= width and 0 < h <= height:
                i = int(ember.randint(0, height - h + 1, (1,), generator=generator).item())
                j = int(ember.randint(0, width - w + 1, (1,), generator=generator).item())
                return i, j, h, w
        in_ratio = width / height
        if in_ratio < min(ratio):
            w, h = width, int(round(width / min(ratio)))
        elif in_ratio > max(ratio):
            h, w = height, int(round(height * max(ratio)))
        else:
            w, h = width, height
        return (height - h) // 2, (width - w) // 2, h, w

    def __call__(self, img: Image) -> Image:
        i, j, h, w = self.get_params(img, self.scale, self.ratio, self.generator)
        return TF.resized_crop(img, i, j, h, w, self.size, self.interpolation,
                               antialias=self.antialias)


def _range(name: str, value: float | Sequence[float], center: float = 1.0,
           bound: tuple[float, float] = (0, math.inf), clip_first: bool = True
           ) -> tuple[float, float] | None:
    """torchvision's jitter ranges: a number ``v`` means ``[center - v, center + v]``."""
    if isinstance(value, numbers.Number):
        if value < 0:
            raise ArgumentError(f"ColorJitter: if {name} is a single number, it must be "
                                f"non negative, got {value}")
        value = [center - float(value), center + float(value)]
        if clip_first:
            value[0] = max(value[0], 0.0)
    elif not (isinstance(value, Sequence) and len(value) == 2):
        raise TypeError(f"ColorJitter: {name} should be a single number or a list/tuple with "
                        f"length 2, got {value!r}")
    if not bound[0] <= value[0] <= value[1] <= bound[1]:
        raise ArgumentError(f"ColorJitter: {name} values should be between {bound}, got {value}")
    return None if value[0] == value[1] == center else (float(value[0]), float(value[1]))


class ColorJitter(_Random):
    """Random brightness, contrast, saturation and hue changes, applied in a random order.

    Example:
        >>> ColorJitter(0.4, 0.4, 0.4, 0.1)(ember.rand(3, 4, 4)).shape
        ember.Size([3, 4, 4])
    """

    def __init__(self, brightness: float | Sequence[float] = 0,
                 contrast: float | Sequence[float] = 0,
                 saturation: float | Sequence[float] = 0, hue: float | Sequence[float] = 0,
                 generator: ember.Generator | None = None) -> None:
        self.brightness = _range("brightness", brightness)
        self.contrast = _range("contrast", contrast)
        self.saturation = _range("saturation", saturation)
        self.hue = _range("hue", hue, center=0.0, bound=(-0.5, 0.5), clip_first=False)
        self.generator = generator

    @staticmethod
    def get_params(brightness: tuple[float, float] | None, contrast: tuple[float, float] | None,
                   saturation: tuple[float, float] | None, hue: tuple[float, float] | None,
                   generator: ember.Generator | None = None
                   ) -> tuple[Tensor, float | None, float | None, float | None, float | None]:
        """A random order of the four adjustments and their factors (None where a range is
        None), drawn in torchvision's order."""
        fn_idx = ember.randperm(4, generator=generator)
        factors = [None if span is None else _uniform(span[0], span[1], generator)
                   for span in (brightness, contrast, saturation, hue)]
        return (fn_idx, *factors)

    @partial(colours_pil, in_rgb=True)
    def __call__(self, img: Image) -> Image:
        fn_idx, *factors = self.get_params(self.brightness, self.contrast, self.saturation,
                                           self.hue, self.generator)
        steps = (TF.adjust_brightness, TF.adjust_contrast, TF.adjust_saturation, TF.adjust_hue)
        for k in fn_idx.tolist():
            if factors[k] is not None:
                img = steps[k](img, factors[k])
        return img


class Grayscale(_Random):
    """:func:`~ember.vision.transforms.functional.rgb_to_grayscale` with 1 or 3 channels.

    Example:
        >>> Grayscale(3)(ember.rand(3, 2, 2)).shape
        ember.Size([3, 2, 2])
    """

    def __init__(self, num_output_channels: int = 1) -> None:
        self.num_output_channels = num_output_channels

    def __call__(self, img: Image) -> Image:
        return TF.rgb_to_grayscale(img, self.num_output_channels)


class RandomGrayscale(_Random):
    """Grayscale (keeping the number of channels) with probability ``p``.

    Example:
        >>> RandomGrayscale(1.0)(ember.rand(3, 2, 2)).shape
        ember.Size([3, 2, 2])
    """

    def __init__(self, p: float = 0.1, generator: ember.Generator | None = None) -> None:
        self.p, self.generator = p, generator

    def __call__(self, img: Image) -> Image:
        channels = TF.get_dimensions(img)[0]
        return TF.rgb_to_grayscale(img, channels) if _coin(self.p, self.generator) else img


class GaussianBlur(_Random):
    """A Gaussian blur with ``sigma`` drawn uniformly from ``sigma = (min, max)``.

    Example:
        >>> GaussianBlur(3, (0.1, 2.0))(ember.rand(3, 5, 5)).shape
        ember.Size([3, 5, 5])
    """

    def __init__(self, kernel_size: int | Sequence[int],
                 sigma: float | tuple[float, float] = (0.1, 2.0),
                 generator: ember.Generator | None = None) -> None:
        sizes = kernel_size  # (a pair, as torchvision's _setup_size makes it)
        if isinstance(kernel_size, numbers.Number):
            sizes = (kernel_size, kernel_size)
        elif isinstance(kernel_size, Sequence) and len(kernel_size) == 1:
            sizes = (kernel_size[0], kernel_size[0])
        _two("GaussianBlur", "kernel_size", sizes)
        if not all(isinstance(k, numbers.Integral) and k > 0 and k % 2 == 1 for k in sizes):
            raise ArgumentError(f"GaussianBlur: kernel_size should be odd and positive integers, "
                                f"got {kernel_size}")
        self.kernel_size = sizes
        self.sigma = (float(sigma), float(sigma)) if isinstance(sigma, numbers.Number) \
            else tuple(float(v) for v in _two("GaussianBlur", "sigma", sigma))
        if not 0 < self.sigma[0] <= self.sigma[1]:
            raise ArgumentError(f"GaussianBlur: sigma values should be positive and of the form "
                                f"(min, max), got {sigma}")
        self.generator = generator

    @staticmethod
    def get_params(sigma_min: float, sigma_max: float,
                   generator: ember.Generator | None = None) -> float:
        """A standard deviation drawn uniformly from ``[sigma_min, sigma_max)``."""
        return _uniform(sigma_min, sigma_max, generator)

    @accepts_pil
    def __call__(self, img: Image) -> Image:
        sigma = self.get_params(self.sigma[0], self.sigma[1], self.generator)
        return TF.gaussian_blur(img, self.kernel_size, [sigma, sigma])


class RandomRotation(_Random):
    """A rotation by an angle drawn uniformly from ``degrees`` (a number ``d``: ``[-d, d]``).

    Example:
        >>> RandomRotation(30)(ember.rand(3, 5, 5)).shape
        ember.Size([3, 5, 5])
    """

    def __init__(self, degrees: float | Sequence[float],
                 interpolation: InterpolationMode = InterpolationMode.NEAREST,
                 expand: bool = False, center: Sequence[float] | None = None,
                 fill: float | Sequence[float] = 0,
                 generator: ember.Generator | None = None) -> None:
        if isinstance(degrees, numbers.Number):
            if degrees < 0:
                raise ArgumentError("RandomRotation: if degrees is a single number, it must be "
                                    f"positive, got {degrees}")
            degrees = (-float(degrees), float(degrees))
        self.degrees = [float(d) for d in _two("RandomRotation", "degrees", degrees)]
        self.interpolation, self.expand = InterpolationMode(interpolation), expand
        self.center, self.fill, self.generator = center, fill, generator

    def __repr__(self) -> str:
        shown = (f"degrees={self.degrees}, interpolation={self.interpolation.value}, "
                 f"expand={self.expand}")
        shown += "".join(f", {k}={v}" for k, v in (("center", self.center), ("fill", self.fill))
                         if v is not None)
        return f"{type(self).__name__}({shown})"

    @staticmethod
    def get_params(degrees: Sequence[float], generator: ember.Generator | None = None) -> float:
        """An angle drawn uniformly from ``[degrees[0], degrees[1])``."""
        return _uniform(float(degrees[0]), float(degrees[1]), generator)

    # a PIL image goes to the function, which hands it to Pillow as torchvision does
    def __call__(self, img: Image) -> Image:
        angle = self.get_params(self.degrees, self.generator)
        return TF.rotate(img, angle, self.interpolation, self.expand, self.center, self.fill)


class RandomErasing(_Random):
    """With probability ``p``, erases a random window of a tensor image covering ``scale``
    of its area with an aspect ratio in ``ratio``, filled with ``value`` (a number, one per
    channel, or ``"random"`` normal noise).

    Example:
        >>> RandomErasing(p=1.0, value=0)(ember.ones(3, 8, 8)).sum().item() < 192
        True
    """

    def __init__(self, p: float = 0.5, scale: tuple[float, float] = (0.02, 0.33),
                 ratio: tuple[float, float] = (0.3, 3.3), value: float | str | Sequence = 0,
                 inplace: bool = False, generator: ember.Generator | None = None) -> None:
        if not 0 <= p <= 1:
            raise ArgumentError(f"RandomErasing: probability should be between 0 and 1, got {p}")
        _two("RandomErasing", "scale", scale)
        _two("RandomErasing", "ratio", ratio)
        if scale[0] > scale[1] or ratio[0] > ratio[1]:
            raise ArgumentError("RandomErasing: scale and ratio should be of kind (min, max)")
        if scale[0] < 0 or scale[1] > 1:
            raise ArgumentError(f"RandomErasing: scale should be between 0 and 1 (a fraction of "
                                f"the image's area), got {scale}")
        if isinstance(value, str) and value != "random":
            raise ArgumentError(f"RandomErasing: if value is str, it should be 'random', got "
                                f"{value!r}")
        self.p, self.scale, self.ratio, self.value = p, scale, ratio, value
        self.inplace, self.generator = inplace, generator

    @staticmethod
    def get_params(img: Tensor, scale: Sequence[float], ratio: Sequence[float],
                   value: Sequence[float] | None = None,
                   generator: ember.Generator | None = None
                   ) -> tuple[int, int, int, int, Tensor]:
        """A random window ``(i, j, h, w)`` and what fills it (``value`` per channel, or
        standard normal noise when None); after ten misses, the whole image and the image
        itself, as torchvision's."""
        c, height, width = img.shape[-3:]
        area = height * width
        log_ratio = (math.log(ratio[0]), math.log(ratio[1]))
        for _ in range(10):
            target = area * _uniform(scale[0], scale[1], generator)
            aspect = math.exp(_uniform(log_ratio[0], log_ratio[1], generator))
            h = int(round(math.sqrt(target * aspect)))
            w = int(round(math.sqrt(target / aspect)))
            if not (h < height and w < width):
                continue
            if value is None:
                v = ember.randn(c, h, w, generator=generator)
            else:
                v = ember.tensor([float(x) for x in value]).reshape(-1, 1, 1)
            i = int(ember.randint(0, height - h + 1, (1,), generator=generator).item())
            j = int(ember.randint(0, width - w + 1, (1,), generator=generator).item())
            return i, j, h, w, v
        return 0, 0, height, width, img

    def __call__(self, img: Tensor) -> Tensor:
        if not isinstance(img, Tensor):
            raise TypeError("RandomErasing: img should be a tensor image; apply ToTensor first")
        if not _coin(self.p, self.generator):
            return img
        c = img.shape[-3]
        value = None if self.value == "random" else \
            [self.value] if isinstance(self.value, numbers.Number) else list(self.value)
        if value is not None and len(value) not in (1, c):
            raise ArgumentError(f"RandomErasing: if value is a sequence, it should have either a "
                                f"single value or {c} (number of input channels), got "
                                f"{self.value}")
        i, j, h, w, v = self.get_params(img, self.scale, self.ratio, value, self.generator)
        return TF.erase(img, i, j, h, w, v, self.inplace)


class _RandomApplied(_Random):
    """A functional op applied with probability ``p``; its arguments are attributes under
    torchvision's ``names`` (``RandomPosterize(3).bits``)."""

    fn: Callable[..., Image]
    names: tuple[str, ...] = ()

    def __init__(self, *args: Any, p: float = 0.5,
                 generator: ember.Generator | None = None) -> None:
        for name, value in zip(self.names, args, strict=True):
            setattr(self, name, value)
        self.p, self.generator = p, generator

    @colours_pil
    def __call__(self, img: Image) -> Image:
        if not _coin(self.p, self.generator):
            return img
        return type(self).fn(img, *(getattr(self, name) for name in self.names))

    def __repr__(self) -> str:  # (torchvision's spelling: no space after these commas)
        shown = "".join(f"{name}={getattr(self, name)}," for name in self.names)
        return f"{type(self).__name__}({shown}p={self.p})"


class RandomInvert(_RandomApplied):
    """Inverts the image with probability ``p``."""

    fn = staticmethod(TF.invert)

    def __init__(self, p: float = 0.5, generator: ember.Generator | None = None) -> None:
        super().__init__(p=p, generator=generator)


class RandomPosterize(_RandomApplied):
    """Posterizes a uint8 image to ``bits`` with probability ``p``."""

    fn = staticmethod(TF.posterize)
    names = ("bits",)

    def __init__(self, bits: int, p: float = 0.5,
                 generator: ember.Generator | None = None) -> None:
        super().__init__(bits, p=p, generator=generator)


class RandomSolarize(_RandomApplied):
    """Solarizes above ``threshold`` with probability ``p``."""

    fn = staticmethod(TF.solarize)
    names = ("threshold",)

    def __init__(self, threshold: float, p: float = 0.5,
                 generator: ember.Generator | None = None) -> None:
        super().__init__(threshold, p=p, generator=generator)


class RandomAdjustSharpness(_RandomApplied):
    """Adjusts the sharpness by ``sharpness_factor`` with probability ``p``."""

    fn = staticmethod(TF.adjust_sharpness)
    names = ("sharpness_factor",)

    def __init__(self, sharpness_factor: float, p: float = 0.5,
                 generator: ember.Generator | None = None) -> None:
        super().__init__(sharpness_factor, p=p, generator=generator)


class RandomAutocontrast(_RandomApplied):
    """Maximizes the contrast with probability ``p``."""

    fn = staticmethod(TF.autocontrast)

    def __init__(self, p: float = 0.5, generator: ember.Generator | None = None) -> None:
        super().__init__(p=p, generator=generator)


class RandomEqualize(_RandomApplied):
    """Equalizes the histogram of a uint8 image with probability ``p``."""

    fn = staticmethod(TF.equalize)

    def __init__(self, p: float = 0.5, generator: ember.Generator | None = None) -> None:
        super().__init__(p=p, generator=generator)


class RandomApply(_Random):
    """Applies the list of ``transforms`` (all of them) with probability ``p``.

    Example:
        >>> RandomApply([lambda x: x + 1], p=1.0)(ember.zeros(1)).tolist()
        [1.0]
    """

    def __init__(self, transforms: Sequence[Callable], p: float = 0.5,
                 generator: ember.Generator | None = None) -> None:
        self.transforms, self.p, self.generator = list(transforms), p, generator

    def __call__(self, img: Any) -> Any:
        if not _coin(self.p, self.generator):
            return img
        for t in self.transforms:
            img = t(img)
        return img

    def __repr__(self) -> str:
        return _listing(self, self.transforms, f"p={self.p}")


class RandomChoice(_Random):
    """Applies one of ``transforms``, chosen with probabilities ``p`` (default uniform).

    Example:
        >>> RandomChoice([lambda x: x + 1, lambda x: x + 1])(ember.zeros(1)).tolist()
        [1.0]
    """

    def __init__(self, transforms: Sequence[Callable], p: Sequence[float] | None = None,
                 generator: ember.Generator | None = None) -> None:
        if p is not None and len(p) != len(transforms):
            raise ArgumentError(f"RandomChoice: the number of p ({len(p)}) and transforms "
                                f"({len(transforms)}) differ")
        self.transforms, self.p, self.generator = list(transforms), p, generator

    def __call__(self, img: Any) -> Any:
        weights = ember.tensor([1.0] * len(self.transforms) if self.p is None
                               else [float(w) for w in self.p])
        k = int(ember.multinomial(weights, 1, generator=self.generator).item())
        return self.transforms[k](img)

    def __repr__(self) -> str:
        return f"{_listing(self, self.transforms)}(p={self.p})"


class RandomOrder(_Random):
    """Applies ``transforms`` in a random order.

    Example:
        >>> RandomOrder([lambda x: x + 1, lambda x: x * 2])(ember.zeros(1)).item() in (1, 2)
        True
    """

    def __init__(self, transforms: Sequence[Callable],
                 generator: ember.Generator | None = None) -> None:
        self.transforms, self.generator = list(transforms), generator

    def __call__(self, img: Any) -> Any:
        for k in ember.randperm(len(self.transforms), generator=self.generator).tolist():
            img = self.transforms[k](img)
        return img

    def __repr__(self) -> str:
        return _listing(self, self.transforms)
