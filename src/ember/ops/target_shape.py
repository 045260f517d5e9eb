"""The target shape of ``reshape``/``view``/``unflatten``: sizes read, one -1 inferred, checked
against the element count (one pass for a valid shape; the checks and their messages for any
other)."""

from __future__ import annotations

from collections.abc import Iterable

from ember.errors import ShapeError
from ember.ops.int_args import as_ints

__all__: list[str] = []


def numel_of(shape: Iterable[int]) -> int:
    """The number of elements of a tensor of ``shape``."""
    n = 1
    for s in shape:
        n *= s
    return n


def resolve_shape(old: tuple, sizes: tuple, op: str) -> tuple[int, ...]:
    """The shape ``sizes`` asks of a tensor of shape ``old`` for ``op``, with one -1 inferred
    from the element count; a shape no tensor of ``old``'s elements can take raises.

    Example:
        >>> resolve_shape((2, 3), (-1, 2), "view")
        (3, 2)
    """
    shape = as_ints(sizes, op, "each size")
    known, unknown = 1, None  # one pass for the usual shape; any other goes to the checks
    for i, s in enumerate(shape):
        if s >= 0:
            known *= s
        elif s == -1 and unknown is None:
            unknown = i
        else:
            return _resolve_checked(old, shape, op)
    numel = numel_of(old)
    if unknown is None:
        if known == numel:
            return shape
    elif known and not numel % known:
        return shape[:unknown] + (numel // known,) + shape[unknown + 1:]
    return _resolve_checked(old, shape, op)


def _resolve_checked(old: tuple, sizes: tuple, op: str) -> tuple[int, ...]:
    """:func:`resolve_shape` with every check, raising the error of a shape it refuses."""
    shape = list(sizes)
    numel = numel_of(old)
    if shape.count(-1) > 1:
        raise ShapeError(f"{op}: only one dimension can be inferred (-1), got {tuple(shape)}")
    if any(s < -1 for s in shape):
        raise ShapeError(f"{op}: invalid shape dimension in {tuple(shape)}")
    if -1 in shape:
        rest = numel_of(s for s in shape if s != -1)
        if rest == 0:
            raise ShapeError(f"{op}: cannot reshape a tensor of {numel} elements into shape "
                             f"{tuple(shape)}: the -1 could be any size")
        if numel % rest:
            raise ShapeError(f"{op}: shape {tuple(shape)} is invalid for input of size {numel} "
                             f"(shape {tuple(old)})")
        shape[shape.index(-1)] = numel // rest
    elif numel_of(shape) != numel:
        raise ShapeError(f"{op}: shape {tuple(shape)} is invalid for input of size {numel} "
                         f"(shape {tuple(old)})")
    return tuple(shape)
