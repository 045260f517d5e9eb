"""The geometric augmentations of detection recipes (SSD, Mask R-CNN, DETR): zooming out,
IoU-constrained cropping and scale jitter."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import ember
from ember.errors import ArgumentError
from ember.tensor import Tensor
from ember.vision import tv_tensors
from ember.vision.ops import box_iou
from ember.vision.transforms.v2 import functional as F
from ember.vision.transforms.v2._transform import Transform, _RandomApplyTransform
from ember.vision.transforms.v2._utils import (
    Fill,
    _get_fill,
    _setup_fill_arg,
    get_bounding_boxes,
    has_all,
    has_any,
    is_array_image,
    query_size,
)
from ember.vision.transforms.v2.functional import InterpolationMode, is_pure_tensor

__all__ = ["RandomIoUCrop", "RandomShortestSize", "RandomZoomOut", "ScaleJitter"]


class RandomZoomOut(_RandomApplyTransform):
    """With probability ``p``, places the sample at a random spot of a canvas ``r`` times its
    size (``r`` uniform in ``side_range``), filled with ``fill`` (SSD's "zoom out").

    Example:
        >>> out = RandomZoomOut(side_range=(2.0, 2.0), p=1.0)(ember.ones(1, 4, 4))
        >>> out.shape, out.sum().item()
        (ember.Size([1, 8, 8]), 16.0)
    """

    def __init__(self, fill: Fill | dict = 0, side_range: Sequence[float] = (1.0, 4.0),
                 p: float = 0.5) -> None:
        super().__init__(p=p)
        if len(side_range) != 2 or side_range[0] < 1.0 or side_range[0] > side_range[1]:
            raise ArgumentError(f"RandomZoomOut: invalid canvas side range {side_range}; it should "
                                "be (min, max) with 1 <= min <= max")
        self.fill, self._fill, self.side_range = fill, _setup_fill_arg(fill), tuple(side_range)

    def make_params(self, flat_inputs: list) -> dict[str, Any]:
        height, width = query_size(flat_inputs)
        low, high = self.side_range
        r = low + ember.rand(1).item() * (high - low)
        canvas_w, canvas_h = int(width * r), int(height * r)
        place = ember.rand(2).tolist()
        left, top = int((canvas_w - width) * place[0]), int((canvas_h - height) * place[1])
        return {"padding": [left, top, canvas_w - left - width, canvas_h - top - height]}

    def transform(self, inpt: Any, params: dict[str, Any]) -> Any:
        return self._call_kernel(F.pad, inpt, padding=params["padding"],
                                 fill=_get_fill(self._fill, type(inpt)))


class RandomIoUCrop(Transform):
    """SSD's random crop: draws a minimum IoU from ``sampler_options`` (a value >= 1 keeps the
    sample as it is), then up to ``trials`` windows (each side ``min_scale``–``max_scale`` of
    the image's, aspect ratio in range) until one holds the centre of some box and overlaps
    one of those with at least that IoU. Boxes whose centres fall outside are zeroed (remove
    them with :class:`SanitizeBoundingBoxes`). Needs boxes and an image in the sample.

    Example:
        >>> from ember.vision import tv_tensors
        >>> boxes = tv_tensors.BoundingBoxes([[2, 2, 12, 12]], format="XYXY",
        ...                                  canvas_size=(16, 16), dtype=ember.float32)
        >>> img, out = RandomIoUCrop()(ember.zeros(3, 16, 16), boxes)
        >>> out.canvas_size == tuple(img.shape[-2:])
        True
    """

    def __init__(self, min_scale: float = 0.3, max_scale: float = 1.0,
                 min_aspect_ratio: float = 0.5, max_aspect_ratio: float = 2.0,
                 sampler_options: Sequence[float] | None = None, trials: int = 40) -> None:
        super().__init__()
        self.min_scale, self.max_scale = min_scale, max_scale
        self.min_aspect_ratio, self.max_aspect_ratio = min_aspect_ratio, max_aspect_ratio
        self.options = [0.0, 0.1, 0.3, 0.5, 0.7, 0.9, 2.0] if sampler_options is None \
            else list(sampler_options)
        self.trials = trials

    def _check_inputs(self, flat_inputs: list) -> None:
        if not (has_all(flat_inputs, tv_tensors.BoundingBoxes)
                and has_any(flat_inputs, tv_tensors.Image, is_pure_tensor, is_array_image)):
            raise TypeError("RandomIoUCrop: requires the sample to contain an image and "
                            "bounding boxes; it can also contain masks")

    def _window(self, height: int, width: int, xyxy: Tensor, min_iou: float
                ) -> dict[str, Any] | None:
        """One trial: a window that passes the checks, or None."""
        r = (self.min_scale + (self.max_scale - self.min_scale) * ember.rand(2)).tolist()
        new_w, new_h = int(width * r[0]), int(height * r[1])
        if new_h == 0 or not self.min_aspect_ratio <= new_w / new_h <= self.max_aspect_ratio:
            return None
        r = ember.rand(2).tolist()
        left, top = int((width - new_w) * r[0]), int((height - new_h) * r[1])
        right, bottom = left + new_w, top + new_h
        if left == right or top == bottom:
            return None
        cx, cy = (xyxy[:, 0] + xyxy[:, 2]) * 0.5, (xyxy[:, 1] + xyxy[:, 3]) * 0.5
        inside = (left < cx) & (cx < right) & (top < cy) & (cy < bottom)
        if not bool(inside.any()):
            return None
        window = ember.tensor([[left, top, right, bottom]], dtype=xyxy.dtype)
        if box_iou(xyxy[inside], window).max().item() < min_iou:
            return None
        return {"top": top, "left": left, "height": new_h, "width": new_w, "inside": inside}

    def make_params(self, flat_inputs: list) -> dict[str, Any]:
        height, width = query_size(flat_inputs)
        boxes = get_bounding_boxes(flat_inputs)
        xyxy = F.convert_bounding_box_format(boxes, new_format="XYXY").as_subclass(Tensor)
        xyxy = xyxy if xyxy.is_floating_point() else xyxy.to(ember.get_default_dtype())
        while True:
            min_iou = self.options[int(ember.randint(0, len(self.options), (1,)))]
            if min_iou >= 1.0:
                return {}
            for _ in range(self.trials):
                params = self._window(height, width, xyxy, min_iou)
                if params is not None:
                    return params

    def transform(self, inpt: Any, params: dict[str, Any]) -> Any:
        if not params:
            return inpt
        out = self._call_kernel(F.crop, inpt, params["top"], params["left"], params["height"],
                                params["width"])
        if isinstance(out, tv_tensors.BoundingBoxes):
            out[~params["inside"]] = 0
        return out


class ScaleJitter(Transform):
    """Resizes the sample to fit ``target_size = (h, w)`` times a scale drawn uniformly from
    ``scale_range`` (large-scale jitter, as in the Copy-Paste recipe).

    Example:
        >>> ScaleJitter((8, 8), scale_range=(1.0, 1.0))(ember.zeros(1, 4, 2)).shape
        ember.Size([1, 8, 4])
    """

    def __init__(self, target_size: tuple[int, int],
                 scale_range: tuple[float, float] = (0.1, 2.0),
                 interpolation: InterpolationMode = InterpolationMode.BILINEAR,
                 antialias: bool | None = True) -> None:
        super().__init__()
        self.target_size, self.scale_range = tuple(target_size), tuple(scale_range)
        self.interpolation, self.antialias = InterpolationMode(interpolation), antialias

    def make_params(self, flat_inputs: list) -> dict[str, Any]:
        height, width = query_size(flat_inputs)
        low, high = self.scale_range
        scale = low + ember.rand(1).item() * (high - low)
        r = min(self.target_size[1] / height, self.target_size[0] / width) * scale
        return {"size": (int(height * r), int(width * r))}

    def transform(self, inpt: Any, params: dict[str, Any]) -> Any:
        return self._call_kernel(F.resize, inpt, size=params["size"],
                                 interpolation=self.interpolation, antialias=self.antialias)


class RandomShortestSize(Transform):
    """Resizes the shorter side to a size drawn from ``min_size``, keeping the aspect ratio,
    the longer side at most ``max_size``.

    Example:
        >>> RandomShortestSize([4], max_size=6)(ember.zeros(1, 4, 8)).shape
        ember.Size([1, 3, 6])
    """

    def __init__(self, min_size: int | Sequence[int], max_size: int | None = None,
                 interpolation: InterpolationMode = InterpolationMode.BILINEAR,
                 antialias: bool | None = True) -> None:
        super().__init__()
        self.min_size = [min_size] if isinstance(min_size, int) else list(min_size)
        self.max_size = max_size
        self.interpolation, self.antialias = InterpolationMode(interpolation), antialias

    def make_params(self, flat_inputs: list) -> dict[str, Any]:
        height, width = query_size(flat_inputs)
        min_size = self.min_size[int(ember.randint(0, len(self.min_size), ()))]
        r = min_size / min(height, width)
        if self.max_size is not None:
            r = min(r, self.max_size / max(height, width))
        return {"size": (int(height * r), int(width * r))}

    def transform(self, inpt: Any, params: dict[str, Any]) -> Any:
        return self._call_kernel(F.resize, inpt, size=params["size"],
                                 interpolation=self.interpolation, antialias=self.antialias)
