"""``GeneralizedRCNNTransform``: what the R-CNN family does to images and targets before the
backbone (normalize, resize, pad into a batch) and to the detections after (back to each
image's original size, masks pasted into the image)."""

from __future__ import annotations

import math
from typing import Any

import numpy as np

import ember
import ember.nn.functional as F
from ember import nn
from ember.errors import ArgumentError
from ember.tensor import Tensor
from ember.vision.models.detection.image_list import ImageList

__all__ = ["GeneralizedRCNNTransform", "paste_masks_in_image", "resize_boxes",
           "resize_keypoints"]


def resize_boxes(boxes: Tensor, original_size: tuple[int, int],
                 new_size: tuple[int, int]) -> Tensor:
    """``(x1, y1, x2, y2)`` boxes of an image of ``original_size`` scaled to ``new_size``
    (both ``(height, width)``).

    Example:
        >>> resize_boxes(ember.tensor([[1.0, 2.0, 3.0, 4.0]]), (10, 10), (20, 5))
        tensor([[0.5000, 4.0000, 1.5000, 8.0000]])
    """
    # float32 ratios, as torchvision's: integer boxes come back float, not truncated
    new = ember.tensor([new_size[1], new_size[0]] * 2, dtype=ember.float32)
    old = ember.tensor([original_size[1], original_size[0]] * 2, dtype=ember.float32)
    return boxes * (new / old)


def resize_keypoints(keypoints: Tensor, original_size: tuple[int, int],
                     new_size: tuple[int, int]) -> Tensor:
    """``(N, K, 3)`` keypoints ``(x, y, visibility)`` of an image of ``original_size`` scaled
    to ``new_size`` (both ``(height, width)``); the visibility stays.

    Example:
        >>> resize_keypoints(ember.tensor([[[1.0, 2.0, 1.0]]]), (10, 10), (20, 5))
        tensor([[[0.5000, 4.0000, 1.0000]]])
    """
    ratios = ember.tensor([new_size[1] / original_size[1], new_size[0] / original_size[0],
                           1.0], dtype=keypoints.dtype)
    return keypoints * ratios


def _paste_one(mask: np.ndarray, box: np.ndarray, height: int, width: int) -> Tensor:
    """One ``(M, M)`` mask probability map stretched over its integer box in an empty image."""
    w, h = max(int(box[2] - box[0] + 1), 1), max(int(box[3] - box[1] + 1), 1)
    stretched = F.interpolate(ember.from_numpy(mask)[None, None], size=(h, w), mode="bilinear",
                              align_corners=False)[0, 0].numpy()
    out = np.zeros((height, width), mask.dtype)
    x0, x1 = max(box[0], 0), min(box[2] + 1, width)
    y0, y1 = max(box[1], 0), min(box[3] + 1, height)
    if x1 > x0 and y1 > y0:
        out[y0:y1, x0:x1] = stretched[y0 - box[1]:y1 - box[1], x0 - box[0]:x1 - box[0]]
    return out


def paste_masks_in_image(masks: Tensor, boxes: Tensor, img_shape: tuple[int, int],
                         padding: int = 1) -> Tensor:
    """``(N, 1, M, M)`` mask probabilities, predicted inside ``boxes``, as ``(N, 1, H, W)``
    maps over the whole image: each mask (padded by ``padding`` on every side, its box grown
    to match) resized bilinearly onto its box.

    Example:
        >>> paste_masks_in_image(ember.ones(1, 1, 4, 4), ember.tensor([[2.0, 2.0, 5.0, 5.0]]),
        ...                      (8, 8)).shape
        ember.Size([1, 1, 8, 8])
    """
    height, width = img_shape
    size = masks.shape[-1]
    scale = (size + 2 * padding) / size
    padded = np.pad(masks.detach().numpy()[:, 0], ((0, 0), (padding, padding),
                                                    (padding, padding)))
    b = boxes.detach().numpy().astype(np.float64)
    half_w, half_h = (b[:, 2] - b[:, 0]) * 0.5 * scale, (b[:, 3] - b[:, 1]) * 0.5 * scale
    cx, cy = (b[:, 2] + b[:, 0]) * 0.5, (b[:, 3] + b[:, 1]) * 0.5
    grown = np.stack([cx - half_w, cy - half_h, cx + half_w, cy + half_h], 1).astype(np.int64)
    pasted = [_paste_one(m, g, height, width) for m, g in zip(padded, grown)]
    if not pasted:
        return ember.zeros(0, 1, height, width, dtype=masks.dtype)
    return ember.from_numpy(np.stack(pasted)[:, None])


class GeneralizedRCNNTransform(nn.Module):
    """Normalizes each image by ``image_mean``/``image_std``, resizes it so its short side is
    ``min_size`` (drawn from the tuple in training, the last one in eval) and its long side at
    most ``max_size`` (or to ``fixed_size``), scales the targets' boxes and masks to match,
    and pads the images into one batch whose sides are multiples of ``size_divisible``.
    :meth:`postprocess` maps detections back to the original sizes.

    Example:
        >>> t = GeneralizedRCNNTransform(32, 64, [0.5] * 3, [0.5] * 3).eval()
        >>> images, _ = t([ember.rand(3, 20, 30), ember.rand(3, 40, 20)])
        >>> images.tensors.shape, images.image_sizes
        (ember.Size([2, 3, 64, 64]), [(32, 48), (64, 32)])
    """

    def __init__(self, min_size: int | tuple[int, ...], max_size: int,
                 image_mean: list[float], image_std: list[float], size_divisible: int = 32,
                 fixed_size: tuple[int, int] | None = None, **kwargs: Any) -> None:
        super().__init__()
        if not isinstance(min_size, (list, tuple)):
            min_size = (min_size,)
        self.min_size, self.max_size = tuple(min_size), max_size
        self.image_mean, self.image_std = image_mean, image_std
        self.size_divisible, self.fixed_size = size_divisible, fixed_size
        self._skip_resize = kwargs.pop("_skip_resize", False)

    def forward(self, images: list[Tensor], targets: list[dict[str, Tensor]] | None = None
                ) -> tuple[ImageList, list[dict[str, Tensor]] | None]:
        images = list(images)
        if targets is not None:  # the caller's dicts stay as they are
            targets = [dict(t) for t in targets]
        for i, image in enumerate(images):
            if image.ndim != 3:
                raise ArgumentError("images is expected to be a list of 3d tensors of shape "
                                    f"[C, H, W], got {tuple(image.shape)}")
            target = targets[i] if targets is not None else None
            image = self.normalize(image)
            image, target = self.resize(image, target)
            images[i] = image
            if targets is not None:
                targets[i] = target
        sizes = [(int(img.shape[-2]), int(img.shape[-1])) for img in images]
        return ImageList(self.batch_images(images, self.size_divisible), sizes), targets

    def normalize(self, image: Tensor) -> Tensor:
        if not image.dtype.is_floating_point:
            raise TypeError(f"GeneralizedRCNNTransform: images must be floating point, got "
                            f"{image.dtype.name}. Hint: convert with image.float() / 255")
        mean = ember.tensor(self.image_mean, dtype=image.dtype)
        std = ember.tensor(self.image_std, dtype=image.dtype)
        return (image - mean[:, None, None]) / std[:, None, None]

    def _pick_min_size(self) -> float:
        # a uniform draw through ember's generator, so ember.manual_seed governs it
        index = int(float(ember.empty(1).uniform_(0.0, float(len(self.min_size)))[0]))
        return float(self.min_size[index])

    def resize(self, image: Tensor, target: dict[str, Tensor] | None = None
               ) -> tuple[Tensor, dict[str, Tensor] | None]:
        height, width = image.shape[-2:]
        if self.training:
            if self._skip_resize:
                return image, target
            size = self._pick_min_size()
        else:
            size = float(self.min_size[-1])
        if self.fixed_size is not None:
            image = F.interpolate(image[None], size=(self.fixed_size[1], self.fixed_size[0]),
                                  mode="bilinear", align_corners=False)[0]
        else:
            scale = min(size / min(height, width), self.max_size / max(height, width))
            image = F.interpolate(image[None], scale_factor=scale, mode="bilinear",
                                  recompute_scale_factor=True, align_corners=False)[0]
        if target is None:
            return image, target
        new_size = tuple(image.shape[-2:])
        target["boxes"] = resize_boxes(target["boxes"], (height, width), new_size)
        if "keypoints" in target:
            target["keypoints"] = resize_keypoints(target["keypoints"], (height, width),
                                                   new_size)
        if "masks" in target:
            masks = F.interpolate(target["masks"][:, None].float(), size=new_size)[:, 0]
            target["masks"] = masks.to(ember.uint8)
        return image, target

    def batch_images(self, images: list[Tensor], size_divisible: int = 32) -> Tensor:
        """The images zero-padded at the bottom and right into one tensor whose height and
        width are the largest ones rounded up to multiples of ``size_divisible``."""
        channels = max(img.shape[0] for img in images)
        height = math.ceil(max(img.shape[1] for img in images) / size_divisible) * size_divisible
        width = math.ceil(max(img.shape[2] for img in images) / size_divisible) * size_divisible
        return ember.stack([F.pad(img, (0, width - img.shape[2], 0, height - img.shape[1],
                                        0, channels - img.shape[0])) for img in images])

    def postprocess(self, result: list[dict[str, Tensor]], image_shapes: list[tuple[int, int]],
                    original_image_sizes: list[tuple[int, int]]) -> list[dict[str, Tensor]]:
        """Detections of the resized images mapped back to the original sizes (eval only)."""
        if self.training:
            return result
        for pred, resized, original in zip(result, image_shapes, original_image_sizes):
            pred["boxes"] = resize_boxes(pred["boxes"], resized, original)
            if "masks" in pred:
                pred["masks"] = paste_masks_in_image(pred["masks"], pred["boxes"], original)
            if "keypoints" in pred:
                pred["keypoints"] = resize_keypoints(pred["keypoints"], resized, original)
        return result

    def extra_repr(self) -> str:
        mode = f"fixed_size={self.fixed_size}" if self.fixed_size else (
            f"min_size={self.min_size}, max_size={self.max_size}")
        return (f"Normalize(mean={self.image_mean}, std={self.image_std}), Resize({mode}, "
                "mode='bilinear')")
