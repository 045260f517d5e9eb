"""``ember.random``: PyTorch's ``torch.random`` namespace over the default generator.

``manual_seed``, ``seed``, ``initial_seed``, ``get_rng_state`` and ``set_rng_state`` are the
very functions at the top level (``ember.random.manual_seed is ember.manual_seed``);
:func:`fork_rng` adds a scope after which the default generator is back where it was.

Example:
    >>> _ = ember.random.manual_seed(0)
    >>> with ember.random.fork_rng():
    ...     inside = ember.rand(2)
    >>> bool((ember.rand(2) == inside).all())  # the draw inside did not move the stream
    True
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterable, Iterator
from typing import Any

from ember.errors import ArgumentError
from ember.ops.random import (
    Generator,
    default_generator,
    get_rng_state,
    initial_seed,
    manual_seed,
    seed,
    set_rng_state,
)

__all__ = ["Generator", "default_generator", "fork_rng", "get_rng_state", "initial_seed",
           "manual_seed", "seed", "set_rng_state", "thread_safe_generator"]


def thread_safe_generator() -> Generator | None:
    """The generator a DataLoader thread worker should draw from, as PyTorch's: None (the
    default generator) everywhere in Ember, whose DataLoader workers are processes, each
    seeded on its own.

    Example:
        >>> ember.randint(0, 10, (2,), generator=ember.random.thread_safe_generator()).shape
        ember.Size([2])
    """
    return None


@contextlib.contextmanager
def fork_rng(devices: Iterable[Any] | None = None, enabled: bool = True,
             _caller: str = "fork_rng", _devices_kw: str = "devices",
             device_type: str | None = None) -> Iterator[None]:
    """Restores the default generator's state when the block (or decorated function) ends,
    also when it raises, so random draws inside leave the stream outside untouched.

    Every device draws from Ember's one default generator, so forking it covers them all:
    ``devices`` (an iterable of device indices; consumed once, as PyTorch does) and
    ``device_type`` are accepted for PyTorch compatibility and select nothing more (as are
    its private ``_caller`` and ``_devices_kw``, the names its warnings use).
    ``enabled=False`` makes it a no-op.

    Example:
        >>> @ember.random.fork_rng()
        ... def peek():
        ...     return ember.rand(1)
        >>> _ = ember.manual_seed(1)
        >>> bool(peek() == ember.rand(1))
        True
    """
    if devices is not None:
        list(devices)  # a non-iterable fails here, as in torch (which also lists them)
    if device_type not in (None, "cpu", "cuda", "meta"):
        raise ArgumentError(f"fork_rng: device_type must be None, 'cpu', 'cuda' or 'meta', got "
                            f"{device_type!r}")
    if not enabled or device_type == "meta":
        yield
        return
    state = get_rng_state()
    try:
        yield
    finally:
        set_rng_state(state)
