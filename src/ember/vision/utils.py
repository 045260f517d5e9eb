"""Looking at images, under torchvision's names: tile a batch into one grid image, save it as a
PNG, and draw boxes or segmentation masks onto images.

Example:
    >>> from ember.vision.utils import make_grid
    >>> make_grid(ember.rand(10, 3, 8, 8), nrow=5).shape    # 2 rows of 5, 2-pixel gaps
    ember.Size([3, 22, 52])
"""

from __future__ import annotations

import math
import os
import warnings
from collections.abc import Sequence
from typing import Any

import numpy as np

import ember
import ember.nn.functional as F
from ember.errors import ArgumentError, ShapeError
from ember.tensor import Tensor

__all__ = ["draw_bounding_boxes", "draw_keypoints", "draw_segmentation_masks", "flow_to_image",
           "make_grid", "save_image"]

Color = str | tuple[int, int, int]


def make_grid(tensor: Tensor | list[Tensor], nrow: int = 8, padding: int = 2,
              normalize: bool = False, value_range: tuple[float, float] | None = None,
              scale_each: bool = False, pad_value: float = 0.0) -> Tensor:
    """Tiles a batch of images ``(B, C, H, W)`` (or a list of ``(C, H, W)``) into one
    ``(C, H', W')`` image, ``nrow`` per row, ``padding`` pixels of ``pad_value`` between and
    around them. One-channel images become three-channel. ``normalize`` maps ``value_range``
    (default: the batch's, or each image's with ``scale_each``) to ``[0, 1]``. A single image
    comes back without padding. Differentiable.

    Example:
        >>> make_grid(ember.zeros(4, 1, 2, 2), nrow=2, padding=1).shape
        ember.Size([3, 7, 7])
    """
    if isinstance(tensor, list):
        for t in tensor:
            if not isinstance(t, Tensor):
                raise TypeError(f"make_grid: tensor or list of tensors expected, got a list "
                                f"containing {type(t).__name__}")
        tensor = ember.stack(tensor)
    if not isinstance(tensor, Tensor):
        raise TypeError(f"make_grid: tensor or list of tensors expected, got "
                        f"{type(tensor).__name__}")
    if tensor.ndim == 2:
        tensor = tensor.unsqueeze(0)
    if tensor.ndim == 3:
        tensor = tensor.unsqueeze(0)
    if tensor.ndim != 4:
        raise ShapeError(f"make_grid: expected images (B, C, H, W), (C, H, W) or (H, W), got "
                         f"shape {tuple(tensor.shape)}")
    if tensor.shape[1] == 1:
        tensor = tensor.expand(-1, 3, -1, -1)
    if normalize:
        if value_range is not None and not isinstance(value_range, tuple):
            raise TypeError("make_grid: value_range has to be a tuple (min, max) if specified")
        tensor = ember.stack([_scale(t, value_range) for t in tensor]) if scale_each \
            else _scale(tensor, value_range)
    if tensor.shape[0] == 1:
        return tensor.squeeze(0)
    count, channels, height, width = tensor.shape
    cols = min(nrow, count)
    rows = math.ceil(count / cols)
    if rows * cols > count:  # the empty cells are background
        blank = ember.full((rows * cols - count, channels, height, width), pad_value,
                           dtype=tensor.dtype)
        tensor = ember.cat((tensor, blank))
    cells = F.pad(tensor, (padding, 0, padding, 0), value=pad_value)  # gap above and left
    grid = cells.reshape(rows, cols, channels, height + padding, width + padding)
    grid = grid.permute(2, 0, 3, 1, 4).reshape(channels, rows * (height + padding),
                                               cols * (width + padding))
    return F.pad(grid, (0, padding, 0, padding), value=pad_value)


def _scale(t: Tensor, value_range: tuple[float, float] | None) -> Tensor:
    low, high = value_range if value_range is not None else (float(t.min()), float(t.max()))
    return (t.clamp(min=low, max=high) - low) / max(high - low, 1e-5)


def save_image(tensor: Tensor | list[Tensor], fp: str | os.PathLike | Any,
               format: str | None = None, **kwargs: Any) -> None:
    """Saves images in ``[0, 1]`` as one picture (a :func:`make_grid` of them, which takes
    ``kwargs``), rounding to 8 bits; the format comes from the file name unless given. Needs
    Pillow (``pip install pillow``).

    Example:
        >>> save_image(ember.rand(4, 3, 8, 8), "samples.png", nrow=2)  # doctest: +SKIP
    """
    image = _pil()
    grid = make_grid(tensor, **kwargs).detach()
    if not grid.dtype.is_floating_point:  # (torchvision's grid.mul(255).add_(0.5) fails too)
        raise ember.DTypeError(f"save_image: expected a floating image in [0, 1], got "
                               f"{grid.dtype} (255 * a uint8 image would wrap); convert it "
                               "first, e.g. transforms.v2.functional.to_dtype(img, "
                               "ember.float32, scale=True)")
    pixels = (grid * 255 + 0.5).clamp(0, 255).permute(1, 2, 0).to(ember.uint8).numpy()
    if pixels.shape[2] == 1:
        pixels = pixels[..., 0]
    image.fromarray(np.ascontiguousarray(pixels)).save(fp, format=format)


def _pil() -> Any:
    try:
        from PIL import Image
    except ImportError:
        raise ImportError("ember.vision.utils needs Pillow to write or draw images: "
                          "pip install pillow") from None
    return Image


def _palette(count: int) -> list[tuple[int, int, int]]:
    """torchvision's default colours: well-spread hues from three large primes."""
    primes = (2 ** 25 - 1, 2 ** 15 - 1, 2 ** 21 - 1)
    return [tuple((i * p) % 255 for p in primes) for i in range(count)]


def _colors(colors: Color | Sequence[Color] | None, count: int) -> list[tuple[int, int, int]]:
    """One RGB tuple per object from the user's ``colors`` (names need Pillow)."""
    if colors is None:
        return _palette(count)
    if isinstance(colors, str) or (isinstance(colors, tuple) and len(colors) == 3
                                   and all(isinstance(c, int) for c in colors)):
        colors = [colors] * count
    colors = list(colors)
    if len(colors) < count:
        raise ArgumentError(f"Number of colors must be equal or larger than the number of objects, "
                            f"but got {len(colors)} < {count}")
    out = []
    for c in colors[:count]:
        if isinstance(c, str):
            from PIL import ImageColor
            c = ImageColor.getrgb(c)[:3]
        out.append(tuple(int(v) for v in c))
    return out


def _check_image(op: str, image: Tensor, channels: tuple[int, ...]) -> None:
    if not isinstance(image, Tensor):
        raise TypeError(f"{op}: the image must be a Tensor, got {type(image).__name__}")
    if image.dtype is not ember.uint8 and not image.dtype.is_floating_point:
        raise ArgumentError(f"{op}: the image dtype must be uint8 or float, got {image.dtype}")
    if image.ndim != 3:
        raise ArgumentError(f"{op}: pass individual images (C, H, W), not batches: got shape "
                            f"{tuple(image.shape)}")
    if image.shape[0] not in channels:
        kinds = " and ".join({1: "grayscale", 3: "RGB"}[c] for c in channels)
        raise ArgumentError(f"{op}: only {kinds} images are supported, got {image.shape[0]} "
                            "channels")


def draw_segmentation_masks(image: Tensor, masks: Tensor, alpha: float = 0.8,
                            colors: Color | Sequence[Color] | None = None) -> Tensor:
    """Blends boolean ``masks`` (``(H, W)`` or ``(N, H, W)``) over an RGB ``image``: each mask
    in its colour, pixels under several masks black, then ``image * (1 - alpha) + painted *
    alpha``. Colours are 0–255 (scaled to ``[0, 1]`` for a float image).

    Example:
        >>> img = ember.zeros(3, 2, 2, dtype=ember.uint8)
        >>> draw_segmentation_masks(img, ember.tensor([[True, False], [False, False]]),
        ...                         alpha=1.0, colors="red")[:, 0, 0]
        tensor([255,   0,   0], dtype=ember.uint8)
    """
    op = "draw_segmentation_masks"
    _check_image(op, image, channels=(3,))
    if masks.ndim == 2:
        masks = masks[None]
    if masks.ndim != 3:
        raise ArgumentError(f"{op}: masks must be of shape (H, W) or (N, H, W), got "
                            f"{tuple(masks.shape)}")
    if masks.dtype is not ember.bool_:
        raise ArgumentError(f"{op}: the masks must be of dtype bool, got {masks.dtype}")
    if masks.shape[-2:] != image.shape[-2:]:
        raise ArgumentError(f"{op}: the image {tuple(image.shape)} and the masks "
                            f"{tuple(masks.shape)} must have the same height and width")
    if masks.shape[0] == 0:
        warnings.warn(f"{op}: masks doesn't contain any mask. No mask was drawn", stacklevel=2)
        return image
    scale = 1.0 if image.dtype is ember.uint8 else 255.0
    painted = image.detach().numpy().astype(np.float64)
    m = masks.numpy()
    for mask, color in zip(m, _colors(colors, len(m))):
        painted[:, mask] = np.asarray(color, np.float64)[:, None] / scale
    painted[:, m.sum(0) > 1] = 0
    painted = ember.tensor(painted.astype(image.numpy().dtype))
    return (image * (1 - alpha) + painted * alpha).to(image.dtype)


def _to_uint8(image: Tensor) -> np.ndarray:
    """A float image in ``[0, 1]`` as uint8 the way torchvision's ``to_dtype(scale=True)``
    converts it (times ``256 - 1e-3``, truncated); a uint8 image as it is."""
    pixels = image.detach().numpy()
    if image.dtype is ember.uint8:
        return pixels
    return (pixels * (256.0 - 1e-3)).astype(np.uint8)


def _like(pixels: np.ndarray, image: Tensor) -> Tensor:
    """Drawn uint8 ``(C, H, W)`` pixels back in the dtype of ``image`` (floats in ``[0, 1]``)."""
    out = ember.tensor(np.ascontiguousarray(pixels))
    # times 1/255, not divided by 255: torchvision's to_dtype(scale=True), to the last bit
    return out if image.dtype is ember.uint8 else out.to(image.dtype) * (1.0 / 255)


def draw_bounding_boxes(image: Tensor, boxes: Tensor, labels: list[str | None] | None = None,
                        colors: Color | Sequence[Color] | None = None, fill: bool = False,
                        width: int = 1, font: str | None = None, font_size: int | None = None,
                        label_colors: Color | Sequence[Color] | None = None,
                        label_background_colors: Color | Sequence[Color] | None = None,
                        fill_labels: bool = False) -> Tensor:
    """Draws ``(x1, y1, x2, y2)`` boxes (and optional labels at their top-left corners) on a
    uint8 or float ``(C, H, W)`` image with Pillow; ``fill`` shades their inside. Returns a new
    RGB image of the input's dtype (a grayscale one is tiled to three channels, as torchvision
    does). Labels are drawn in ``label_colors`` (default: the box colours, or black with
    ``fill_labels``), on a box of ``label_background_colors`` when ``fill_labels``.

    Example:
        >>> img = draw_bounding_boxes(ember.zeros(3, 8, 8, dtype=ember.uint8),
        ...                           ember.tensor([[1, 1, 5, 5]]), colors="white")
        >>> img[:, 1, 1].tolist(), img[:, 3, 3].tolist()
        ([255, 255, 255], [0, 0, 0])
    """
    op = "draw_bounding_boxes"
    _check_image(op, image, channels=(1, 3))
    if boxes.ndim != 2 or boxes.shape[1] != 4:
        raise ArgumentError(f"{op}: boxes must have shape (N, 4), got {tuple(boxes.shape)} "
                            "(rotated (N, 8) boxes are not built)")
    b = boxes.detach().numpy()
    if ((b[:, 0] > b[:, 2]) | (b[:, 1] > b[:, 3])).any():
        raise ArgumentError(f"{op}: boxes need to be in (xmin, ymin, xmax, ymax) format. Use "
                            "ember.vision.ops.box_convert to convert them")
    if len(b) == 0:
        warnings.warn(f"{op}: boxes doesn't contain any box. No box was drawn", stacklevel=2)
        return image
    if labels is None:
        labels = [None] * len(b)
    elif len(labels) != len(b):
        raise ArgumentError(f"{op}: the number of boxes ({len(b)}) and labels ({len(labels)}) "
                            "must match")
    box_colors = _colors(colors, len(b))
    text_colors = _colors(label_colors or "black", len(b)) if label_colors or fill_labels \
        else box_colors
    text_boxes = _colors(label_background_colors, len(b)) \
        if fill_labels and label_background_colors else box_colors
    pil = _pil()
    from PIL import ImageDraw, ImageFont

    if font is None and font_size is not None:
        warnings.warn(f"{op}: font_size is ignored since font is not set", stacklevel=2)
    pixels = _to_uint8(image)  # a grayscale image is tiled to RGB, as torchvision does
    canvas = pil.fromarray(np.ascontiguousarray(np.repeat(pixels, 3 // len(pixels), 0)
                                                .transpose(1, 2, 0)))
    draw = ImageDraw.Draw(canvas, "RGBA" if fill else None)  # (RGBA on RGB: blended)
    text_font = ImageFont.load_default() if font is None else \
        ImageFont.truetype(font, size=font_size or 10)
    corners = b.astype(np.int64).tolist()  # (torchvision draws at truncated coordinates)
    for box, color, label, text_color, text_box in zip(corners, box_colors, labels,
                                                        text_colors, text_boxes):
        draw.rectangle(box, width=width, outline=color, fill=color + (100,) if fill else None)
        if label is None:
            continue
        corner = (box[0] + width + 1, box[1] + width + 1)
        if fill_labels:
            left, top, right, bottom = draw.textbbox(corner, label, font=text_font)
            draw.rectangle((left - 1, top - 1, right + 1, bottom + 1), fill=text_box)
        draw.text(corner, label, fill=text_color, font=text_font)
    return _like(np.asarray(canvas).transpose(2, 0, 1), image)


def draw_keypoints(image: Tensor, keypoints: Tensor,
                   connectivity: list[tuple[int, int]] | None = None,
                   colors: Color | None = None, radius: int = 2, width: int = 3,
                   visibility: Tensor | None = None) -> Tensor:
    """Draws ``(N, K, 2)`` key points ``(x, y)`` of ``N`` instances (further columns, such as
    Keypoint R-CNN's visibility, are ignored, as torchvision) as discs of ``radius`` on an
    RGB uint8 or float image, and the ``connectivity`` pairs as lines of ``width`` (white);
    points whose ``visibility`` ``(N, K)`` is False are skipped with their lines. Returns a new
    image of the input's dtype.

    Example:
        >>> img = draw_keypoints(ember.zeros(3, 9, 9, dtype=ember.uint8),
        ...                      ember.tensor([[[2.0, 2.0], [6.0, 6.0]]]), [(0, 1)], "red", 1, 1)
        >>> img[:, 1, 2].tolist(), img[:, 4, 4].tolist()   # a disc edge, the line
        ([255, 0, 0], [255, 255, 255])
    """
    op = "draw_keypoints"
    _check_image(op, image, channels=(3,))
    if keypoints.ndim != 3 or keypoints.shape[-1] < 2:
        raise ArgumentError(f"{op}: keypoints must be of shape (num_instances, K, 2), got "
                            f"{tuple(keypoints.shape)}")
    keypoints = keypoints[..., :2]  # (x, y, visibility) rows, as Keypoint R-CNN gives, work
    if visibility is None:
        visible = np.ones(keypoints.shape[:2], bool)
    else:
        visible = visibility.detach().numpy().astype(bool)
        if visible.ndim == 3:
            visible = visible[..., 0] if visible.shape[-1] == 1 else visible
        if visible.shape != tuple(keypoints.shape[:2]):
            raise ArgumentError(f"{op}: visibility must have shape (num_instances, K) = "
                                f"{tuple(keypoints.shape[:2])}, got {tuple(visibility.shape)}")
    from PIL import ImageDraw

    canvas = _pil().fromarray(np.ascontiguousarray(_to_uint8(image).transpose(1, 2, 0)))
    draw = ImageDraw.Draw(canvas)
    points = keypoints.detach().numpy().astype(np.int64).tolist()  # truncated, as torchvision
    for instance, seen in zip(points, visible.tolist()):
        for (x, y), shown in zip(instance, seen):
            if shown:
                draw.ellipse([x - radius, y - radius, x + radius, y + radius], fill=colors,
                             outline=None, width=0)
        for a, b in connectivity or ():
            if seen[a] and seen[b]:
                draw.line((tuple(instance[a]), tuple(instance[b])), width=width)
    return _like(np.asarray(canvas).transpose(2, 0, 1), image)


def _colour_wheel() -> np.ndarray:
    """The 55 hues of the Middlebury optical-flow colour code (Baker et al., 2007), ``(55, 3)``
    in 0-255: red, yellow, green, cyan, blue, magenta and back, each segment holding one
    channel at 255 while another ramps up or down."""
    segments = []  # (length, channel held at 255, channel ramped, rising)
    for count, held, ramped, rising in ((15, 0, 1, True), (6, 1, 0, False), (4, 1, 2, True),
                                        (11, 2, 1, False), (13, 2, 0, True), (6, 0, 2, False)):
        ramp = np.floor(255 * np.arange(count) / count)
        segment = np.zeros((count, 3))
        segment[:, held] = 255
        segment[:, ramped] = ramp if rising else 255 - ramp
        segments.append(segment)
    return np.concatenate(segments)


def flow_to_image(flow: Tensor) -> Tensor:
    """An optical flow ``(2, H, W)`` or ``(N, 2, H, W)`` (float32) as a uint8 RGB image in the
    Middlebury colour code: hue from the direction, saturation from the length over the
    largest length in the batch.

    Example:
        >>> flow_to_image(ember.zeros(2, 2, 3)).shape
        ember.Size([3, 2, 3])
    """
    op = "flow_to_image"
    if flow.dtype is not ember.float32:
        raise ArgumentError(f"{op}: flow should be of dtype float32, got {flow.dtype}")
    if flow.ndim not in (3, 4) or flow.shape[-3] != 2:
        raise ArgumentError(f"{op}: flow should have shape (2, H, W) or (N, 2, H, W), got "
                            f"{tuple(flow.shape)}")
    f = flow.detach().numpy()
    batch = f[None] if f.ndim == 3 else f
    norm = np.sqrt((batch ** 2).sum(1))
    batch = batch / (norm.max() + np.finfo(np.float32).eps)
    wheel = _colour_wheel().astype(np.float32)
    norm = np.sqrt((batch ** 2).sum(1))
    angle = np.arctan2(-batch[:, 1], -batch[:, 0]) / np.float32(np.pi)
    position = (angle + 1) / 2 * (len(wheel) - 1)
    k0 = np.floor(position).astype(np.int64)
    k1 = np.where(k0 + 1 == len(wheel), 0, k0 + 1)
    frac = position - k0
    col = (1 - frac)[..., None] * (wheel[k0] / 255) + frac[..., None] * (wheel[k1] / 255)
    col = 1 - norm[..., None] * (1 - col)
    image = np.floor(255 * col).astype(np.uint8).transpose(0, 3, 1, 2)
    return ember.tensor(np.ascontiguousarray(image[0] if f.ndim == 3 else image))
