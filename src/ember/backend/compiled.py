"""Kernels compiled by numba, when the optional ``fast`` extra (``pip install ember[fast]``)
is installed.

NumPy evaluates a chain of elementwise operations one pass at a time; numba compiles the chain
into one loop that reads each element once. Ember's numba kernels are serial and release the
GIL: :func:`ember.backend.parallel.run` spreads their blocks over the cores, so one thread pool
(sized by Ember's thread setting, safe across ``fork``) runs them. Every such kernel has a NumPy
twin, used when numba is missing or turned off (``EMBER_NUMBA=0``, or :func:`use_numba`).
"""

from __future__ import annotations

import os
from functools import cache
from typing import Any

__all__ = ["numba_enabled", "use_numba"]

_ENABLED = [os.environ.get("EMBER_NUMBA", "1") != "0"]


@cache
def _numba() -> Any:
    try:
        import numba
    except ImportError:
        return None
    return numba


def numba_enabled() -> bool:
    """Whether Ember's numba kernels run: numba is installed and not turned off.

    Example:
        >>> ember.backend.compiled.numba_enabled()
        True
    """
    return _ENABLED[0] and _numba() is not None


def describe() -> str:
    """One line for ``ember info``: which elementwise kernels run."""
    if _numba() is None:
        return "NumPy (pip install 'ember[fast]' adds numba's one-pass kernels)"
    state = "on" if _ENABLED[0] else "off (EMBER_NUMBA=0 or use_numba(False))"
    return f"numba {_numba().__version__}: one-pass float32 erf and gelu, {state}"


def use_numba(enabled: bool) -> None:
    """Turns Ember's numba kernels on or off (their NumPy twins run instead); as setting
    ``EMBER_NUMBA=0`` before the first use.

    Example:
        >>> ember.backend.compiled.use_numba(False)
    """
    _ENABLED[0] = bool(enabled)


def njit(fn: Any) -> Any:
    """``fn`` compiled by numba as a serial kernel that releases the GIL, cached on disk and
    inlined where it is called from another kernel; float errors as NumPy's (inf and nan, no
    exception checks, so loops vectorize). Only call when :func:`numba_enabled`."""
    return _numba().njit(nogil=True, cache=True, inline="always", error_model="numpy")(fn)
