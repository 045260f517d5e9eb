"""``ember.Size``: a tensor's shape, a tuple of ints as ``torch.Size``."""

from __future__ import annotations

import operator
from collections.abc import Iterable
from typing import Any, SupportsIndex


class Size(tuple):
    """A shape: a tuple of ints that prints as ``ember.Size([2, 3])``, with :meth:`numel`.
    Slicing, ``+`` and ``*`` give a ``Size``; it equals the plain tuple of its sizes.

    Example:
        >>> s = ember.Size([2, 3, 4])
        >>> s, s[1:], s.numel(), s == (2, 3, 4)
        (ember.Size([2, 3, 4]), ember.Size([3, 4]), 24, True)
    """

    __slots__ = ()

    def __new__(cls, sizes: Iterable[Any] = ()) -> Size:
        try:
            return tuple.__new__(cls, map(operator.index, sizes))
        except TypeError:
            pass
        for i, s in enumerate(sizes):
            try:
                operator.index(s)
            except TypeError:
                raise TypeError(f"ember.Size() takes an iterable of 'int' (item {i} is "
                                f"'{type(s).__name__}')") from None
        raise TypeError(f"ember.Size() takes an iterable of 'int', got "
                        f"{type(sizes).__name__}")

    def numel(self) -> int:
        """The number of elements a tensor of this shape holds (1 for ``Size([])``)."""
        n = 1
        for s in self:
            n *= s
        return n

    def __getitem__(self, key: SupportsIndex | slice) -> Any:
        out = tuple.__getitem__(self, key)
        return tuple.__new__(Size, out) if isinstance(key, slice) else out

    def __add__(self, other: tuple) -> Any:
        if not isinstance(other, tuple):
            return NotImplemented
        return Size(tuple.__add__(self, other))

    def __radd__(self, other: tuple) -> Any:
        if not isinstance(other, tuple):
            return NotImplemented
        return Size(other + tuple(self))

    def __mul__(self, n: SupportsIndex) -> Any:
        return Size(tuple.__mul__(self, n))

    __rmul__ = __mul__

    def __repr__(self) -> str:
        return f"ember.Size({list(self)})"

    def __reduce__(self) -> tuple:
        return Size, (tuple(self),)
