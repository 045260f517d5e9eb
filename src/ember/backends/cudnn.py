"""``ember.backends.cudnn``: cuDNN's switches, recorded for code that sets them (Ember has no
cuDNN: ``is_available()`` is False and ``version()`` None; the switches change nothing).

Example:
    >>> with ember.backends.cudnn.flags(enabled=True, deterministic=True):
    ...     ember.backends.cudnn.deterministic
    True
    >>> ember.backends.cudnn.deterministic
    False
"""

from __future__ import annotations

import sys
from collections.abc import Iterator
from contextlib import contextmanager

enabled = True
benchmark = False
benchmark_limit: int | None = None
deterministic = False
allow_tf32 = True

_FLAGS = ("enabled", "benchmark", "benchmark_limit", "deterministic", "allow_tf32")


def is_available() -> bool:
    """Whether cuDNN can be used: False (Ember has no CUDA backend).

    Example:
        >>> ember.backends.cudnn.is_available()
        False
    """
    return False


def version() -> int | None:
    """cuDNN's version: None (not present).

    Example:
        >>> ember.backends.cudnn.version() is None
        True
    """
    return None


@contextmanager
def flags(enabled: bool = False, benchmark: bool = False, benchmark_limit: int | None = 10,
          deterministic: bool = False, allow_tf32: bool = True) -> Iterator[None]:
    """Sets every cuDNN switch inside the ``with`` (torch's defaults for those not given,
    ``enabled=False`` included) and restores the previous values after.

    Example:
        >>> with ember.backends.cudnn.flags(benchmark=True):
        ...     ember.backends.cudnn.benchmark, ember.backends.cudnn.enabled
        (True, False)
    """
    module = sys.modules[__name__]
    saved = {name: getattr(module, name) for name in _FLAGS}
    new = dict(zip(_FLAGS, (enabled, benchmark, benchmark_limit, deterministic, allow_tf32),
                   strict=True))
    for name, value in new.items():
        setattr(module, name, value)
    try:
        yield
    finally:
        for name, value in saved.items():
            setattr(module, name, value)
