"""``unravel_index``: flat indices into a shape turned into one coordinate tensor per dimension
(the inverse of ``ravel_multi_index``), with PyTorch's floor arithmetic for negative indices.
"""

from __future__ import annotations

from collections.abc import Sequence

from ember import dtypes
from ember.errors import ArgumentError, DTypeError, ShapeError, type_name
from ember.tensor import Tensor

__all__ = ["unravel_index"]


def unravel_index(indices: Tensor, shape: int | Sequence[int]) -> tuple[Tensor, ...]:
    """The coordinates of the flat ``indices`` in a tensor of ``shape``: one int64 tensor of
    ``indices``' shape per dimension.

    Example:
        >>> ember.unravel_index(ember.tensor([4, 1]), (2, 3))
        (tensor([1, 0]), tensor([1, 1]))
    """
    if not isinstance(indices, Tensor):
        raise TypeError(f"unravel_index: expected a tensor of indices, got "
                        f"{type_name(indices)}")
    if indices.dtype.category != dtypes.INT:
        raise DTypeError(f"unravel_index: expected 'indices' to be integer dtype, but got "
                         f"{indices.dtype.name}")
    sizes = (shape,) if isinstance(shape, int) else shape
    if not (isinstance(sizes, Sequence) and all(isinstance(n, int) for n in sizes)):
        raise TypeError(f"unravel_index: expected 'shape' to be an int or a sequence of ints, "
                        f"got {type(shape).__name__} {shape!r}")
    shape = tuple(sizes)
    if any(n < 0 for n in shape):
        raise ArgumentError(f"unravel_index: 'shape' cannot have negative values, but got {shape}")
    if 0 in shape and indices.numel():
        raise ShapeError(f"unravel_index: 'shape' {shape} has no elements to index")
    rest = indices.to(dtypes.int64)
    coords = []
    for n in reversed(shape):
        coords.append(rest.remainder(n))
        rest = rest.floor_divide(n)
    return tuple(reversed(coords))
