"""The basic image transforms under torchvision's names: composing, converting, normalizing,
padding, cropping and flipping.

Images are NumPy arrays (``(H, W)`` or ``(H, W, C)``, as a PIL image converts to) before
:class:`ToTensor`, and tensors ``(..., C, H, W)`` after it; the geometric transforms take
both. Random transforms draw from Ember's default generator, so ``ember.manual_seed`` makes
them repeat, or from the ``generator`` they are given (an Ember extension).
"""

from __future__ import annotations

import numbers
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

import ember
from ember.errors import ArgumentError, ArgumentTypeError, DTypeError, ShapeError
from ember.tensor import Tensor
from ember.vision.transforms._pil import accepts_pil, is_pil_image, native_order

__all__ = ["Compose", "ToTensor", "Normalize", "LinearTransformation", "Lambda", "Pad",
           "CenterCrop", "RandomCrop", "RandomHorizontalFlip", "RandomVerticalFlip"]

Image = np.ndarray | Tensor


def _listing(transform: object, transforms: Sequence[Callable], *head: str) -> str:
    """torchvision's repr of a transform holding ``transforms``: one a line, after ``head``."""
    inner = "".join(f"\n    {t}" for t in (*head, *transforms))
    return f"{type(transform).__name__}({inner}\n)"


class Compose:
    """Applies transforms one after the other.

    Example:
        >>> t = Compose([ToTensor(), Normalize((0.5,), (0.5,))])
        >>> t(np.zeros((2, 2), np.uint8)).shape
        ember.Size([1, 2, 2])
    """

    def __init__(self, transforms: Sequence[Callable]) -> None:
        self.transforms = list(transforms)

    def __call__(self, img: Any) -> Any:
        for t in self.transforms:
            img = t(img)
        return img

    def __repr__(self) -> str:
        return _listing(self, self.transforms)


class ToTensor:
    """An ``(H, W, C)`` or ``(H, W)`` image (NumPy array, or anything ``np.asarray`` reads,
    such as a PIL image) as a ``(C, H, W)`` tensor; uint8 values (and a PIL mode "1" image's
    bits) are scaled to [0, 1] in the default float dtype, other dtypes are kept.

    Example:
        >>> ToTensor()(np.full((2, 3), 255, np.uint8))
        tensor([[[1., 1., 1.],
                 [1., 1., 1.]]])
    """

    def __call__(self, pic: Any) -> Tensor:
        if isinstance(pic, Tensor) or not (isinstance(pic, np.ndarray)
                                           or hasattr(pic, "__array_interface__")):
            raise TypeError(f"ToTensor: pic should be PIL Image or ndarray. Got {type(pic)}")
        from_pil = not isinstance(pic, np.ndarray)
        pic = native_order(np.asarray(pic))
        if pic.ndim not in (2, 3):
            raise ArgumentError(f"ToTensor: pic should be 2/3 dimensional. Got {pic.ndim} "
                                f"dimensions.")
        chw = (pic[None] if pic.ndim == 2 else pic.transpose(2, 0, 1))
        dt = ember.get_default_dtype().np
        if pic.dtype == np.uint8:
            return ember.from_numpy(np.divide(chw, dt.type(255), dtype=dt))
        if pic.dtype == bool and from_pil:  # a PIL mode "1" image: 0.0 and 1.0, as torchvision
            return ember.from_numpy(chw.astype(dt))
        return ember.from_numpy(np.ascontiguousarray(chw))

    def __repr__(self) -> str:
        return f"{type(self).__name__}()"


class Normalize:
    """``(x - mean) / std`` per channel of a float ``(..., C, H, W)`` tensor.

    Example:
        >>> Normalize([0.5], [0.25])(ember.ones(1, 1, 2))
        tensor([[[2., 2.]]])
    """

    def __init__(self, mean: Sequence[float], std: Sequence[float], inplace: bool = False):
        self.mean, self.std, self.inplace = mean, std, inplace
        self._cache: dict = {}

    def _stats(self, dtype: ember.DType) -> tuple[Tensor, Tensor]:
        """``mean`` and ``std`` as ``(C, 1, 1)`` tensors of ``dtype``, made again only when
        the dtype or the values change (a list changed in place included)."""
        mean, std = np.asarray(self.mean, np.float64), np.asarray(self.std, np.float64)
        key = (dtype, mean.shape, std.shape, mean.tobytes(), std.tobytes())
        if key not in self._cache:
            mean = ember.as_tensor(mean, dtype=dtype)
            std = ember.as_tensor(std, dtype=dtype)
            if bool((std == 0).any()):
                raise ArgumentError(f"Normalize: std evaluated to zero after conversion to "
                                    f"{dtype}, leading to division by zero.")
            if mean.ndim == 1:
                mean = mean.reshape(-1, 1, 1)
            if std.ndim == 1:
                std = std.reshape(-1, 1, 1)
            self._cache = {key: (mean, std)}
        return self._cache[key]

    def __call__(self, tensor: Tensor) -> Tensor:
        return self._normalize(tensor, keep_shape=True)

    def _normalize(self, tensor: Tensor, keep_shape: bool) -> Tensor:
        """With ``keep_shape``, a result of another shape than ``tensor``'s (3 means for 1
        channel) is refused, as torchvision's v1 normalizes a copy in place; transforms.v2's
        broadcasts it."""
        if not isinstance(tensor, Tensor):
            raise TypeError(f"Normalize: expected a tensor, got {type(tensor).__name__}; "
                            f"apply ToTensor() first")
        if not tensor.is_floating_point():
            raise DTypeError(f"Normalize: input tensor should be a float tensor. Got "
                             f"{tensor.dtype}.")
        if tensor.ndim < 3:
            raise ArgumentError(f"Normalize: expected tensor to be a tensor image of size "
                                f"(..., C, H, W). Got tensor.size() = {tuple(tensor.shape)}")
        mean, std = self._stats(tensor.dtype)
        if keep_shape or self.inplace:
            _check_keeps_shape(tensor, mean, std)
        if self.inplace:
            return tensor.sub_(mean).div_(std)
        return (tensor - mean) / std

    def __repr__(self) -> str:
        return f"{type(self).__name__}(mean={self.mean}, std={self.std})"


def _check_keeps_shape(tensor: Tensor, mean: Tensor, std: Tensor) -> None:
    """Refuses means and stds that would give the result another shape than ``tensor``'s."""
    try:
        shape = np.broadcast_shapes(tuple(tensor.shape), tuple(mean.shape), tuple(std.shape))
    except ValueError:
        return  # (the subtraction says which dimensions do not broadcast)
    if shape != tuple(tensor.shape):
        raise ShapeError(f"Normalize: mean ({mean.numel()} values) and std ({std.numel()} "
                         f"values) would make the image of shape {tuple(tensor.shape)} one of "
                         f"shape {shape}. Hint: give one value per channel "
                         f"({tensor.shape[-3]}), or one value for all")


class LinearTransformation:
    """Flattens each ``(C, H, W)`` image, subtracts ``mean_vector`` and multiplies by the
    square ``transformation_matrix`` (as for ZCA whitening), keeping the shape.

    Example:
        >>> t = LinearTransformation(2 * ember.eye(2), ember.ones(2))
        >>> t(ember.tensor([[[1.0, 3.0]]])).tolist()
        [[[0.0, 4.0]]]
    """

    def __init__(self, transformation_matrix: Tensor, mean_vector: Tensor) -> None:
        m, mean = transformation_matrix, mean_vector
        if m.ndim != 2 or m.shape[0] != m.shape[1]:
            raise ArgumentError(f"LinearTransformation: transformation_matrix should be square, "
                                f"got a {tuple(m.shape)} matrix")
        if mean.shape[0] != m.shape[0]:
            raise ArgumentError(f"LinearTransformation: mean_vector should have the same length "
                                f"{mean.shape[0]} as any one of the dimensions of the "
                                f"transformation_matrix [{tuple(m.shape)}]")
        if m.dtype is not mean.dtype:
            raise ArgumentError(f"LinearTransformation: input tensors should have the same dtype, "
                                f"got {m.dtype} and {mean.dtype}")
        self.transformation_matrix, self.mean_vector = m, mean

    def __call__(self, tensor: Tensor) -> Tensor:
        shape = tensor.shape
        n = shape[-3] * shape[-2] * shape[-1]
        if n != self.transformation_matrix.shape[0]:
            raise ArgumentError(f"LinearTransformation: input tensor and transformation matrix "
                                f"have incompatible shape: [{shape[-3]} x {shape[-2]} x "
                                f"{shape[-1]}] != {self.transformation_matrix.shape[0]}")
        flat = tensor.reshape(-1, n) - self.mean_vector
        return (flat @ self.transformation_matrix.to(flat.dtype)).reshape(shape)

    def __repr__(self) -> str:
        return (f"{type(self).__name__}(transformation_matrix="
                f"{self.transformation_matrix.tolist()}, mean_vector={self.mean_vector.tolist()})")


class Lambda:
    """Wraps a function as a transform: ``Lambda(lambda x: x * 2)``."""

    def __init__(self, lambd: Callable) -> None:
        if not callable(lambd):
            raise TypeError(f"Lambda: argument should be callable, got {type(lambd).__name__}")
        self.lambd = lambd

    def __call__(self, img: Any) -> Any:
        return self.lambd(img)

    def __repr__(self) -> str:
        return f"{type(self).__name__}()"


def _size_pair(size: int | Sequence[int], name: str) -> tuple[int, int]:
    if isinstance(size, numbers.Number):
        return int(size), int(size)
    if len(size) == 1:
        return int(size[0]), int(size[0])
    if len(size) != 2:
        raise ArgumentError(f"{name}: please provide only two dimensions (h, w) for size, got "
                            f"{size!r}")
    return int(size[0]), int(size[1])


def _hw(img: Image, op: str = "") -> tuple[int, int]:
    where = f"{op}: " if op else ""
    if isinstance(img, (Tensor, np.ndarray)) and img.ndim < 2:
        raise ShapeError(f"{where}expected an image (..., H, W), got shape {tuple(img.shape)}")
    if isinstance(img, Tensor):
        return img.shape[-2], img.shape[-1]
    if is_pil_image(img):
        return img.size[1], img.size[0]
    if not isinstance(img, np.ndarray):
        raise ArgumentTypeError(f"{where}img should be a tensor (..., C, H, W), an (H, W[, C]) "
                                f"array or a PIL image, got {type(img).__name__}")
    return img.shape[0], img.shape[1]


def _padding4(padding: int | Sequence[int]) -> tuple[int, int, int, int]:
    """torchvision's padding forms as (left, top, right, bottom)."""
    p = [padding] if isinstance(padding, numbers.Integral) else padding
    if not isinstance(p, Sequence) or not all(isinstance(x, numbers.Integral) for x in p):
        raise ArgumentTypeError(f"Pad: padding must be an int or a sequence of ints, got "
                                f"{padding!r}")
    if len(p) not in (1, 2, 4):
        raise ArgumentError(f"Pad: padding must be an int or a sequence of 1, 2 or 4 ints, got "
                            f"{padding!r}")
    p = [int(x) for x in p]
    if len(p) == 1:
        return p[0], p[0], p[0], p[0]
    if len(p) == 2:
        return p[0], p[1], p[0], p[1]
    return p[0], p[1], p[2], p[3]


_MODES = ("constant", "edge", "reflect", "symmetric")


def _check_mode(padding_mode: str) -> None:
    if padding_mode not in _MODES:
        raise ArgumentError(f"Pad: padding_mode should be one of {_MODES}, got {padding_mode!r}")


def pad(img: Image, padding: int | Sequence[int], fill: float | Sequence[float] = 0,
        padding_mode: str = "constant") -> Image:
    """Pads the last two image dimensions (H, W); torchvision's padding forms and modes.

    Negative padding crops, as torchvision's does. For an ``(H, W, C)`` array ``fill`` may be
    one value per channel; for a tensor it is one number.
    """
    _check_mode(padding_mode)
    h, w = _hw(img, "pad")
    left, top, right, bottom = _padding4(padding)
    if min(left, top, right, bottom) < 0:
        cut_top, cut_left = max(-top, 0), max(-left, 0)
        img = crop(img, cut_top, cut_left, h - cut_top - max(-bottom, 0),
                   w - cut_left - max(-right, 0))
        left, top, right, bottom = (max(p, 0) for p in (left, top, right, bottom))
    if isinstance(img, np.ndarray):
        if padding_mode != "constant":
            widths = [(top, bottom), (left, right)] + [(0, 0)] * (img.ndim - 2)
            return np.pad(img, widths, mode=padding_mode)
        h, w = img.shape[:2]
        out = np.empty((top + h + bottom, left + w + right, *img.shape[2:]), img.dtype)
        try:
            out[...] = fill
        except ValueError:
            raise ArgumentError(f"Pad: fill {fill!r} does not match the image's channels (shape "
                                f"{img.shape}): give one value, or one per channel") from None
        out[top:top + h, left:left + w] = img
        return out
    if not isinstance(fill, numbers.Number):
        raise ArgumentTypeError(f"Pad: fill for a tensor image must be a number, got {fill!r}")
    if padding_mode == "constant":
        return ember.pad(img, (left, right, top, bottom), value=fill)
    # a tensor reflects once, as torch's padding does (arrays, like PIL images, repeat it)
    for name, size, widths in (("width", img.shape[-1], (left, right)),
                               ("height", img.shape[-2], (top, bottom))):
        if size == 0 < max(widths):
            raise ArgumentError(f"pad: {padding_mode} padding needs pixels to repeat, got an "
                                f"image of {name} 0 (shape {tuple(img.shape)})")
        most = {"reflect": size - 1, "symmetric": size}.get(padding_mode, max(widths))
        if max(widths) > most:
            raise ArgumentError(f"pad: {padding_mode} padding of {max(widths)} needs an image "
                                f"{name} of at least {max(widths) + size - most}, got {size} "
                                f"(shape {tuple(img.shape)}); pad in steps, or use 'edge'")
    # gather indices made by padding an index vector with NumPy's same-named mode
    for dim, (a, b) in ((-1, (left, right)), (-2, (top, bottom))):
        idx = np.pad(np.arange(img.shape[dim]), (a, b), mode=padding_mode)
        img = img.index_select(dim, ember.from_numpy(idx))
    return img


def crop(img: Image, top: int, left: int, height: int, width: int) -> Image:
    """The ``height`` x ``width`` window at (``top``, ``left``); where it reaches outside the
    image it is zero-padded, as torchvision's ``crop`` does.

    Example:
        >>> crop(ember.ones(1, 2, 2), 1, 1, 2, 2).tolist()
        [[[1.0, 0.0], [0.0, 0.0]]]
    """
    h, w = _hw(img, "crop")
    bottom, right = top + height, left + width
    rows, cols = slice(max(top, 0), bottom), slice(max(left, 0), right)
    inside = img[..., rows, cols] if isinstance(img, Tensor) else img[rows, cols]
    if top >= 0 and left >= 0 and bottom <= h and right <= w:
        return inside
    return pad(inside, [max(-left + min(0, right), 0), max(-top + min(0, bottom), 0),
                        max(right - max(w, left), 0), max(bottom - max(h, top), 0)])


class Pad:
    """Pads an image: ``Pad(4)``, ``Pad((2, 1))`` (left/right, top/bottom) or
    ``Pad((l, t, r, b))``; ``padding_mode`` is constant (with ``fill``), edge, reflect or
    symmetric."""

    def __init__(self, padding: int | Sequence[int], fill: float | Sequence[float] = 0,
                 padding_mode: str = "constant") -> None:
        _padding4(padding)
        _check_mode(padding_mode)
        self.padding, self.fill, self.padding_mode = padding, fill, padding_mode

    @accepts_pil
    def __call__(self, img: Image) -> Image:
        return pad(img, self.padding, self.fill, self.padding_mode)

    def __repr__(self) -> str:
        return (f"{type(self).__name__}(padding={self.padding}, fill={self.fill}, "
                f"padding_mode={self.padding_mode})")


class CenterCrop:
    """The central ``size`` window (padded with zeros where the image is smaller)."""

    def __init__(self, size: int | Sequence[int]) -> None:
        self.size = _size_pair(size, "CenterCrop")

    @accepts_pil
    def __call__(self, img: Image) -> Image:
        (th, tw), (h, w) = self.size, _hw(img, "center_crop")
        if th > h or tw > w:
            img = pad(img, ((tw - w) // 2 if tw > w else 0, (th - h) // 2 if th > h else 0,
                            (tw - w + 1) // 2 if tw > w else 0,
                            (th - h + 1) // 2 if th > h else 0))
            h, w = _hw(img)
        return crop(img, int(round((h - th) / 2.0)), int(round((w - tw) / 2.0)), th, tw)

    def __repr__(self) -> str:
        return f"{type(self).__name__}(size={self.size})"


class RandomCrop:
    """A window of ``size`` at a random place, after optional ``padding``; with
    ``pad_if_needed`` images smaller than ``size`` are padded first.

    Example:
        >>> RandomCrop(2, padding=1)(ember.ones(1, 3, 3)).shape
        ember.Size([1, 2, 2])
    """

    def __init__(self, size: int | Sequence[int], padding: int | Sequence[int] | None = None,
                 pad_if_needed: bool = False, fill: float = 0, padding_mode: str = "constant",
                 generator: ember.Generator | None = None) -> None:
        self.size = _size_pair(size, "RandomCrop")
        self.padding, self.pad_if_needed = padding, pad_if_needed
        self.fill, self.padding_mode, self.generator = fill, padding_mode, generator

    @staticmethod
    def get_params(img: Image, output_size: tuple[int, int],
                   generator: ember.Generator | None = None) -> tuple[int, int, int, int]:
        """A random (top, left, height, width) window of ``output_size``."""
        (h, w), (th, tw) = _hw(img), output_size
        if h < th or w < tw:
            raise ArgumentError(f"RandomCrop: required crop size {(th, tw)} is larger than the "
                                f"input image size {(h, w)}")
        if (h, w) == (th, tw):
            return 0, 0, h, w
        i = int(ember.randint(0, h - th + 1, (1,), generator=generator).item())
        j = int(ember.randint(0, w - tw + 1, (1,), generator=generator).item())
        return i, j, th, tw

    @accepts_pil
    def __call__(self, img: Image) -> Image:
        if self.padding is not None:
            img = pad(img, self.padding, self.fill, self.padding_mode)
        (h, w), (th, tw) = _hw(img), self.size
        if self.pad_if_needed and (w < tw or h < th):
            img = pad(img, (max(tw - w, 0), max(th - h, 0)), self.fill, self.padding_mode)
        return crop(img, *self.get_params(img, self.size, self.generator))

    def __repr__(self) -> str:
        return f"{type(self).__name__}(size={self.size}, padding={self.padding})"


class _RandomFlip:
    axis = -1

    def __init__(self, p: float = 0.5, generator: ember.Generator | None = None) -> None:
        self.p, self.generator = p, generator

    @accepts_pil
    def __call__(self, img: Image) -> Image:
        if ember.rand(1, generator=self.generator).item() >= self.p:
            return img
        if isinstance(img, Tensor):
            return img.flip(self.axis)
        return np.flip(img, 1 if self.axis == -1 else 0).copy()

    def __repr__(self) -> str:
        return f"{type(self).__name__}(p={self.p})"


class RandomHorizontalFlip(_RandomFlip):
    """Mirrors the image left-right with probability ``p``."""

    axis = -1


class RandomVerticalFlip(_RandomFlip):
    """Mirrors the image top-bottom with probability ``p``."""

    axis = -2
