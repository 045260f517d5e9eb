"""Random erasing, and the batch augmentations CutMix and MixUp that mix images and their
labels."""

from __future__ import annotations

import math
import numbers
from collections.abc import Callable, Sequence
from typing import Any

import ember
import ember.nn.functional as NF
from ember.distributions import Beta
from ember.errors import ArgumentError
from ember.tensor import Tensor
from ember.utils._pytree import tree_flatten, tree_unflatten
from ember.vision import tv_tensors
from ember.vision.transforms import augment as v1
from ember.vision.transforms.v2 import functional as F
from ember.vision.transforms.v2._transform import Transform, _RandomApplyTransform
from ember.vision.transforms.v2._utils import (
    _parse_labels_getter,
    has_any,
    is_array_image,
    query_chw,
    query_size,
)
from ember.vision.transforms.v2.functional import is_pure_tensor

__all__ = ["JPEG", "CutMix", "MixUp", "RandomErasing"]


class RandomErasing(_RandomApplyTransform):
    """With probability ``p``, erases one random window (covering ``scale`` of the area,
    aspect ratio in ``ratio``, drawn as v1's ``RandomErasing.get_params``) of every image and
    video of the sample, filled with ``value`` (a number, one per channel, or ``"random"``
    normal noise). Masks and boxes pass through.

    Example:
        >>> RandomErasing(p=1.0, value=0)(ember.ones(3, 8, 8)).sum().item() < 192
        True
    """

    def __init__(self, p: float = 0.5, scale: Sequence[float] = (0.02, 0.33),
                 ratio: Sequence[float] = (0.3, 3.3), value: float | str | Sequence = 0.0,
                 inplace: bool = False) -> None:
        super().__init__(p=p)
        v1.RandomErasing(p, scale, ratio, value, inplace)  # (its argument checks)
        self.scale, self.ratio, self.value = tuple(scale), tuple(ratio), value
        self.inplace = inplace
        self._values = None if value == "random" else (
            [float(value)] if isinstance(value, numbers.Number) else [float(v) for v in value])

    def make_params(self, flat_inputs: list) -> dict[str, Any]:
        c, height, width = query_chw(flat_inputs)
        if self._values is not None and len(self._values) not in (1, c):
            raise ArgumentError(f"RandomErasing: value should have 1 or {c} (number of channels) "
                                f"entries, got {self.value}")
        probe = ember.empty(0, c, height, width)
        i, j, h, w, v = v1.RandomErasing.get_params(probe, self.scale, self.ratio, self._values)
        return {"i": i, "j": j, "h": h, "w": w, "v": None if v is probe else v}

    def transform(self, inpt: Any, params: dict[str, Any]) -> Any:
        if params["v"] is None:
            return inpt
        return self._call_kernel(F.erase, inpt, params["i"], params["j"], params["h"],
                                 params["w"], params["v"], self.inplace)


class _BaseMixUpCutMix(Transform):
    """What CutMix and MixUp share: a batch of images ``(B, C, H, W)`` (or videos) with labels
    ``(B,)`` (class indices, made one-hot over ``num_classes``) or ``(B, num_classes)``; a
    mixing weight ``lam`` from Beta(``alpha``, ``alpha``); each sample mixed with the one
    before it in the batch (``roll(1, 0)``)."""

    def __init__(self, *, alpha: float = 1.0, num_classes: int | None = None,
                 labels_getter: str | Callable | None = "default") -> None:
        super().__init__()
        self.alpha = float(alpha)
        if self.alpha <= 0:
            raise ArgumentError(f"{type(self).__name__}: alpha should be positive, got {alpha}")
        self._dist = Beta(ember.tensor([self.alpha]), ember.tensor([self.alpha]))
        self.num_classes = num_classes
        self._labels_getter = _parse_labels_getter(labels_getter)

    def forward(self, *inputs: Any) -> Any:
        sample = inputs if len(inputs) > 1 else inputs[0]
        flat_inputs, spec = tree_flatten(sample)
        if has_any(flat_inputs, is_array_image, tv_tensors.BoundingBoxes, tv_tensors.Mask,
                   tv_tensors.KeyPoints):
            raise ArgumentError(f"{type(self).__name__}() does not support array images, bounding "
                                "boxes and masks (nor key points)")
        labels = self._labels_getter(sample)
        if not isinstance(labels, Tensor):
            raise ArgumentError(f"{type(self).__name__}: the labels must be a tensor, but got "
                                f"{type(labels).__name__} instead")
        if labels.ndim == 1 and self.num_classes is None:
            raise ArgumentError(f"{type(self).__name__}: num_classes must be given for labels of "
                                "class indices (shape (B,))")
        if labels.ndim not in (1, 2) or (labels.ndim == 2 and self.num_classes is not None
                                         and labels.shape[-1] != self.num_classes):
            raise ArgumentError(f"{type(self).__name__}: labels should be class indices (B,) or "
                                f"one-hot (B, num_classes={self.num_classes}), got shape "
                                f"{tuple(labels.shape)}")
        index = next((k for k, x in enumerate(flat_inputs) if x is labels), None)
        if index is None:
            raise ArgumentError(f"{type(self).__name__}: the labels_getter should return the "
                                "sample's own labels tensor (one of its leaves)")
        # the labels are no image: they stay out of the pure-tensor heuristic
        needs = self._needs_transform_list([None if k == index else x
                                            for k, x in enumerate(flat_inputs)])
        params = {"labels": labels, "batch_size": labels.shape[0],
                  **self.make_params([x for x, need in zip(flat_inputs, needs) if need])}
        needs[index] = True
        outputs = [self.transform(x, params) if need else x for x, need in zip(flat_inputs, needs)]
        return tree_unflatten(outputs, spec)

    def _check_image_or_video(self, inpt: Tensor, batch_size: int) -> None:
        expected = 5 if isinstance(inpt, tv_tensors.Video) else 4
        if inpt.ndim != expected:
            raise ArgumentError(f"{type(self).__name__}: expected a batched input with {expected} "
                                f"dims, but got {inpt.ndim} dimensions instead")
        if inpt.shape[0] != batch_size:
            raise ArgumentError(f"{type(self).__name__}: the batch size of the image or video does "
                                f"not match the batch size of the labels: {inpt.shape[0]} != "
                                f"{batch_size}")

    def _mixup_label(self, label: Tensor, lam: float) -> Tensor:
        if label.ndim == 1:
            label = NF.one_hot(label, num_classes=self.num_classes)
        if not label.is_floating_point():
            label = label.to(ember.get_default_dtype())
        return label.roll(1, 0) * (1.0 - lam) + label * lam

    def _mixed(self, inpt: Any, params: dict[str, Any],
               mix: Callable[[Tensor], Tensor]) -> Any:
        """The labels mixed, and images or videos mixed by ``mix``."""
        if inpt is params["labels"]:
            return self._mixup_label(inpt, params["lam"])
        if not (is_pure_tensor(inpt) or isinstance(inpt, (tv_tensors.Image, tv_tensors.Video))):
            return inpt
        self._check_image_or_video(inpt, params["batch_size"])
        out = mix(F.to_pure_tensor(inpt))
        return out if is_pure_tensor(inpt) else tv_tensors.wrap(out, like=inpt)


class MixUp(_BaseMixUpCutMix):
    """MixUp: images ``lam * x + (1 - lam) * x.roll(1, 0)`` and labels alike, ``lam`` from
    Beta(``alpha``, ``alpha``). Takes a batch, e.g. after the ``DataLoader``.

    Example:
        >>> batch = (ember.rand(4, 3, 2, 2), ember.tensor([0, 1, 2, 0]))
        >>> images, labels = MixUp(num_classes=3)(batch)
        >>> labels.shape, round(labels.sum().item(), 4)
        (ember.Size([4, 3]), 4.0)
    """

    def make_params(self, flat_inputs: list) -> dict[str, Any]:
        return {"lam": float(self._dist.sample(()).item())}

    def transform(self, inpt: Any, params: dict[str, Any]) -> Any:
        lam = params["lam"]

        def blend(x: Tensor) -> Tensor:
            if not x.is_floating_point():
                raise TypeError(f"MixUp: expected floating images or videos, got {x.dtype}; "
                                "convert them first, e.g. with ToDtype(ember.float32, "
                                "scale=True)")
            return x.roll(1, 0) * (1.0 - lam) + x * lam

        return self._mixed(inpt, params, blend)


class CutMix(_BaseMixUpCutMix):
    """CutMix: a random box of each image is replaced by the same box of the previous image in
    the batch; the labels are mixed by the area kept (``lam`` from Beta(``alpha``, ``alpha``)
    sets the box's size).

    Example:
        >>> batch = (ember.rand(4, 3, 8, 8), ember.tensor([0, 1, 2, 0]))
        >>> images, labels = CutMix(num_classes=3)(batch)
        >>> images.shape, labels.shape
        (ember.Size([4, 3, 8, 8]), ember.Size([4, 3]))
    """

    def make_params(self, flat_inputs: list) -> dict[str, Any]:
        lam = float(self._dist.sample(()).item())
        height, width = query_size(flat_inputs)
        r_x = int(ember.randint(0, width, (1,)))
        r_y = int(ember.randint(0, height, (1,)))
        r = 0.5 * math.sqrt(1.0 - lam)
        r_w_half, r_h_half = int(r * width), int(r * height)
        x1, y1 = max(r_x - r_w_half, 0), max(r_y - r_h_half, 0)
        x2, y2 = min(r_x + r_w_half, width), min(r_y + r_h_half, height)
        return {"box": (x1, y1, x2, y2),
                "lam": float(1.0 - (x2 - x1) * (y2 - y1) / (width * height))}

    def transform(self, inpt: Any, params: dict[str, Any]) -> Any:
        x1, y1, x2, y2 = params["box"]

        def paste(x: Tensor) -> Tensor:
            out = x.clone()
            out[..., y1:y2, x1:x2] = x.roll(1, 0)[..., y1:y2, x1:x2]
            return out

        return self._mixed(inpt, params, paste)


class JPEG(Transform):
    """A JPEG round trip of the uint8 images and videos at a quality drawn uniformly from
    ``quality`` (an integer, or a range ``(min, max)`` of integers from 1 to 100).

    Example:
        >>> JPEG((50, 90))(ember.full((3, 8, 8), 7, dtype=ember.uint8)).shape
        ember.Size([3, 8, 8])
    """

    def __init__(self, quality: int | Sequence[int]) -> None:
        super().__init__()
        quality = [quality, quality] if isinstance(quality, int) else list(quality)
        if len(quality) != 2 or not all(isinstance(q, int) for q in quality):
            raise TypeError(f"JPEG: quality should be an int or a sequence of two ints, got "
                            f"{quality!r}")
        if not 1 <= quality[0] <= quality[1] <= 100:
            raise ArgumentError(f"JPEG: quality must be integers from 1 to 100, min first, got "
                                f"{quality}")
        self.quality = quality

    def make_params(self, flat_inputs: list) -> dict[str, Any]:
        return {"quality": int(ember.randint(self.quality[0], self.quality[1] + 1, ()))}

    def transform(self, inpt: Any, params: dict[str, Any]) -> Any:
        return self._call_kernel(F.jpeg, inpt, params["quality"])
