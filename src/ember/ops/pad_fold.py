"""Reflect and replicate padding of a backend array by slices, and its gradient folded back
by slices (:class:`ember.ops.pad.PadGather`'s fast path, pads not negative); circular
padding's gradient too, in PyTorch's order of sums.

A gather through a position vector reads an index per element and its gradient adds each
element through one (``np.add.at``'s scalar loop); copying the interior and the mirrored or
repeated border slabs moves whole rows. ``plan`` is (size, before, after) for adjacent dims
flattened into dim ``dim`` of the array, outermost first, as ``pad_gather``'s.
"""

from __future__ import annotations

from math import prod
from typing import Any

FOLDED_MODES = ("reflect", "replicate")


def folds(plan: tuple, mode: str) -> bool:
    """Whether the slice path applies: reflect or replicate, no pad negative (a crop)."""
    return mode in FOLDED_MODES and all(b >= 0 and a >= 0 for _, b, a in plan)


def _unflat(a: Any, dim: int, sizes: tuple) -> Any:
    return a.reshape(a.shape[:dim] + sizes + a.shape[dim + 1:])


def _index(parts: dict) -> tuple:
    """The index taking slice ``parts[axis]`` of each axis named, all of the others."""
    return tuple(parts.get(axis, slice(None)) for axis in range(max(parts) + 1))


def pad_slices(xp: Any, x: Any, dim: int, plan: tuple, mode: str) -> Any:
    """``x`` padded: NumPy's ``reflect`` (no edge repeated) is PyTorch's, ``edge`` its
    replicate. Example: ``pad_slices(np, np.arange(3.), 0, ((3, 2, 1),), "reflect")`` is
    ``[2, 1, 0, 1, 2, 1]``."""
    widths = [(0, 0)] * (x.ndim + len(plan) - 1)
    for k, (_, before, after) in enumerate(plan):
        widths[dim + k] = (before, after)
    out = xp.pad(_unflat(x, dim, tuple(n for n, _, _ in plan)), widths,
                 mode="reflect" if mode == "reflect" else "edge")
    return out.reshape(x.shape[:dim] + (prod(out.shape[dim:dim + len(plan)]),)
                       + x.shape[dim + 1:])


def fold_slices(xp: Any, g: Any, dim: int, plan: tuple, mode: str) -> Any:
    """The gradient of :func:`pad_slices` from the padded gradient ``g``: its interior (one
    copy), plus each border slab added where it was read (mirrored, or summed onto the
    edge); circular padding's as :func:`_fold_circular`."""
    g = _unflat(g, dim, tuple(n + b + a for n, b, a in plan))
    if mode == "circular":
        return _fold_circular(xp, g, dim, plan).reshape(
            g.shape[:dim] + (prod(n for n, _, _ in plan),) + g.shape[dim + len(plan):])
    out = _fold(xp, g, [(dim + k, *p) for k, p in enumerate(plan)], mode)
    return out.reshape(g.shape[:dim] + (prod(n for n, _, _ in plan),) + g.shape[dim + len(plan):])


def _fold(xp: Any, g: Any, axes: list, mode: str) -> Any:
    """``g``'s interior over ``axes`` ((axis, size, before, after) each) plus its borders: the
    slab of axis k's border within the interior of the axes before it (so each corner counts
    once), itself folded over the axes after it (a slab is small: no copy of the whole)."""
    if not axes:
        return g
    # (a copy adding +0.0: a -0.0 gradient sums to +0.0, as PyTorch's into zeros)
    out = xp.add(g[_index({axis: slice(b, b + n) for axis, n, b, _ in axes})], 0, order="C")
    for k, (axis, n, before, after) in enumerate(axes):
        inside = {j: slice(b, b + m) for j, m, b, _ in axes[:k]}
        head = _fold(xp, g[_index({**inside, axis: slice(0, before)})], axes[k + 1:], mode)
        tail = _fold(xp, g[_index({**inside, axis: slice(before + n, before + n + after)})],
                     axes[k + 1:], mode)
        if mode == "reflect":  # output j < before read input before - j; after, n - 2 - t
            out[_index({axis: slice(1, before + 1)})] += xp.flip(head, axis)
            out[_index({axis: slice(n - 1 - after, n - 1)})] += xp.flip(tail, axis)
        else:
            out[_index({axis: slice(0, 1)})] += head.sum(axis, keepdims=True)
            out[_index({axis: slice(n - 1, n)})] += tail.sum(axis, keepdims=True)
    return out


def _fold_circular(xp: Any, g: Any, dim: int, plan: tuple) -> Any:
    """Circular padding's gradient from the padded ``g`` (its dims unflattened) in PyTorch's
    order of sums, which rounds each in a half dtype: its circular pad copies the interior,
    then per dim, last first, the left border from the interior's right end and the right
    border from its left end (corners copied again), so its gradient adds each dim's right
    border, then its left, onto their sources, first dim first, and crops the interior (into
    zeros where a negative pad cropped the input)."""
    g = xp.array(g, order="C")
    inner, cropped = {}, {}
    for k, (n, before, after) in enumerate(plan):
        axis, size = dim + k, n + before + after
        left, right = max(before, 0), max(after, 0)
        if after > 0:
            g[_index({axis: slice(left, left + after)})] += g[_index({axis: slice(size - after,
                                                                                  size)})]
        if before > 0:
            g[_index({axis: slice(size - before - right, size - right)})] += g[
                _index({axis: slice(0, before)})]
        inner[axis] = slice(left, size - right)
        cropped[axis] = slice(max(-before, 0), n - max(-after, 0))
    out = xp.zeros(g.shape[:dim] + tuple(n for n, _, _ in plan) + g.shape[dim + len(plan):],
                   g.dtype)
    out[_index(cropped)] = g[_index(inner)]
    return out
