"""The geometric kernels for key points, registered for ``KeyPoints`` with the geometric
``v2.functional`` functions. As torchvision's: a flip maps a point to its mirror pixel
(``x -> width - 1 - x``); resizes, rotations, affine and perspective warps map ``(x, y)`` by
the same continuous map as box corners (``resize`` scales it plainly); crops and pads shift
it. Points are not clamped to the canvas (``clamp_keypoints`` / ``ClampKeyPoints`` do that
when asked)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

import ember
from ember.errors import ArgumentError
from ember.tensor import Tensor
from ember.vision import tv_tensors
from ember.vision.transforms.basic import _padding4
from ember.vision.transforms.functional import _output_size
from ember.vision.transforms.v2.functional._box_geometry import (
    _affine_inverse,
    _forward_map,
    _move_points,
    _rotate_inverse,
    quarter_turns,
)
from ember.vision.transforms.v2.functional._geometry import (
    _center_crop_window,
    affine,
    center_crop,
    crop,
    horizontal_flip,
    pad,
    resize,
    resized_crop,
    rotate,
    vertical_flip,
)
from ember.vision.transforms.v2.functional._meta import get_size
from ember.vision.transforms.v2.functional._type_conversion import to_pure_tensor
from ember.vision.transforms.v2.functional._utils import _register_kernel_internal
from ember.vision.tv_tensors import KeyPoints

__all__ = ["affine_keypoints", "center_crop_keypoints", "clamp_keypoints", "crop_keypoints",
           "get_size_keypoints", "horizontal_flip_keypoints", "pad_keypoints",
           "resize_keypoints", "resized_crop_keypoints", "rotate_keypoints",
           "sanitize_keypoints", "vertical_flip_keypoints"]

Canvas = tuple[int, int]


def _computed_in(keypoints: Tensor) -> ember.DType:
    """The dtype key points are moved in: their own for float32 and float64; float32 for
    integers (truncated back, as torchvision's) and for float16 and bfloat16 (rounded back
    once, rather than at every step of the map)."""
    if keypoints.dtype in (ember.float32, ember.float64):
        return keypoints.dtype
    return ember.float32


def _map_keypoints(keypoints: Tensor, matrix: np.ndarray) -> Tensor:
    """Points mapped by ``matrix`` (see ``_move_points``), computed in :func:`_computed_in`'s
    dtype and returned in theirs."""
    xy = keypoints.to(_computed_in(keypoints))
    x, y = _move_points(xy[..., 0], xy[..., 1], matrix)
    return ember.stack((x, y), dim=-1).to(keypoints.dtype)


def horizontal_flip_keypoints(keypoints: Tensor, canvas_size: Canvas) -> Tensor:
    """Points mirrored left-right: ``x -> width - 1 - x``.

    Example:
        >>> horizontal_flip_keypoints(ember.tensor([[0.0, 2.0]]), (4, 5))
        tensor([[4., 2.]])
    """
    return _map_keypoints(keypoints, np.array([[-1.0, 0.0, canvas_size[1] - 1], [0.0, 1.0, 0.0]]))


def vertical_flip_keypoints(keypoints: Tensor, canvas_size: Canvas) -> Tensor:
    """Points mirrored top-bottom: ``y -> height - 1 - y``.

    Example:
        >>> vertical_flip_keypoints(ember.tensor([[0.0, 1.0]]), (4, 5))
        tensor([[0., 2.]])
    """
    return _map_keypoints(keypoints, np.array([[1.0, 0.0, 0.0], [0.0, -1.0, canvas_size[0] - 1]]))


def resize_keypoints(keypoints: Tensor, size: int | Sequence[int] | None, canvas_size: Canvas,
                     max_size: int | None = None) -> tuple[Tensor, Canvas]:
    """Points scaled plainly with the canvas resized to ``size`` (``x * new_width / width``,
    as torchvision's), and the new canvas size.

    Example:
        >>> resize_keypoints(ember.tensor([[1.5, 0.5]]), (4, 8), (2, 4))
        (tensor([[3., 1.]]), (4, 8))
    """
    height, width = canvas_size
    new_h, new_w = _output_size(height, width, size, max_size)
    matrix = np.array([[new_w / width, 0.0, 0.0], [0.0, new_h / height, 0.0]])
    return _map_keypoints(keypoints, matrix), (new_h, new_w)


def crop_keypoints(keypoints: Tensor, top: int, left: int, height: int, width: int
                   ) -> tuple[Tensor, Canvas]:
    """Points in the ``height`` x ``width`` window at (``top``, ``left``) (not clamped).

    Example:
        >>> crop_keypoints(ember.tensor([[5, 5]]), 1, 2, 3, 3)
        (tensor([[3, 4]]), (3, 3))
    """
    shift = np.array([[1.0, 0.0, -left], [0.0, 1.0, -top]])
    return _map_keypoints(keypoints, shift), (height, width)


def center_crop_keypoints(keypoints: Tensor, canvas_size: Canvas,
                          output_size: int | Sequence[int]) -> tuple[Tensor, Canvas]:
    """Points in the central ``output_size`` window of the canvas, where :func:`center_crop`
    puts the image (with an output larger than the canvas, torchvision's points can be a
    pixel off the image's; these stay on it).

    Example:
        >>> center_crop_keypoints(ember.tensor([[4.0, 3.0]]), (6, 8), [2, 4])
        (tensor([[2., 1.]]), (2, 4))
    """
    return crop_keypoints(keypoints, *_center_crop_window(canvas_size, output_size))


def resized_crop_keypoints(keypoints: Tensor, top: int, left: int, height: int, width: int,
                           size: int | Sequence[int]) -> tuple[Tensor, Canvas]:
    """Points of :func:`crop_keypoints`' window resized to ``size``, and the new canvas.

    Example:
        >>> resized_crop_keypoints(ember.tensor([[3.0, 2.0]]), 1, 2, 2, 4, [4, 8])
        (tensor([[2., 2.]]), (4, 8))
    """
    cropped, canvas = crop_keypoints(keypoints, top, left, height, width)
    return resize_keypoints(cropped, size, canvas)


def get_size_keypoints(keypoints: KeyPoints) -> list[int]:
    """``[height, width]`` of the key points' canvas.

    Example:
        >>> get_size_keypoints(tv_tensors.KeyPoints([[1, 2]], canvas_size=(6, 7)))
        [6, 7]
    """
    return list(keypoints.canvas_size)


def pad_keypoints(keypoints: Tensor, canvas_size: Canvas, padding: int | Sequence[int],
                  padding_mode: str = "constant") -> tuple[Tensor, Canvas]:
    """Points on the canvas grown by ``padding`` (torchvision's forms).

    Example:
        >>> pad_keypoints(ember.tensor([[0, 0]]), (4, 4), [1, 2])
        (tensor([[1, 2]]), (8, 6))
    """
    if padding_mode != "constant":
        raise ArgumentError(f"pad: padding mode {padding_mode!r} is not supported with key points; "
                            "use 'constant'")
    left, top, right, bottom = _padding4(padding)
    canvas = (canvas_size[0] + top + bottom, canvas_size[1] + left + right)
    return _map_keypoints(keypoints, np.array([[1.0, 0.0, left], [0.0, 1.0, top]])), canvas


def rotate_keypoints(keypoints: Tensor, canvas_size: Canvas, angle: float, expand: bool = False,
                     center: Sequence[float] | None = None) -> tuple[Tensor, Canvas]:
    """Points rotated by ``angle`` degrees counter-clockwise, as :func:`rotate` turns the
    image, and the canvas size (grown with ``expand``). As torchvision, about the canvas
    centre ``(width / 2, height / 2)`` by default: the top-left corner goes to the bottom-left.

    Example:
        >>> rotate_keypoints(ember.tensor([[0.0, 0.0]]), (4, 4), 90.0)
        (tensor([[0., 4.]]), (4, 4))
    """
    inverse = _rotate_inverse(canvas_size, angle, center)
    forward, canvas = _forward_map(inverse, canvas_size, expand,
                                   quarter_turns(angle, center, expand, canvas_size))
    if not expand:
        return _map_keypoints(keypoints, forward), canvas
    # as torchvision's: mapped, then shifted by the least mapped canvas corner, both in the
    # dtype the points are computed in (so integer points truncate as its do)
    unshifted, dtype = _forward_map(inverse, canvas_size, False)[0], _computed_in(keypoints)
    height, width = canvas_size
    corners = ember.tensor([[0, 0], [0, height], [width, height], [width, 0]], dtype=dtype,
                           device=keypoints.device)
    shift = _map_keypoints(corners, unshifted).amin(0)
    return (_map_keypoints(keypoints.to(dtype), unshifted) - shift).to(keypoints.dtype), canvas


def affine_keypoints(keypoints: Tensor, canvas_size: Canvas, angle: float,
                     translate: Sequence[float], scale: float, shear: float | Sequence[float],
                     center: Sequence[float] | None = None) -> tuple[Tensor, Canvas]:
    """Points moved by :func:`affine`'s map, and the (unchanged) canvas size, as torchvision's.

    Example:
        >>> affine_keypoints(ember.tensor([[0.0, 0.0]]), (4, 4), 0.0, [1, 2], 1.0, 0.0)
        (tensor([[1., 2.]]), (4, 4))
    """
    inverse = _affine_inverse(canvas_size, angle, translate, scale, shear, center)
    return _map_keypoints(keypoints, _forward_map(inverse, canvas_size, False)[0]), canvas_size


def clamp_keypoints(inpt: Tensor, canvas_size: Canvas | None = None) -> Tensor:
    """Points moved inside the canvas: ``x`` to ``[0, width - 1]``, ``y`` to
    ``[0, height - 1]``; ``canvas_size`` is given for a pure tensor only.

    Example:
        >>> k = tv_tensors.KeyPoints([[-1, 2], [9, 9]], canvas_size=(4, 6))
        >>> clamp_keypoints(k).tolist()
        [[0, 2], [5, 3]]
    """
    canvas_size = _canvas_of("clamp_keypoints", inpt, canvas_size)
    plain = to_pure_tensor(inpt)
    out = ember.stack((plain[..., 0].clamp(0, canvas_size[1] - 1),
                       plain[..., 1].clamp(0, canvas_size[0] - 1)), dim=-1)
    return tv_tensors.wrap(out, like=inpt) if isinstance(inpt, KeyPoints) else out


def _canvas_of(op: str, inpt: Tensor, canvas_size: Canvas | None) -> Canvas:
    """A KeyPoints' own canvas, or the one given with a pure tensor (exactly one of them)."""
    if isinstance(inpt, KeyPoints):
        if canvas_size is not None:
            raise ArgumentError(f"{op}: for KeyPoints inputs, canvas_size must not be passed; it "
                                f"comes from the key points")
        return inpt.canvas_size
    if canvas_size is None:
        raise ArgumentError(f"{op}: for pure tensor inputs, canvas_size must be passed")
    return canvas_size


def sanitize_keypoints(key_points: Tensor, canvas_size: Canvas | None = None
                       ) -> tuple[Tensor, Tensor]:
    """``(kept, valid)``: the key points inside the canvas (``0 <= x < width``,
    ``0 <= y < height``, as torchvision's) and the
    boolean mask over the first dim that selects them, to subset labels with. Points of shape
    ``(N, 2)`` are kept one by one; groups ``(N, ..., 2)`` (polygons, skeletons) are kept or
    removed whole: a group with any point outside goes. ``canvas_size`` is given for a pure
    tensor only.

    Example:
        >>> k = tv_tensors.KeyPoints([[1, 2], [-1, 2], [5, 3], [6, 0]], canvas_size=(4, 6))
        >>> kept, valid = sanitize_keypoints(k)
        >>> kept.tolist(), valid.tolist()
        ([[1, 2], [5, 3]], [True, False, True, False])
    """
    if not isinstance(key_points, Tensor):
        raise TypeError(f"sanitize_keypoints: key_points must be a tensor or KeyPoints, got "
                        f"{type(key_points).__name__}")
    height, width = _canvas_of("sanitize_keypoints", key_points, canvas_size)
    if key_points.ndim < 2 or key_points.shape[-1] != 2:
        raise ArgumentError(f"sanitize_keypoints: expected key points of shape (N, ..., 2), got "
                            f"{tuple(key_points.shape)}")
    plain = to_pure_tensor(key_points)
    x, y = plain[..., 0], plain[..., 1]
    inside = (x >= 0) & (x < width) & (y >= 0) & (y < height)
    valid = inside.flatten(1).all(dim=1) if inside.ndim > 1 else inside
    kept = plain[valid]
    return (tv_tensors.wrap(kept, like=key_points) if isinstance(key_points, KeyPoints)
            else kept), valid


def _keypoints_out(inpt: KeyPoints, out: Tensor | tuple[Tensor, Canvas]) -> KeyPoints:
    if isinstance(out, tuple):
        return tv_tensors.wrap(out[0], like=inpt, canvas_size=out[1])
    return tv_tensors.wrap(out, like=inpt)


def _register(functional: Any) -> Any:
    return _register_kernel_internal(functional, KeyPoints, tv_tensor_wrapper=False)


@_register(horizontal_flip)
def _hflip(inpt: KeyPoints) -> KeyPoints:
    return _keypoints_out(inpt, horizontal_flip_keypoints(to_pure_tensor(inpt), inpt.canvas_size))


@_register(vertical_flip)
def _vflip(inpt: KeyPoints) -> KeyPoints:
    return _keypoints_out(inpt, vertical_flip_keypoints(to_pure_tensor(inpt), inpt.canvas_size))


@_register(resize)
def _resize(inpt: KeyPoints, size: int | Sequence[int], max_size: int | None = None,
            **_: Any) -> KeyPoints:
    return _keypoints_out(inpt, resize_keypoints(to_pure_tensor(inpt), size, inpt.canvas_size,
                                                 max_size))


@_register(crop)
def _crop(inpt: KeyPoints, top: int, left: int, height: int, width: int) -> KeyPoints:
    return _keypoints_out(inpt, crop_keypoints(to_pure_tensor(inpt), top, left, height, width))


@_register(center_crop)
def _center_crop(inpt: KeyPoints, output_size: int | Sequence[int]) -> KeyPoints:
    return _keypoints_out(inpt, center_crop_keypoints(to_pure_tensor(inpt), inpt.canvas_size,
                                                      output_size))


@_register(pad)
def _pad(inpt: KeyPoints, padding: int | Sequence[int], padding_mode: str = "constant",
         **_: Any) -> KeyPoints:
    return _keypoints_out(inpt, pad_keypoints(to_pure_tensor(inpt), inpt.canvas_size, padding,
                                              padding_mode))


@_register(rotate)
def _rotate(inpt: KeyPoints, angle: float, expand: bool = False,
            center: Sequence[float] | None = None, **_: Any) -> KeyPoints:
    return _keypoints_out(inpt, rotate_keypoints(to_pure_tensor(inpt), inpt.canvas_size, angle,
                                                 expand, center))


@_register(affine)
def _affine(inpt: KeyPoints, angle: float, translate: Sequence[float], scale: float,
            shear: float | Sequence[float], center: Sequence[float] | None = None,
            **_: Any) -> KeyPoints:
    return _keypoints_out(inpt, affine_keypoints(to_pure_tensor(inpt), inpt.canvas_size, angle,
                                                 translate, scale, shear, center))


@_register(resized_crop)
def _resized_crop(inpt: KeyPoints, top: int, left: int, height: int, width: int,
                  size: int | Sequence[int], **_: Any) -> KeyPoints:
    return _keypoints_out(inpt, resized_crop_keypoints(to_pure_tensor(inpt), top, left, height,
                                                       width, size))

_register(get_size)(get_size_keypoints)
