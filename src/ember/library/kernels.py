"""Helpers around running a custom op's kernel: the devices it names, the read-only views it
gets, and what its failures and aliasing are reported as."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

import numpy as np

from ember.backend import device as get_device
from ember.errors import ArgumentError, EmberError, OpError

DEVICE_TYPES = ("cpu", "cuda")


def kernel_error(qualname: str, exc: Exception) -> Exception:
    """The user's kernel failed: the same kind of error (an OpError for a non-Ember one),
    naming the op, with a hint when it wrote into an argument it may only read."""
    message = f"{qualname}: the implementation raised {type(exc).__name__}: {exc}"
    if "read-only" in str(exc):
        message += (". Hint: the op wrote into an argument that is not in mutates_args; "
                    "declare it there")
    try:
        return type(exc)(message) if isinstance(exc, EmberError) else OpError(message)
    except TypeError:  # (an error class that takes other arguments)
        return OpError(message)


def shares_memory(xp: Any, a: Any, b: Any) -> bool:
    """Whether two backend arrays overlap."""
    return bool(np.shares_memory(a, b) if xp is np else xp.may_share_memory(a, b))


def device_type_list(device_types: Iterable[str] | str | None) -> tuple[str | None, ...]:
    """``device_types`` as a tuple (``(None,)`` for every device), each checked."""
    if device_types is None:
        return (None,)
    types = (device_types,) if isinstance(device_types, str) else tuple(device_types)
    for t in types:
        if t not in DEVICE_TYPES:
            raise ArgumentError(f"device_types: unknown device type {t!r}; expected one of "
                                f"{DEVICE_TYPES}")
    return types


def device_of(xp: Any, arrays: tuple) -> Any:
    """The device of the arrays a kernel gets."""
    if xp is np:
        return get_device("cpu")
    return get_device(f"cuda:{arrays[0].device.id}")


def read_only(a: Any) -> Any:
    """A view the user's kernel cannot write through (NumPy; CuPy has no such flag)."""
    v = a.view()
    if isinstance(v, np.ndarray):
        v.flags.writeable = False
    return v
