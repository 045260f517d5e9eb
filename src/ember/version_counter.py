"""Version counters: how Ember notices writes it cannot see in the values themselves.

A :class:`VersionCounter` counts the in-place writes to one array (autograd checks saved
values against it; ``ember.jit`` keys packed weights on it). :data:`STRUCTURE` counts the
changes a compiled function cannot see in the arrays it reads. This module imports nothing of
Ember, so that the tensor and the hook handles (:mod:`ember.hooks`) can both use it.
"""

from __future__ import annotations

import itertools
from typing import Any

__all__ = ["VersionCounter", "InferenceCounter", "NumberCounter", "DataCounter", "STRUCTURE",
           "INFERENCE_ALIVE", "birth_mark"]

_BIRTHS = itertools.count(1)  # (next() is atomic: counters made in any thread are ordered)


def birth_mark() -> int:
    """A mark every counter made after this call is ``born`` above, and every older one at or
    below: how a block tells the memory it made from memory that was there before.

    Example:
        >>> mark = birth_mark()
        >>> VersionCounter().born > mark
        True
    """
    return next(_BIRTHS)


class VersionCounter:
    """Counts in-place writes to an array; views share their base's counter. ``shared``: the
    memory is also reachable where writes move no counter (a NumPy array the user holds, from
    ``numpy()`` or ``from_numpy``; another tensor's, after ``.data =``). ``born``: its place in
    the order counters were made (see :func:`birth_mark`). ``aliased``: the writes made
    through ``.data`` aliases, which move their own counter, not this one (see
    :class:`DataCounter`)."""

    __slots__ = ("value", "shared", "born", "aliased")
    inference = False  # the memory was made inside inference_mode (see InferenceCounter below)
    number = False  # the tensor is a Python number an op took (see NumberCounter below)

    def __init__(self) -> None:
        self.value = 0
        self.shared = False
        self.born = next(_BIRTHS)
        self.aliased = 0

    def stamp(self) -> object:
        """What a cache of values computed from the array compares (``ember.jit`` keeps a
        packed weight): the count of all writes (its own and its ``.data`` aliases'), or for
        shared memory a new object each time (never equal: such a cache computes again at
        every call)."""
        return object() if self.shared else self.value + self.aliased

    @property
    def source(self) -> VersionCounter:
        """The counter of the memory: this one, or for a ``.data`` alias its tensor's."""
        return self

    def data_set(self) -> VersionCounter:
        """The counter a tensor keeps once ``t.data = other`` puts it on other memory: this one,
        marked ``shared`` (writes through ``other`` move ``other``'s counter)."""
        self.shared = True
        return self


# The InferenceCounters alive (by id): empty, no inference tensor exists and the checks for
# one are skipped. (A dict's set and pop are atomic: counters made and freed in any thread.)
INFERENCE_ALIVE: dict[int, None] = {}


class InferenceCounter(VersionCounter):
    """The counter of memory made inside ``inference_mode``: the tensors on that memory (its
    views and detached aliases too, which share the counter) are inference tensors. Each one
    alive is in :data:`INFERENCE_ALIVE`.

    Example:
        >>> c = InferenceCounter()
        >>> id(c) in INFERENCE_ALIVE
        True
    """

    __slots__ = ()
    inference = True

    def __init__(self, _birth: Any = _BIRTHS.__next__,
                 _alive: dict[int, None] = INFERENCE_ALIVE) -> None:
        # (VersionCounter's fields set here, not through super(): two calls less a tensor)
        self.value = self.aliased = 0
        self.shared = False
        self.born = _birth()
        _alive[id(self)] = None

    def __del__(self, _forget: Any = INFERENCE_ALIVE.pop) -> None:
        _forget(id(self), None)


class NumberCounter(VersionCounter):
    """The counter of a 0-d constant made from a Python number an op took (``x * 2``'s 2):
    saved-tensor hooks leave such constants alone, as PyTorch's wrapped numbers. One made
    under ``inference_mode`` gets this counter too, not the inference one: no op's output
    shares a number constant's counter, so that cannot show."""

    __slots__ = ()
    number = True


class DataCounter(VersionCounter):
    """The counter of ``t.data``: its own count from 0, as PyTorch's (so a write through it
    is not seen by autograd's checks of ``t``'s saved values), whose writes also move
    ``aliased`` of ``t``'s counter ``source`` (so caches of ``t``'s values see them). Writes
    through ``t`` move no count of this one: a cache of its values compares the source's
    (``stamp``), and the memory is ``shared`` where the source's is.

    Example:
        >>> source = VersionCounter()
        >>> alias = DataCounter(source)
        >>> alias.value += 1
        >>> alias.value, source.value, source.aliased
        (1, 0, 1)
    """

    __slots__ = ("source", "_own")

    def __init__(self, source: VersionCounter) -> None:
        self.source = source.source if isinstance(source, DataCounter) else source
        self._own = self.aliased = 0
        self.born = self.source.born  # (the memory is the source's)

    @classmethod
    def given_to(cls, alias: Any) -> Any:
        """``alias`` (a new tensor on a tensor's memory, sharing its counter) with a counter of
        this class over that one instead: ``t.data``."""
        alias._vc = cls(alias._vc)
        return alias

    def data_set(self) -> VersionCounter:
        """After ``alias.data = other`` the alias is off the source's memory (its views stay
        on it): a plain shared counter carrying its count, the source left unmarked (marked
        ``shared``, every cache of the source's values would compute again for good).

        Example:
            >>> alias = DataCounter(VersionCounter())
            >>> alias.value += 2
            >>> own = alias.data_set()
            >>> own.value, own.shared, own.source is own, alias.source.shared
            (2, True, True, False)
        """
        own = VersionCounter()
        own.value, own.born, own.shared = self._own, self.born, True
        return own

    @property
    def value(self) -> int:  # type: ignore[override]
        return self._own

    @value.setter
    def value(self, value: int) -> None:
        self.source.aliased += value - self._own
        self._own = value

    @property  # type: ignore[override]
    def shared(self) -> bool:
        return self.source.shared

    @shared.setter
    def shared(self, value: bool) -> None:  # (a NumPy view of it: its memory's)
        self.source.shared = value

    def stamp(self) -> object:
        return self.source.stamp()  # (every write to the memory moves the source's counts)

    @property
    def inference(self) -> bool:  # type: ignore[override]
        return self.source.inference

    @property
    def number(self) -> bool:  # type: ignore[override]
        return self.source.number


# Counts the changes a compiled function cannot see in the arrays it reads: a module gaining,
# losing or swapping a parameter, buffer, child or hook or setting an attribute, a
# tensor's ``.data`` taking another shape or dtype, a tensor hook. (``ember.jit`` looks again at
# what a function reaches when it moves.)
STRUCTURE = VersionCounter()
