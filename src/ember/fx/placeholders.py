"""``PH``: the marker that, inside a ``concrete_args`` value, keeps part of an input symbolic.

``symbolic_trace(f, concrete_args={"d": {"a": PH, "b": [PH]}})`` traces ``f`` with ``d`` a
dict whose ``"a"`` and ``"b"[0]`` are proxies (read from the one placeholder ``d`` with
``getitem``), as torch.fx's ``PH`` does; the other leaves of the pattern are fixed values.

Example:
    >>> gm = ember.fx.symbolic_trace(lambda d: d["a"] * 2, concrete_args={"d": {"a": PH}})
    >>> gm({"a": ember.ones(1)})
    tensor([2.])
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any


class PHBase:
    """The class of :data:`PH` (subclass it to carry extra fields, as torch.fx's
    ``PHWithMeta``)."""

    def __repr__(self) -> str:
        return "PH"


PH = PHBase()


def holds_placeholder(pattern: Any) -> bool:
    """Whether ``pattern`` is :data:`PH` or a tuple, list or dict holding one."""
    if isinstance(pattern, PHBase):
        return True
    if isinstance(pattern, dict):
        return any(map(holds_placeholder, pattern.values()))
    if isinstance(pattern, (tuple, list)):
        return any(map(holds_placeholder, pattern))
    return False


def bind(proxy: Any, pattern: Any, fix: Callable[[Any, Any, str], Any], path: str) -> Any:
    """The value the traced code sees for an input shaped as ``pattern``: ``proxy`` where it
    is :data:`PH`, containers of the same type indexed out of ``proxy`` where they hold one, and
    ``fix(node, value, path)`` (the specialized value; ``node`` reads that leaf) for every
    other leaf."""
    if isinstance(pattern, PHBase):
        return proxy
    if not holds_placeholder(pattern):
        return fix(proxy.node, pattern, path)
    if isinstance(pattern, dict):
        return {k: bind(proxy[k], v, fix, f"{path}[{k!r}]") for k, v in pattern.items()}
    items = [bind(proxy[i], v, fix, f"{path}[{i}]") for i, v in enumerate(pattern)]
    return tuple(items) if isinstance(pattern, tuple) else items
