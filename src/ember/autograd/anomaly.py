"""Anomaly detection: which forward op, at which line of user code, made a NaN in backward.

Inside ``detect_anomaly()`` every op records the user's stack on its node (through a dispatch
handler, so the eager path pays nothing when it is off), and backward checks each gradient a
rule returns for NaN.
"""

from __future__ import annotations

import os
import traceback
from typing import Any

from ember.errors import GradError


class _AnomalyState:
    __slots__ = ("enabled",)

    def __init__(self) -> None:
        self.enabled = False


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


def check_finite(node: Any, grads: tuple) -> None:
    """Raises if a gradient a rule returned holds NaN, naming the op and its source line."""
    for i, g in enumerate(grads):
        if g is not None and g.dtype.is_floating_point and node.device.xp.isnan(g._data).any():
            raise GradError(f"backward of {node.prim.name} returned NaN in its gradient for "
                            f"input {i} (shape {tuple(g.shape)})." + node.where())


class detect_anomaly:
    """Context manager (and decorator) that reports where a NaN gradient came from.

    Example:
        >>> with ember.autograd.detect_anomaly():
        ...     loss = model(x).sum()
        ...     loss.backward()   # GradError: backward of log returned NaN … called at train.py:12
    """

    def __init__(self, check_nan: bool = True) -> None:
        self.check_nan = check_nan

    def __enter__(self) -> detect_anomaly:
        from ember.ops.primitive import push_handler

        self._saved = ANOMALY.enabled
        ANOMALY.enabled = self.check_nan
        push_handler(_record_stack, observer=True)
        return self

    def __exit__(self, *exc: object) -> None:
        from ember.ops.primitive import pop_handler

        pop_handler(_record_stack)
        ANOMALY.enabled = self._saved

    def __call__(self, fn: Any) -> Any:
        import functools

        @functools.wraps(fn)
        def wrapper(*args: Any, **kwargs: Any) -> Any:
            with detect_anomaly(self.check_nan):
                return fn(*args, **kwargs)
        return wrapper
