"""Anomaly detection: which forward op, at which line of user code, made a NaN in backward.

Inside ``detect_anomaly()`` every op records the user's stack on its node (through a dispatch
handler, so the eager path pays nothing when it is off), and backward checks each gradient a
rule returns for NaN.
"""

from __future__ import annotations

import os
import threading
import traceback
from typing import Any

from ember.errors import GradError, bool_flag


class _AnomalyState(threading.local):
    """Per thread, as the dispatch handler that records stacks is: anomaly mode switched on in
    one thread leaves the others alone (PyTorch keeps one flag for the process, which a block
    closing in one thread turns off for a block still open in another)."""

    def __init__(self) -> None:
        self.enabled = False  # backward checks gradients for NaN (anomaly mode with check_nan)
        self.check_nan = True


ANOMALY = _AnomalyState()
_EMBER_DIR = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def _user_stack() -> list[traceback.FrameSummary]:
    return [f for f in traceback.extract_stack()[:-2]
            if not os.path.abspath(f.filename).startswith(_EMBER_DIR)]


def _record_stack(prim: Any, inputs: tuple, params: dict) -> Any:
    from ember.ops.primitive import apply_below

    out = apply_below(_record_stack, prim, inputs, params)
    first = out[0] if isinstance(out, tuple) else out
    if first._node is not None:
        first._node.stack = _user_stack()
    return out


def _state() -> tuple[bool, bool]:
    """(whether anomaly mode is on, whether it checks for NaN when on)."""
    from ember.ops.primitive import DISPATCH

    return _record_stack in DISPATCH.stack, ANOMALY.check_nan


def _set(mode: bool, check_nan: bool) -> None:
    from ember.ops.primitive import DISPATCH, pop_handler, push_handler

    on = _record_stack in DISPATCH.stack
    if mode and not on:
        push_handler(_record_stack, observer=True)
    elif on and not mode:
        pop_handler(_record_stack)
    ANOMALY.enabled = mode and check_nan
    ANOMALY.check_nan = check_nan


def is_anomaly_enabled() -> bool:
    """Whether anomaly detection is on (in this thread)."""
    return _state()[0]


def is_anomaly_check_nan_enabled() -> bool:
    """Whether anomaly detection checks gradients for NaN when it is on (True unless turned
    off with ``check_nan=False``), as ``torch.is_anomaly_check_nan_enabled``.

    Example:
        >>> ember.is_anomaly_check_nan_enabled()
        True
    """
    return ANOMALY.check_nan


def set_anomaly_enabled(enabled: bool, check_nan: bool = True) -> None:
    """Turns anomaly detection on or off from now on, as ``torch.set_anomaly_enabled``
    (:class:`set_detect_anomaly` is the same as a context manager).

    Example:
        >>> ember.set_anomaly_enabled(True)
        >>> ember.is_anomaly_enabled()
        True
        >>> ember.set_anomaly_enabled(False)
    """
    _set(bool_flag("set_anomaly_enabled", "enabled", enabled),
         bool_flag("set_anomaly_enabled", "check_nan", check_nan))


class set_detect_anomaly:
    """Turns anomaly detection on or off from now on
    (``ember.autograd.set_detect_anomaly(True)`` at the top of a script), or for a ``with``
    block, after which the previous setting returns.

    Example:
        >>> with ember.autograd.set_detect_anomaly(True):
        ...     ember.autograd.is_anomaly_enabled()
        True
    """

    def __init__(self, mode: bool, check_nan: bool = True) -> None:
        bool_flag("set_detect_anomaly", "mode", mode)
        bool_flag("set_detect_anomaly", "check_nan", check_nan)
        self._saved = _state()
        _set(mode, check_nan)

    def __enter__(self) -> set_detect_anomaly:
        return self

    def __exit__(self, *exc: object) -> None:
        _set(*self._saved)


def check_finite(node: Any, grads: tuple) -> None:
    """Raises if a gradient a rule returned holds NaN, naming the op and its source line."""
    for i, g in enumerate(grads):
        if g is not None and not hasattr(g, "_data"):  # a sparse gradient: its values
            g = g._values()
        inexact = g is not None and (g.dtype.is_floating_point or g.dtype.is_complex)
        if inexact and node.device.xp.isnan(g._data).any():
            raise GradError(f"backward of {node.prim.name} returned NaN in its gradient for "
                            f"input {i} (shape {tuple(g.shape)})." + node.where())


class detect_anomaly:
    """Context manager (and decorator) that reports where a NaN gradient came from.

    Example:
        >>> x = ember.tensor([0.0, 1.0], requires_grad=True)
        >>> with ember.autograd.detect_anomaly():
        ...     loss = (x.sqrt() * 0).sum()   # sqrt's gradient at 0 is 0 * inf: NaN
        ...     loss.backward()
        Traceback (most recent call last):
        ...
        ember.errors.GradError: backward of sqrt returned NaN in its gradient for input 0 ...
        The forward op sqrt was called at ...
    """

    def __init__(self, check_nan: bool = True) -> None:
        self.check_nan = bool_flag("detect_anomaly", "check_nan", check_nan)

    def __enter__(self) -> detect_anomaly:
        self._saved = _state()
        _set(True, self.check_nan)
        return self

    def __exit__(self, *exc: object) -> None:
        _set(*self._saved)

    def __call__(self, fn: Any) -> Any:
        import functools

        @functools.wraps(fn)
        def wrapper(*args: Any, **kwargs: Any) -> Any:
            with detect_anomaly(self.check_nan):
                return fn(*args, **kwargs)
        return wrapper
