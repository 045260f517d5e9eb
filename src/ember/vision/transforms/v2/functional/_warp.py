"""The ``v2.functional`` warps and multi-crops: ``perspective`` and ``elastic`` move images,
videos, masks (nearest), boxes (their corners) and key points; ``five_crop`` and ``ten_crop``
cut images and videos into a tuple of crops."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

import ember
from ember.errors import ArgumentError
from ember.tensor import Tensor
from ember.vision import tv_tensors
from ember.vision.transforms import functional as TF
from ember.vision.transforms._image import (
    InterpolationMode,
    _check_image,
    _grid_transform,
    _tensor_op,
    _to_float,
)
from ember.vision.transforms._pil import accepts_pil
from ember.vision.transforms._pil_geometry import by_pillow, transform_pil
from ember.vision.transforms.v2.functional._box_geometry import _map_boxes, _move_corners
from ember.vision.transforms.v2.functional._geometry import (
    _IMAGES,
    _NEAREST,
    Fill,
    _boxes_out,
    _warp_mask,
)
from ember.vision.transforms.v2.functional._keypoints import (
    _computed_in,
    _keypoints_out,
    _map_keypoints,
)
from ember.vision.transforms.v2.functional._meta import _clamp, _convert, _from_xyxy, _to_xyxy
from ember.vision.transforms.v2.functional._type_conversion import to_pure_tensor
from ember.vision.transforms.v2.functional._utils import _dispatch, _register_kernel_internal
from ember.vision.transforms.warp import _perspective_coeffs, _perspective_grid
from ember.vision.tv_tensors import (
    BoundingBoxes,
    BoundingBoxFormat,
    Image,
    KeyPoints,
    Mask,
    Video,
    is_rotated_bounding_format,
)

__all__ = ["elastic", "elastic_keypoints", "elastic_transform", "five_crop", "perspective",
           "perspective_keypoints", "ten_crop"]

Points = Sequence[Sequence[float]] | None
_CXCYWHR = BoundingBoxFormat.CXCYWHR
_XYXY = BoundingBoxFormat.XYXY


def _coefficients(startpoints: Points, endpoints: Points,
                  coefficients: Sequence[float] | None) -> list[float]:
    """The eight coefficients of the map from an output position to its source, given or
    solved from the corners (one of the two, as torchvision asks)."""
    if coefficients is not None:
        if startpoints is not None or endpoints is not None:
            raise ArgumentError("perspective: the startpoints/endpoints and the coefficients "
                                "arguments are mutually exclusive")
        if len(coefficients) != 8:
            raise ArgumentError(f"perspective: the coefficients should be 8 numbers, got "
                                f"{len(coefficients)}")
        return [float(c) for c in coefficients]
    if startpoints is None or endpoints is None:
        raise ArgumentError("perspective: give either the startpoints and endpoints, or the "
                            "coefficients")
    return _perspective_coeffs(startpoints, endpoints)


def _forward_homography(coeffs: Sequence[float]) -> np.ndarray:
    """The 3x3 map from a source position to its output position (the inverse of the
    sampling map the coefficients describe)."""
    a, b, c, d, e, f, g, h = coeffs
    sampling = np.array([[a, b, c], [d, e, f], [g, h, 1.0]], np.float64)
    if abs(np.linalg.det(sampling)) < 1e-12:
        raise ArgumentError(f"perspective: the coefficients {list(coeffs)} cannot be inverted to "
                            "move boxes or key points (are the corners distinct?)")
    forward = np.linalg.inv(sampling)
    # scaled as torchvision's (a last entry of 1), so float32 positions round as its do
    return forward / forward[2, 2] if forward[2, 2] != 0 else forward


def perspective(inpt: Tensor, startpoints: Points, endpoints: Points,
                interpolation: InterpolationMode = InterpolationMode.BILINEAR,
                fill: Fill = None, coefficients: Sequence[float] | None = None) -> Tensor:
    """The perspective warp moving the corners ``startpoints`` to ``endpoints`` (or given by
    its eight ``coefficients``, output to input); boxes become the boxes enclosing their
    warped corners, clamped to the canvas; key points move by the same map.

    Example:
        >>> corners = [[0, 0], [3, 0], [3, 3], [0, 3]]
        >>> k = tv_tensors.KeyPoints([[1.0, 2.0]], canvas_size=(4, 4))
        >>> perspective(k, corners, corners).tolist()
        [[1.0, 2.0]]
    """
    return _dispatch(perspective, inpt, startpoints, endpoints, interpolation=interpolation,
                     fill=fill, coefficients=coefficients)


@_tensor_op
def _perspective_tensor(img: Tensor, startpoints: Points, endpoints: Points,
                        interpolation: InterpolationMode = InterpolationMode.BILINEAR,
                        fill: Fill = None, coefficients: Sequence[float] | None = None
                        ) -> Tensor:
    coeffs = _coefficients(startpoints, endpoints, coefficients)
    _check_image("perspective", img, any_int=True)
    h, w = img.shape[-2:]
    return _grid_transform(img, _perspective_grid(coeffs, w, h, _to_float(img).dtype),
                           interpolation, fill, "perspective")


def _perspective_pil(img: Any, startpoints: Points, endpoints: Points,
                     interpolation: InterpolationMode = InterpolationMode.BILINEAR,
                     fill: Fill = None, coefficients: Sequence[float] | None = None) -> Any:
    coeffs = _coefficients(startpoints, endpoints, coefficients)
    return transform_pil("perspective", img, "perspective", coeffs, interpolation, fill)


# a PIL image is warped by Pillow, as torchvision's PIL path (see transforms._pil_geometry)
_register_kernel_internal(perspective, *_IMAGES)(
    accepts_pil(_perspective_tensor, pillow=_perspective_pil, use_pillow=by_pillow))


@_register_kernel_internal(perspective, Mask)
def _perspective_mask(mask: Tensor, startpoints: Points, endpoints: Points, fill: Fill = None,
                      coefficients: Sequence[float] | None = None, **_: Any) -> Tensor:
    return _warp_mask("perspective", _perspective_tensor, mask, fill, startpoints,
                      endpoints, _NEAREST, coefficients=coefficients)


@_register_kernel_internal(perspective, BoundingBoxes, tv_tensor_wrapper=False)
def _perspective_boxes(inpt: BoundingBoxes, startpoints: Points, endpoints: Points,
                       coefficients: Sequence[float] | None = None, **_: Any) -> BoundingBoxes:
    forward = _forward_homography(_coefficients(startpoints, endpoints, coefficients))
    boxes, fmt = to_pure_tensor(inpt), inpt.format
    if boxes.numel() == 0:
        return _boxes_out(inpt, boxes)
    if boxes.is_floating_point() or is_rotated_bounding_format(fmt):
        return _boxes_out(inpt, _map_boxes(boxes, fmt, forward, inpt.canvas_size,
                                           inpt.clamping_mode))
    # torchvision's perspective (not its affine or rotate) converts integer boxes to XYXY in
    # integers before mapping them ("TODO: first cast to float"): a CXCYWH box of odd size
    # moves by half a pixel there; as torchvision, for the same integers
    moved = _move_corners(_convert(boxes, fmt, _XYXY), _XYXY, forward, keep_float=True)
    clamped = _clamp(moved, _XYXY, inpt.canvas_size, inpt.clamping_mode)
    return _boxes_out(inpt, _convert(clamped, _XYXY, fmt).to(boxes.dtype))


def perspective_keypoints(keypoints: Tensor, canvas_size: Sequence[int], startpoints: Points,
                          endpoints: Points, coefficients: Sequence[float] | None = None
                          ) -> Tensor:
    """Points ``(..., 2)`` moved by :func:`perspective`'s warp (``canvas_size`` is taken for
    torchvision's signature: the canvas does not change).

    Example:
        >>> corners = [[0, 0], [3, 0], [3, 3], [0, 3]]
        >>> perspective_keypoints(ember.tensor([[1.0, 2.0]]), (4, 4), corners, corners)
        tensor([[1., 2.]])
    """
    forward = _forward_homography(_coefficients(startpoints, endpoints, coefficients))
    return _map_keypoints(keypoints, forward)


@_register_kernel_internal(perspective, KeyPoints, tv_tensor_wrapper=False)
def _perspective_keypoints(inpt: KeyPoints, startpoints: Points, endpoints: Points,
                           coefficients: Sequence[float] | None = None, **_: Any) -> KeyPoints:
    return _keypoints_out(inpt, perspective_keypoints(to_pure_tensor(inpt), inpt.canvas_size,
                                                      startpoints, endpoints, coefficients))


def elastic(inpt: Tensor, displacement: Tensor,
            interpolation: InterpolationMode = InterpolationMode.BILINEAR,
            fill: Fill = None) -> Tensor:
    """Moves each pixel's sampling position by ``displacement`` (``(1, H, W, 2)``, in grid
    units: 2 spans the image); a box corner or key point moves back by the displacement of
    the pixel it lies on (torchvision's first-order inverse), boxes then clamped.

    Example:
        >>> k = tv_tensors.KeyPoints([[1.0, 1.0]], canvas_size=(2, 4))
        >>> shift = ember.zeros(1, 2, 4, 2) + ember.tensor([0.5, 0.0])  # a quarter width
        >>> elastic(k, shift).tolist()
        [[0.0, 1.0]]
    """
    if not isinstance(displacement, Tensor):
        raise TypeError(f"elastic: displacement should be a tensor, got "
                        f"{type(displacement).__name__}")
    return _dispatch(elastic, inpt, displacement, interpolation=interpolation, fill=fill)


elastic_transform = elastic
_register_kernel_internal(elastic, *_IMAGES)(TF.elastic_transform)


@_register_kernel_internal(elastic, Mask)
def _elastic_mask(mask: Tensor, displacement: Tensor, fill: Fill = None, **_: Any) -> Tensor:
    return _warp_mask("elastic", TF.elastic_transform, mask, fill, displacement, _NEAREST)


def _displaced(x: Tensor, y: Tensor, displacement: Tensor, canvas_size: Sequence[int]
               ) -> tuple[Tensor, Tensor]:
    """Positions moved back by the displacement (in pixels) at the pixel each lies on."""
    height, width = canvas_size
    if tuple(displacement.shape) != (1, height, width, 2):
        raise ArgumentError(f"elastic: displacement shape should be {(1, height, width, 2)} for a "
                            f"canvas of {tuple(canvas_size)}, got {tuple(displacement.shape)}")
    ix = x.to(ember.int64).clamp(0, width - 1)
    iy = y.to(ember.int64).clamp(0, height - 1)
    shift = displacement[0].to(device=x.device)[iy, ix].to(x.dtype)  # on the points' device
    return x - shift[..., 0] * (width / 2), y - shift[..., 1] * (height / 2)


@_register_kernel_internal(elastic, BoundingBoxes, tv_tensor_wrapper=False)
def _elastic_boxes(inpt: BoundingBoxes, displacement: Tensor, **_: Any) -> BoundingBoxes:
    boxes = to_pure_tensor(inpt)
    if is_rotated_bounding_format(inpt.format):  # the centre moves, size and angle stay
        centred = _convert(boxes, inpt.format, _CXCYWHR).reshape(-1, 5)
        cx, cy = _displaced(centred[:, 0], centred[:, 1], displacement, inpt.canvas_size)
        moved = ember.cat((ember.stack((cx, cy), dim=-1), centred[:, 2:]), dim=-1)
        out = _clamp(moved, _CXCYWHR, inpt.canvas_size, inpt.clamping_mode)
        return _boxes_out(inpt, _convert(out, _CXCYWHR, inpt.format).reshape(boxes.shape))
    xyxy = _to_xyxy(boxes.reshape(-1, 4), inpt.format)
    xs, ys = _displaced(xyxy[:, [0, 2, 2, 0]], xyxy[:, [1, 1, 3, 3]], displacement,
                        inpt.canvas_size)
    out = ember.stack((xs.amin(1), ys.amin(1), xs.amax(1), ys.amax(1)), dim=-1)
    out = _from_xyxy(out, inpt.format, boxes.dtype).reshape(boxes.shape)
    return _boxes_out(inpt, _clamp(out, inpt.format, inpt.canvas_size, inpt.clamping_mode))


def elastic_keypoints(keypoints: Tensor, canvas_size: Sequence[int], displacement: Tensor
                      ) -> Tensor:
    """Points ``(..., 2)`` moved back by :func:`elastic`'s ``displacement`` (``(1, H, W, 2)``
    for a canvas ``(H, W)``) at the pixel each lies on; a point keeps its fraction of a pixel
    (torchvision's returns the pixel's index moved, clamped into the canvas).

    Example:
        >>> shift = ember.zeros(1, 2, 4, 2) + ember.tensor([0.5, 0.0])  # a quarter width
        >>> elastic_keypoints(ember.tensor([[1.5, 1.0]]), (2, 4), shift)
        tensor([[0.5000, 1.0000]])
    """
    if not isinstance(displacement, Tensor):
        raise TypeError(f"elastic_keypoints: displacement should be a tensor, got "
                        f"{type(displacement).__name__}")
    xy = keypoints.to(_computed_in(keypoints))
    x, y = _displaced(xy[..., 0], xy[..., 1], displacement, canvas_size)
    return ember.stack((x, y), dim=-1).to(keypoints.dtype)


@_register_kernel_internal(elastic, KeyPoints, tv_tensor_wrapper=False)
def _elastic_keypoints(inpt: KeyPoints, displacement: Tensor, **_: Any) -> KeyPoints:
    return _keypoints_out(inpt, elastic_keypoints(to_pure_tensor(inpt), inpt.canvas_size,
                                                  displacement))


def five_crop(inpt: Tensor, size: int | Sequence[int]) -> tuple[Tensor, ...]:
    """The top-left, top-right, bottom-left, bottom-right and central crops of ``size`` of an
    image or video, each of the input's type.

    Example:
        >>> [c.item() for c in five_crop(ember.arange(9).reshape(1, 3, 3), 1)]
        [0, 2, 6, 8, 4]
    """
    return _dispatch(five_crop, inpt, size)


def ten_crop(inpt: Tensor, size: int | Sequence[int], vertical_flip: bool = False
             ) -> tuple[Tensor, ...]:
    """:func:`five_crop` of the image or video, then of its mirror image (left-right, or
    top-bottom with ``vertical_flip``).

    Example:
        >>> len(ten_crop(tv_tensors.Image(ember.zeros(1, 4, 4)), 2))
        10
    """
    return _dispatch(ten_crop, inpt, size, vertical_flip=vertical_flip)


def _crops_like(kernel: Any) -> Any:
    """``kernel`` (giving a tuple of crops) with each crop of the input's tv_tensor type."""

    def typed(inpt: Tensor, *args: Any, **kwargs: Any) -> tuple[Tensor, ...]:
        crops = kernel(to_pure_tensor(inpt), *args, **kwargs)
        if not isinstance(inpt, tv_tensors.TVTensor):
            return crops
        return tuple(tv_tensors.wrap(c, like=inpt) for c in crops)

    return typed


for _functional, _kernel in ((five_crop, TF.five_crop), (ten_crop, TF.ten_crop)):
    _register_kernel_internal(_functional, Tensor, np.ndarray)(_kernel)
    _register_kernel_internal(_functional, Image, Video, tv_tensor_wrapper=False)(
        _crops_like(_kernel))
