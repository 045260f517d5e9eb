"""RAFT's sampling helpers: bilinear sampling at absolute pixel coordinates, the grid of pixel
coordinates, and the ×8 upsampling of a flow field (bilinear, or RAFT's learned convex one)."""

from __future__ import annotations

import ember
import ember.nn.functional as F
from ember import Tensor


def grid_sample(img: Tensor, absolute_grid: Tensor, mode: str = "bilinear",
                align_corners: bool | None = None) -> Tensor:
    """:func:`ember.nn.functional.grid_sample` with the grid's last axis in pixels (x, y)
    rather than in [-1, 1]; a height of 1 leaves y as given (RAFT-Stereo's use)."""
    h, w = img.shape[-2:]
    x, y = absolute_grid.split([1, 1], dim=-1)
    x = 2 * x / (w - 1) - 1
    if h > 1:
        y = 2 * y / (h - 1) - 1
    return F.grid_sample(img, ember.cat([x, y], dim=-1), mode=mode, align_corners=align_corners)


def make_coords_grid(batch_size: int, h: int, w: int, dtype: ember.dtype | None = None,
                     device: ember.device | str | None = None) -> Tensor:
    """The (batch_size, 2, h, w) pixel coordinates, x in channel 0 and y in channel 1."""
    ys, xs = ember.meshgrid(ember.arange(h, dtype=dtype, device=device),
                            ember.arange(w, dtype=dtype, device=device), indexing="ij")
    return ember.stack([xs, ys])[None].repeat(batch_size, 1, 1, 1)


def upsample_flow(flow: Tensor, up_mask: Tensor | None = None, factor: int = 8) -> Tensor:
    """``flow`` (N, 2, h, w) scaled and upsampled ``factor`` times: bilinearly, or with
    ``up_mask`` (N, 9·factor², h, w) as each fine pixel's softmax weights over the 3×3 coarse
    neighbours of its coarse pixel (RAFT's convex upsampling, paper §3.3)."""
    n, c, h, w = flow.shape
    if up_mask is None:
        return factor * F.interpolate(flow, size=(h * factor, w * factor), mode="bilinear",
                                      align_corners=True)
    weights = up_mask.view(n, 1, 9, factor, factor, h, w).softmax(dim=2)
    neighbours = F.unfold(factor * flow, kernel_size=3, padding=1).view(n, c, 9, 1, 1, h, w)
    fine = (weights * neighbours).sum(dim=2)  # (n, c, factor, factor, h, w)
    return fine.permute(0, 1, 4, 2, 5, 3).reshape(n, c, h * factor, w * factor)
