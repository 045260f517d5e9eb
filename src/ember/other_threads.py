"""Tensors other threads make while a transform runs in this one (a ``jit`` trace, ``vmap``).

Dispatch state is per thread, so another thread's ops run eagerly, unseen by the transform:
on a traced tensor they compute with this call's values only, on a ``vmap`` logical tensor
with its first sample only. A transform that watches with :class:`OtherThreadsTensors` can
refuse to read such a result instead of silently keeping a wrong value.
"""

from __future__ import annotations

import sys
import threading
import weakref
from typing import Any

from ember.tensor import Tensor, add_wrap_hook, remove_wrap_hook

_get_ident = threading.get_ident
_refs = sys.getrefcount
_FRESH = 2  # references to a new tensor's own counter: its slot and getrefcount's argument


class OtherThreadsTensors:
    """While open (``with``), remembers the arrays of the tensors other threads make; weakly,
    so they are freed as usual. A tensor on memory another tensor already had (a ``detach()``,
    ``.data``, the alias an in-place op makes: it shares that tensor's version counter) is
    not new: another thread reading or updating a weight or a ``.grad`` meanwhile is fine.

    Example:
        >>> with OtherThreadsTensors() as others:
        ...     y = ember.ones(2) * 2                   # made in this thread
        >>> others.made(y._data)
        False
    """

    def __init__(self) -> None:
        self.thread = _get_ident()
        self.arrays: dict[int, weakref.ref] = {}  # id(array) -> a weak reference to it

    def __enter__(self) -> OtherThreadsTensors:
        self.thread = _get_ident()  # (the thread that opens it: the others are watched)
        add_wrap_hook(self.see)
        return self

    def __exit__(self, *exc: object) -> None:
        remove_wrap_hook(self.see)

    def see(self, t: Tensor) -> None:
        """The wrap hook: every tensor made, in any thread."""
        if _get_ident() == self.thread:  # (most tensors: the cheap test first)
            return
        if _refs(t._vc) > _FRESH:  # (a counter that another tensor holds too: an alias)
            return
        key, arrays = id(t._data), self.arrays
        try:
            arrays[key] = weakref.ref(t._data, lambda _r: arrays.pop(key, None))
        except TypeError:  # (an array type without weak references)
            pass

    def made(self, array: Any) -> bool:
        """Whether another thread made a tensor of ``array`` while this was open."""
        ref = self.arrays.get(id(array)) if self.arrays else None
        return ref is not None and ref() is array
