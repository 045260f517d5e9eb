"""``gc_off()``: a block in which only reference counting frees objects, for tests that an
object dies as soon as its last reference goes (as in PyTorch), with no reference cycle left
for the cycle collector."""

from __future__ import annotations

import contextlib
import gc
from collections.abc import Iterator


@contextlib.contextmanager
def gc_off() -> Iterator[None]:
    """Collects what earlier code left, then runs the block with the cycle collector off."""
    gc.collect()
    was_on = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was_on:
            gc.enable()
