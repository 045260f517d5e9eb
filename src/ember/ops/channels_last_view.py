"""The free (N, *spatial, C) view of a channels-last (N, C, *spatial) tensor: work along
its spatial axes then leaves a channels-last result, as PyTorch's pooling and
interpolation do."""

from __future__ import annotations

from ember.tensor import Tensor


def pixels_first(x: Tensor, ranks: tuple[int, ...] = (4,)) -> Tensor | None:
    """A channels-last (N, C, *spatial) ``x`` of one of ``ranks`` (and not also C-contiguous)
    as its free (N, *spatial, C) view, so that work along the spatial axes leaves a
    channels-last result, as PyTorch's; None for another layout. (PyTorch's 3-D pooling
    keeps no channels_last_3d layout, its interpolation does.)"""
    if x.ndim not in ranks or x._data.flags.c_contiguous:
        return None
    moved = x.permute((0, *range(2, x.ndim), 1))
    return moved if moved.is_contiguous() else None


def channels_back(y: Tensor) -> Tensor:
    """The (N, C, *spatial) view of a (N, *spatial, C) ``y``: ``pixels_first`` undone."""
    return y.permute((0, y.ndim - 1, *range(1, y.ndim - 1)))
