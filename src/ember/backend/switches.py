"""Ember's on/off environment switches (``EMBER_NUMBA``, ``EMBER_CACHE_HOST_MEMORY``): a
feature is on unless its variable says ``0``, ``false``, ``off`` or ``no``."""

from __future__ import annotations

import os


def switched_off(name: str) -> bool:
    """Whether the environment variable ``name`` turns its feature off.

    Example:
        >>> import os
        >>> os.environ["EMBER_EXAMPLE"] = "off"
        >>> switched_off("EMBER_EXAMPLE"), switched_off("EMBER_UNSET_EXAMPLE")
        (True, False)
        >>> del os.environ["EMBER_EXAMPLE"]
    """
    return os.environ.get(name, "").strip().lower() in ("0", "false", "off", "no")
