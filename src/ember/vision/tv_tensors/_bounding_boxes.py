"""Bounding boxes: an ``(N, K)`` tensor with its format, the size of the canvas (image) the
boxes lie on and how transforms clamp them to it; ``K`` is 4 for axis-aligned boxes, 5 or 8
for rotated ones."""

from __future__ import annotations

from collections.abc import Sequence
from enum import Enum
from typing import Any

import ember
from ember.errors import ArgumentError
from ember.vision.tv_tensors._tv_tensor import TVTensor, _as_tensor


class BoundingBoxFormat(Enum):
    """How the numbers of a box are read: ``XYXY`` (corners), ``XYWH`` (top-left corner and
    size), ``CXCYWH`` (centre and size), and the rotated formats ``XYWHR`` (top-left corner,
    size, angle in degrees counter-clockwise), ``CXCYWHR`` (centre, size, angle) and
    ``XYXYXYXY`` (the four corners, clockwise from the top left)."""

    XYXY = "XYXY"
    XYWH = "XYWH"
    CXCYWH = "CXCYWH"
    XYWHR = "XYWHR"
    CXCYWHR = "CXCYWHR"
    XYXYXYXY = "XYXYXYXY"


_ROTATED = ("XYWHR", "CXCYWHR", "XYXYXYXY")
CLAMPING_MODES = ("soft", "hard", None)


def is_rotated_bounding_format(format: BoundingBoxFormat | str) -> bool:
    """Whether ``format`` is one of the rotated formats (a name must be upper case, as in
    torchvision).

    Example:
        >>> is_rotated_bounding_format("CXCYWHR"), is_rotated_bounding_format("XYXY")
        (True, False)
    """
    if isinstance(format, BoundingBoxFormat):
        return format.value in _ROTATED
    if isinstance(format, str):
        return format in _ROTATED
    raise ArgumentError(f"is_rotated_bounding_format: format should be a str or BoundingBoxFormat, "
                        f"got {type(format).__name__}")


def box_width(format: BoundingBoxFormat) -> int:
    """The number of values a box of ``format`` has: 4, 5 (with an angle) or 8 (corners)."""
    return {"XYWHR": 5, "CXCYWHR": 5, "XYXYXYXY": 8}.get(format.value, 4)


def _format(value: BoundingBoxFormat | str) -> BoundingBoxFormat:
    if isinstance(value, BoundingBoxFormat):
        return value
    try:
        return BoundingBoxFormat[str(value).upper()]
    except KeyError:
        raise ArgumentError(f"BoundingBoxes: unknown format {value!r}; the formats are "
                            f"{[f.name for f in BoundingBoxFormat]}") from None


def check_clamping_mode(op: str, mode: Any, allowed: Sequence[Any] = CLAMPING_MODES) -> Any:
    """``mode`` if it is one of ``allowed``, else a ValueError naming ``op``."""
    if mode not in allowed:
        raise ArgumentError(f"{op}: clamping_mode must be one of {list(allowed)}, got {mode!r}")
    return mode


class BoundingBoxes(TVTensor):
    """Boxes ``(N, K)`` (a single box ``(K,)`` becomes ``(1, K)``) in ``format`` on a canvas of
    ``canvas_size = (height, width)``; ``K`` is 4, or 5 / 8 for the rotated formats (whose
    boxes are floating point). ``clamping_mode`` says how transforms clamp the boxes to the
    canvas: ``"soft"`` (the default) and ``"hard"`` clamp (the same for axis-aligned boxes;
    a rotated box keeps its angle and becomes, softly, the smallest box holding its part
    inside the canvas, or, hard, a large box inside both), ``None`` does not clamp.

    Example:
        >>> from ember.vision.tv_tensors import BoundingBoxes
        >>> b = BoundingBoxes([1, 2, 5, 6], format="XYXY", canvas_size=(8, 8))
        >>> b.shape, b.format, b.canvas_size, b.clamping_mode
        (ember.Size([1, 4]), <BoundingBoxFormat.XYXY: 'XYXY'>, (8, 8), 'soft')
    """

    format: BoundingBoxFormat
    canvas_size: tuple[int, int]
    clamping_mode: str | None

    def __new__(cls, data: Any, *, format: BoundingBoxFormat | str,
                canvas_size: Sequence[int], clamping_mode: str | None = "soft",
                dtype: ember.DType | None = None, device: Any = None,
                requires_grad: bool | None = None) -> BoundingBoxes:
        tensor = _as_tensor(data, dtype, device, requires_grad)
        fmt = _format(format)
        if tensor.ndim == 1:
            tensor = tensor.unsqueeze(0)
        width = box_width(fmt)
        if tensor.ndim != 2 or tensor.shape[-1] != width:
            raise ArgumentError(f"BoundingBoxes: expected a tensor of shape (N, {width}) for "
                                f"format {fmt.name}, got {tuple(tensor.shape)}")
        if is_rotated_bounding_format(fmt) and not tensor.is_floating_point():
            raise ArgumentError(f"BoundingBoxes: rotated bounding boxes should be floating point "
                                f"tensors, got {tensor.dtype}")
        return cls._wrap(tensor, format=fmt, canvas_size=canvas_size,
                         clamping_mode=clamping_mode)

    @classmethod
    def _wrap(cls, tensor: Any, *, format: BoundingBoxFormat | str, canvas_size: Sequence[int],
              clamping_mode: str | None = "soft") -> BoundingBoxes:
        if not isinstance(canvas_size, Sequence) or len(canvas_size) != 2:
            raise ArgumentError(f"BoundingBoxes: canvas_size should be (height, width), got "
                                f"{canvas_size!r}")
        return super()._wrap(tensor, format=_format(format),
                             canvas_size=(int(canvas_size[0]), int(canvas_size[1])),
                             clamping_mode=check_clamping_mode("BoundingBoxes", clamping_mode))
