"""Bounding boxes: an ``(N, 4)`` tensor with its format and the size of the canvas (image)
the boxes lie on."""

from __future__ import annotations

from collections.abc import Sequence
from enum import Enum
from typing import Any

import ember
from ember.vision.tv_tensors._tv_tensor import TVTensor, _as_tensor


class BoundingBoxFormat(Enum):
    """How the four numbers of a box are read: ``XYXY`` (corners), ``XYWH`` (top-left corner
    and size) or ``CXCYWH`` (centre and size)."""

    XYXY = "XYXY"
    XYWH = "XYWH"
    CXCYWH = "CXCYWH"


def _format(value: BoundingBoxFormat | str) -> BoundingBoxFormat:
    if isinstance(value, BoundingBoxFormat):
        return value
    try:
        return BoundingBoxFormat[str(value).upper()]
    except KeyError:
        raise ValueError(f"BoundingBoxes: unknown format {value!r}; the formats are "
                         f"{[f.name for f in BoundingBoxFormat]}") from None


class BoundingBoxes(TVTensor):
    """Boxes ``(N, 4)`` (a single box ``(4,)`` becomes ``(1, 4)``) in ``format`` on a canvas of
    ``canvas_size = (height, width)``.

    Example:
        >>> from ember.vision.tv_tensors import BoundingBoxes
        >>> b = BoundingBoxes([1, 2, 5, 6], format="XYXY", canvas_size=(8, 8))
        >>> b.shape, b.format, b.canvas_size
        (ember.Size([1, 4]), <BoundingBoxFormat.XYXY: 'XYXY'>, (8, 8))
    """

    format: BoundingBoxFormat
    canvas_size: tuple[int, int]

    def __new__(cls, data: Any, *, format: BoundingBoxFormat | str,
                canvas_size: Sequence[int], dtype: ember.DType | None = None,
                device: Any = None, requires_grad: bool | None = None) -> BoundingBoxes:
        tensor = _as_tensor(data, dtype, device, requires_grad)
        if tensor.ndim == 1:
            tensor = tensor.unsqueeze(0)
        if tensor.ndim != 2 or tensor.shape[-1] != 4:
            raise ValueError(f"BoundingBoxes: expected a tensor of shape (N, 4), got "
                             f"{tuple(tensor.shape)}")
        return cls._wrap(tensor, format=format, canvas_size=canvas_size)

    @classmethod
    def _wrap(cls, tensor: Any, *, format: BoundingBoxFormat | str,
              canvas_size: Sequence[int]) -> BoundingBoxes:
        if not isinstance(canvas_size, Sequence) or len(canvas_size) != 2:
            raise ValueError(f"BoundingBoxes: canvas_size should be (height, width), got "
                             f"{canvas_size!r}")
        return super()._wrap(tensor, format=_format(format),
                             canvas_size=(int(canvas_size[0]), int(canvas_size[1])))
