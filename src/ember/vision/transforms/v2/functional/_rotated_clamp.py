"""Clamping rotated boxes to their canvas, with torchvision's (0.23+) construction, so that
the clamped boxes agree with its values.

A box (its four corners, ``XYXYXYXY``) keeps its angle. Four times, the corners are
renumbered to start from the leftmost one, the box is clamped against the canvas's left
edge by moving its sides' intercepts (``y = a x + b`` per side), and the whole picture is
turned a quarter counter-clockwise, so each canvas edge takes one turn. ``"soft"`` gives the
smallest box (of that angle) holding the part inside the canvas, ``"hard"`` a large one
inside both; a box wholly outside, or one with a degenerate side, collapses to zeros."""

from __future__ import annotations

import ember
from ember.tensor import Tensor

Canvas = tuple[int, int]


def _between(x: Tensor, low: Tensor, high: Tensor) -> Tensor:
    """``x`` clamped to ``[low, high]`` elementwise (NaN anywhere gives NaN, and ``high``
    wins when ``low > high``, as ``torch.clamp`` with tensor bounds)."""
    return ember.minimum(ember.maximum(x, low), high)


def _sides(corners: Tensor) -> tuple[Tensor, Tensor]:
    """Slope ``a`` and intercept ``b`` of the four sides, side ``i`` from corner ``i`` to
    corner ``i + 1``: each ``(N, 4)``."""
    x, y = corners[:, 0::2], corners[:, 1::2]
    a = (y.roll(-1, 1) - y) / (x.roll(-1, 1) - x)
    return a, y - a * x


def _leftmost_first(corners: Tensor) -> Tensor:
    """Per box, how many corners to roll so that the first is the leftmost (the topmost of
    near ties, by torchvision's weighted key)."""
    x, y = corners[:, 0::2], corners[:, 1::2]
    key = y / y.abs().amax(1, keepdim=True) + x / x.abs().amax(1, keepdim=True) * 100
    return key.argmin(1)


def _roll_corners(corners: Tensor, first: Tensor) -> Tensor:
    """The corners renumbered so that corner ``first`` (per box) comes first."""
    index = (first[:, None] * 2 + ember.arange(8)[None, :]) % 8
    return corners.gather(1, index)


def _quarter_turn(corners: Tensor, width: int) -> Tensor:
    """The corners turned a quarter counter-clockwise on a canvas ``width`` wide:
    ``(x, y) -> (y, width - x)``."""
    x, y = corners[:, 0::2], corners[:, 1::2]
    return ember.stack((y, width - x), dim=-1).reshape(-1, 8)


def _intercepts(corners: Tensor, original: Tensor, canvas_size: Canvas,
                mode: str) -> Tensor:
    """The sides' new intercepts ``(N, 4)`` after clamping against the left edge: the first
    and last sides meet the canvas's rows, and (``"hard"``) the others come in so the box
    fits; every intercept stays within the original box's."""
    height, width = canvas_size
    a, b = _sides(corners)
    a1, a2, a3, a4 = a.unbind(-1)
    b1, b2, b3, b4 = b.unbind(-1)
    b1m, b2m, b3m, b4m = _sides(original)[1].unbind(-1)
    new1 = _between(b2, b1, b3).clamp(0, height)
    new4 = _between(b3, b2, b4).clamp(0, height)
    new2, new3 = b2, b3
    if mode == "hard":
        new1 = new4 = (new1 + new4) / 2
        new2 = ember.stack((new1 * a2 / a1, b3 * a2 / a3, (a1 - a2) * width + new1,
                            (a3 - a2) * width + b3), dim=1).amax(1).clamp(max=b2)
        new3 = ember.stack((height * (1 - a3 / a4) + new4 * a3 / a4,
                            height * (1 - a3 / a2) + new2 * a3 / a2,
                            (a2 - a3) * width + new2, (a4 - a3) * width + new4),
                           dim=1).amin(1).clamp(min=b3)
    new1 = _between(new1, b1m, b3m)
    new3 = _between(new3, b1m, b3m)
    new2 = _between(new2, b2m, b4m)
    if mode == "hard":  # torchvision's first and last intercepts are one tensor, clamped twice
        new1 = new4 = _between(new1, b2m, b4m)
    else:
        new4 = _between(new4, b2m, b4m)
    return ember.stack((new1, new2, new3, new4), dim=-1)


def _clamp_left(corners: Tensor, original: Tensor, canvas_size: Canvas, mode: str) -> Tensor:
    """Boxes (leftmost corner first) clamped against the canvas's left edge: the corners
    where the re-placed sides meet, or the two left corners moved to ``x = 0`` when a side
    is level, or zeros for a box wholly left of the canvas or degenerate."""
    a = _sides(corners)[0]
    b = _intercepts(corners, original, canvas_size, mode)
    meet_x = -(b - b.roll(1, 1)) / (a - a.roll(1, 1))
    meets = ember.stack((meet_x, a * meet_x + b), dim=-1).reshape(-1, 8)
    x1, y1, x2, y2, x3, y3, x4, y4 = corners.unbind(-1)
    at_edge = corners.clone()
    at_edge[:, 0] = x1.clamp(min=0)
    at_edge[:, 6] = x4.clamp(min=0)
    level = ember.isclose(y1, y2) | ember.isclose(y3, y4)
    gone = ((corners[:, 0::2] <= 0).all(-1) | ember.isclose(y1, y4) | ember.isclose(y2, y3)
            | (level & ember.isclose(x1, x2)))
    out = ember.where(((x1 < 0) & ~meets.isnan().any(-1))[:, None], meets, corners)
    out = ember.where(level[:, None], at_edge, out)
    return ember.where(gone[:, None], ember.zeros_like(out), out)


def clamp_rotated_corners(corners: Tensor, canvas_size: Canvas, mode: str) -> Tensor:
    """Floating ``(N, 8)`` corners clamped to a canvas ``(height, width)`` in ``mode``
    (``"soft"`` or ``"hard"``); the corners may come back renumbered, as torchvision's.

    Example:
        >>> box = ember.tensor([[-2.0, 1.0, 3.0, 1.0, 3.0, 4.0, -2.0, 4.0]])
        >>> clamp_rotated_corners(box, (8, 8), "soft").tolist()
        [[0.0, 1.0, 3.0, 1.0, 3.0, 4.0, 0.0, 4.0]]
    """
    height, width = canvas_size
    out = original = corners
    for _ in range(4):
        first = _leftmost_first(out)
        out, original = _roll_corners(out, first), _roll_corners(original, first)
        out = _clamp_left(out, original, (height, width), mode)
        # torchvision rolls by the same amount again rather than back
        out, original = _roll_corners(out, first), _roll_corners(original, first)
        out, original = _quarter_turn(out, width), _quarter_turn(original, width)
        height, width = width, height
    return out
