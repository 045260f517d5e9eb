"""The geometric kernels for bounding boxes. Every geometric transform is an affine map of
the plane: a box's four corners are mapped and the result is their enclosing box (a rotated
box: the mapped corners made a rectangle again), clamped to the new canvas in the boxes'
clamping mode where torchvision clamps (crops, pads, rotations and affine warps; resizes of
rotated boxes)."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

import ember
from ember.errors import ArgumentError
from ember.tensor import Tensor
from ember.vision.transforms.basic import _padding4
from ember.vision.transforms.functional import _affine_inverse as _checked_affine_inverse
from ember.vision.transforms.functional import (
    _centre,
    _expanded_size,
    _inverse_affine,
    _output_size,
)
from ember.vision.transforms.v2.functional._meta import _clamp, _convert, _from_xyxy, _to_xyxy
from ember.vision.transforms.v2.functional._rotated_geometry import (
    flip_rotated,
    rectangle_from_parallelogram,
    shift_rotated,
)
from ember.vision.tv_tensors import BoundingBoxFormat, is_rotated_bounding_format

__all__ = ["affine_bounding_boxes", "crop_bounding_boxes", "horizontal_flip_bounding_boxes",
           "pad_bounding_boxes", "resize_bounding_boxes", "rotate_bounding_boxes",
           "vertical_flip_bounding_boxes"]

Canvas = tuple[int, int]
Mode = str | None
_XYXYXYXY = BoundingBoxFormat.XYXYXYXY


def _move_points(x: Tensor, y: Tensor, matrix: np.ndarray) -> tuple[Tensor, Tensor]:
    """Positions ``(x, y)`` mapped by ``matrix``: a 2x3 affine map (``matrix @ (x, y, 1)``)
    or a 3x3 homography (the same, divided by its third row's value)."""
    rows = matrix.tolist()
    (a, b, c), (d, e, f) = rows[:2]
    new_x, new_y = a * x + b * y + c, d * x + e * y + f
    if len(rows) == 3:
        g, h, i = rows[2]
        den = g * x + h * y + i
        new_x, new_y = new_x / den, new_y / den
    return new_x, new_y


def _move_corners(boxes: Tensor, fmt: BoundingBoxFormat, matrix: np.ndarray,
                  keep_float: bool = False) -> Tensor:
    """The boxes enclosing the four corners of each axis-aligned box mapped by ``matrix``
    (see :func:`_move_points`), in ``fmt`` and the boxes' dtype (floating with
    ``keep_float``)."""
    shape = boxes.shape
    xyxy = _to_xyxy(boxes.reshape(-1, 4), fmt)
    new_x, new_y = _move_points(xyxy[:, [0, 2, 2, 0]], xyxy[:, [1, 1, 3, 3]], matrix)
    out = ember.stack((new_x.amin(1), new_y.amin(1), new_x.amax(1), new_y.amax(1)), dim=-1)
    return _from_xyxy(out, fmt, out.dtype if keep_float else boxes.dtype).reshape(shape)


def _map_boxes(boxes: Tensor, fmt: BoundingBoxFormat, matrix: np.ndarray, canvas_size: Canvas,
               clamping_mode: Mode) -> Tensor:
    """Boxes mapped by ``matrix`` and clamped to ``canvas_size``: axis-aligned ones enclose
    their mapped corners, rotated ones are their mapped corners made a rectangle. Integer
    boxes are clamped as floats and truncated once at the end, as in torchvision."""
    if not is_rotated_bounding_format(fmt):
        moved = _move_corners(boxes, fmt, matrix, keep_float=True)
        return _clamp(moved, fmt, canvas_size, clamping_mode).to(boxes.dtype)
    corners = _convert(boxes, fmt, _XYXYXYXY).reshape(-1, 8)
    x, y = _move_points(corners[:, 0::2], corners[:, 1::2], matrix)
    moved = rectangle_from_parallelogram(ember.stack((x, y), dim=-1).reshape(-1, 8))
    clamped = _clamp(moved, _XYXYXYXY, canvas_size, clamping_mode)
    return _convert(clamped, _XYXYXYXY, fmt).reshape(boxes.shape)


def horizontal_flip_bounding_boxes(bounding_boxes: Tensor, format: BoundingBoxFormat,
                                   canvas_size: Canvas) -> Tensor:
    """Boxes mirrored left-right on the canvas: ``x -> width - x``.

    Example:
        >>> horizontal_flip_bounding_boxes(ember.tensor([[1.0, 2.0, 3.0, 4.0]]),
        ...                                BoundingBoxFormat.XYXY, (8, 10))
        tensor([[7., 2., 9., 4.]])
    """
    if is_rotated_bounding_format(format):
        return flip_rotated(bounding_boxes, format, canvas_size[1], horizontal=True)
    return _move_corners(bounding_boxes, format,
                         np.array([[-1.0, 0.0, canvas_size[1]], [0.0, 1.0, 0.0]]))


def vertical_flip_bounding_boxes(bounding_boxes: Tensor, format: BoundingBoxFormat,
                                 canvas_size: Canvas) -> Tensor:
    """Boxes mirrored top-bottom on the canvas: ``y -> height - y``.

    Example:
        >>> vertical_flip_bounding_boxes(ember.tensor([[1.0, 2.0, 3.0, 4.0]]),
        ...                              BoundingBoxFormat.XYXY, (8, 10))
        tensor([[1., 4., 3., 6.]])
    """
    if is_rotated_bounding_format(format):
        return flip_rotated(bounding_boxes, format, canvas_size[0], horizontal=False)
    return _move_corners(bounding_boxes, format,
                         np.array([[1.0, 0.0, 0.0], [0.0, -1.0, canvas_size[0]]]))


def resize_bounding_boxes(bounding_boxes: Tensor, canvas_size: Canvas,
                          size: int | Sequence[int] | None, max_size: int | None = None,
                          format: BoundingBoxFormat = BoundingBoxFormat.XYXY,
                          clamping_mode: Mode = "soft") -> tuple[Tensor, Canvas]:
    """Boxes scaled with the canvas resized to ``size`` (as ``resize`` computes it), and the
    new canvas size. Axis-aligned boxes scale in any format and are not clamped; rotated
    ones (``format``) become rectangles again and are clamped in ``clamping_mode``, as in
    torchvision.

    Example:
        >>> resize_bounding_boxes(ember.tensor([[2.0, 2.0, 4.0, 6.0]]), (8, 8), (4, 16))
        (tensor([[4., 1., 8., 3.]]), (4, 16))
    """
    height, width = canvas_size
    new_h, new_w = _output_size(height, width, size, max_size)
    if is_rotated_bounding_format(format):
        if (new_h, new_w) == (height, width):
            return bounding_boxes, canvas_size
        scale = np.array([[new_w / width, 0.0, 0.0], [0.0, new_h / height, 0.0]])
        out = _map_boxes(bounding_boxes, format, scale, (new_h, new_w), clamping_mode)
        return out.to(bounding_boxes.dtype), (new_h, new_w)
    ratios = ember.tensor([new_w / width, new_h / height] * 2,
                          dtype=bounding_boxes.dtype if bounding_boxes.is_floating_point()
                          else ember.get_default_dtype())
    return (bounding_boxes * ratios).to(bounding_boxes.dtype), (new_h, new_w)


def _translate(boxes: Tensor, fmt: BoundingBoxFormat, dx: float, dy: float) -> Tensor:
    """Boxes moved by ``(dx, dy)``."""
    if is_rotated_bounding_format(fmt):
        return shift_rotated(boxes, fmt, dx, dy)
    return _move_corners(boxes, fmt, np.array([[1.0, 0.0, dx], [0.0, 1.0, dy]]))


def crop_bounding_boxes(bounding_boxes: Tensor, format: BoundingBoxFormat, top: int, left: int,
                        height: int, width: int, clamping_mode: Mode = "soft"
                        ) -> tuple[Tensor, Canvas]:
    """Boxes in the ``height`` x ``width`` window at (``top``, ``left``), clamped to it in
    ``clamping_mode`` (``XYXYXYXY`` boxes are made rectangles first, as in torchvision).

    Example:
        >>> crop_bounding_boxes(ember.tensor([[2.0, 2.0, 6.0, 6.0]]), BoundingBoxFormat.XYXY,
        ...                     1, 3, 4, 2)
        (tensor([[0., 1., 2., 4.]]), (4, 2))
    """
    moved = _translate(bounding_boxes, format, -left, -top)
    if format is _XYXYXYXY:
        moved = rectangle_from_parallelogram(moved)
    return _clamp(moved, format, (height, width), clamping_mode), (height, width)


def pad_bounding_boxes(bounding_boxes: Tensor, format: BoundingBoxFormat, canvas_size: Canvas,
                       padding: int | Sequence[int], padding_mode: str = "constant",
                       clamping_mode: Mode = "soft") -> tuple[Tensor, Canvas]:
    """Boxes on the canvas grown by ``padding`` (torchvision's forms), clamped to it in
    ``clamping_mode``.

    Example:
        >>> pad_bounding_boxes(ember.tensor([[0.0, 0.0, 2.0, 2.0]]), BoundingBoxFormat.XYXY,
        ...                    (4, 4), [1, 2])
        (tensor([[1., 2., 3., 4.]]), (8, 6))
    """
    if padding_mode != "constant":
        raise ArgumentError(f"pad: padding mode {padding_mode!r} is not supported with bounding "
                            "boxes; use 'constant'")
    left, top, right, bottom = _padding4(padding)
    canvas = (canvas_size[0] + top + bottom, canvas_size[1] + left + right)
    moved = _translate(bounding_boxes, format, left, top)
    return _clamp(moved, format, canvas, clamping_mode), canvas


def _forward_affine(inverse: np.ndarray, canvas_size: Canvas) -> np.ndarray:
    """The pixel-coordinate map whose inverse, in coordinates relative to the canvas centre,
    is ``inverse`` (the matrix the image kernels sample with)."""
    half = np.array([canvas_size[1] * 0.5, canvas_size[0] * 0.5])
    forward = np.linalg.inv(np.vstack([inverse, [0.0, 0.0, 1.0]]))[:2]
    forward[:, 2] += half - forward[:, :2] @ half
    return forward


def quarter_turns(angle: float, center: Sequence[float] | None, expand: bool,
                  canvas_size: Canvas) -> int | None:
    """How many quarter turns ``rotate`` makes when torchvision's v2 rotates exactly (0, 180,
    or 90 and 270 degrees when expanding or square, about the centre), else None.

    Example:
        >>> quarter_turns(-90, None, True, (3, 5)), quarter_turns(30, None, True, (3, 5))
        (3, None)
    """
    angle = angle % 360
    if center is not None or angle % 90 != 0:
        return None
    if angle in (90, 270) and not (expand or canvas_size[0] == canvas_size[1]):
        return None
    return int(angle // 90)


def _forward_map(inverse: np.ndarray, canvas_size: Canvas, expand: bool,
                 turns: int | None = None) -> tuple[np.ndarray, Canvas]:
    """The forward pixel-coordinate map of a warp sampling with ``inverse`` and the canvas it
    draws on: with ``expand``, grown to hold the whole image and shifted onto it (an exact
    quarter turn's canvas is the image's, turned)."""
    forward = _forward_affine(inverse, canvas_size)
    if expand:
        height, width = canvas_size
        corners = np.array([[0.0, 0.0, 1.0], [0.0, height, 1.0], [width, height, 1.0],
                            [width, 0.0, 1.0]]) @ forward.T
        forward[:, 2] -= corners.min(0)
        new_w, new_h = _expanded_size(inverse, width, height)
        if turns is not None:
            new_w, new_h = (height, width) if turns % 2 else (width, height)
        canvas_size = (new_h, new_w)
    return forward, canvas_size


def _warp(boxes: Tensor, fmt: BoundingBoxFormat, canvas_size: Canvas, inverse: np.ndarray,
          expand: bool, clamping_mode: Mode, turns: int | None = None
          ) -> tuple[Tensor, Canvas]:
    forward, canvas_size = _forward_map(inverse, canvas_size, expand, turns)
    if boxes.numel() == 0:  # the canvas still grows with the image
        return boxes, canvas_size
    return _map_boxes(boxes, fmt, forward, canvas_size, clamping_mode), canvas_size


def _affine_inverse(canvas_size: Canvas, angle: float, translate: Sequence[float],
                    scale: float, shear: float | Sequence[float],
                    center: Sequence[float] | None) -> np.ndarray:
    """The inverse map :func:`affine` samples the image with (its arguments checked as the
    image's: a positive scale, two translations, one or two shears)."""
    height, width = canvas_size
    return _checked_affine_inverse(_centre("affine", center, width, height), angle, translate,
                                   scale, shear)


def _rotate_inverse(canvas_size: Canvas, angle: float,
                    center: Sequence[float] | None) -> np.ndarray:
    """The inverse map :func:`rotate` samples the image with."""
    height, width = canvas_size
    return _inverse_affine(_centre("rotate", center, width, height), -angle, (0.0, 0.0), 1.0,
                           (0.0, 0.0))


def affine_bounding_boxes(bounding_boxes: Tensor, format: BoundingBoxFormat,
                          canvas_size: Canvas, angle: float, translate: Sequence[float],
                          scale: float, shear: float | Sequence[float],
                          center: Sequence[float] | None = None,
                          clamping_mode: Mode = "soft") -> Tensor:
    """Boxes enclosing the corners moved by :func:`affine`'s map (rotated boxes: the moved
    corners made a rectangle), clamped to the canvas in ``clamping_mode``.

    Example:
        >>> affine_bounding_boxes(ember.tensor([[0.0, 0.0, 2.0, 2.0]]), BoundingBoxFormat.XYXY,
        ...                       (4, 4), 0.0, [1, 1], 1.0, 0.0)
        tensor([[1., 1., 3., 3.]])
    """
    inverse = _affine_inverse(canvas_size, angle, translate, scale, shear, center)
    return _warp(bounding_boxes, format, canvas_size, inverse, False, clamping_mode)[0]


def rotate_bounding_boxes(bounding_boxes: Tensor, format: BoundingBoxFormat,
                          canvas_size: Canvas, angle: float, expand: bool = False,
                          center: Sequence[float] | None = None,
                          clamping_mode: Mode = "soft") -> tuple[Tensor, Canvas]:
    """Boxes enclosing the corners rotated by ``angle`` degrees counter-clockwise, as
    :func:`rotate` turns the image (rotated boxes: the rotated box), clamped in
    ``clamping_mode``, and the canvas size (grown with ``expand``).

    Example:
        >>> rotate_bounding_boxes(ember.tensor([[0.0, 0.0, 2.0, 1.0]]), BoundingBoxFormat.XYXY,
        ...                       (4, 4), 90.0)
        (tensor([[0., 2., 1., 4.]]), (4, 4))
    """
    inverse = _rotate_inverse(canvas_size, angle, center)
    return _warp(bounding_boxes, format, canvas_size, inverse, expand, clamping_mode,
                 quarter_turns(angle, center, expand, canvas_size))


