"""The ``forward`` of each module a compiled function reaches and the ``step`` and
``zero_grad`` of each optimizer, watched at every call at the cost of a few C-level lookups:
reassigned on the class, a library's too (``nn.Linear.forward = f``, ``SGD.step = f``), or set
on the instance, also behind ``Module.__setattr__``'s back (``vars(m)["forward"] = f``:
``setattr`` moves :data:`ember.tensor.STRUCTURE`, a write to the ``__dict__`` does not). The
next call traces again and runs the new code, as eager Python would.
"""

from __future__ import annotations

from itertools import repeat
from operator import is_not
from typing import Any

from ember.jit.reached_values import value_key
from ember.jit.user_objects import bound_value


class MethodWatch:
    """Class attributes (``Linear.forward``) and module ``__dict__``\\ s a function's graph
    depends on.

    Example:
        >>> watch = MethodWatch()
        >>> watch.on_class(nn.Linear, "forward", "Linear.forward")
        >>> watch.finish([model], [("opt", opt)])
        >>> nn.Linear.forward = my_forward
        >>> watch.moved()
        True
    """

    __slots__ = ("classes", "names", "labels", "keys", "values", "dicts", "own", "found")

    def __init__(self) -> None:
        self.classes: list[type] = []
        self.names: list[str] = []
        self.labels: list[str] = []
        self.keys: list[Any] = []
        self.values: list[Any] = []  # (kept alive: their ids stay theirs)
        # instance ``__dict__``\ s, the name looked up in each, what each held then
        self.dicts: list[dict] = []
        self.own: list[str] = []
        self.found: list[Any] = []

    def on_class(self, cls: type, name: str, label: str) -> None:
        """Watches what ``cls.name`` finds (along the MRO) by identity."""
        if any(c is cls and n == name for c, n in zip(self.classes, self.names)):
            return
        value = bound_value(cls, name)
        self.classes.append(cls)
        self.names.append(name)
        self.labels.append(label)
        self.keys.append(value_key(value))
        self.values.append(getattr(cls, name, None))

    def finish(self, modules: list[Any], optimizers: list[tuple[str, Any]]) -> None:
        """Watches ``forward`` in the ``__dict__`` of each of ``modules``, and ``step`` and
        ``zero_grad`` in each optimizer's and on its class (``SGD.step = f``, ``opt.step = f``:
        a trace ran the old one's code)."""
        pairs = [(vars(m), "forward") for m in modules]
        for cls in {type(opt): None for _, opt in optimizers}:
            for name in ("step", "zero_grad"):
                self.on_class(cls, name, f"{cls.__name__}.{name}")
        pairs += [(vars(opt), name) for _, opt in optimizers for name in ("step", "zero_grad")]
        self.dicts, self.own = [d for d, _ in pairs], [name for _, name in pairs]
        self.found = list(map(dict.get, self.dicts, self.own))

    def moved(self) -> bool:
        """Whether an instance's own ``forward`` (``step``…) is another or none now, or a
        class attribute watched is another object (``getattr`` first, C-fast; what it returns
        for a classmethod is new at each look, so a difference is checked as the trace read
        it)."""
        return any(map(is_not, map(dict.get, self.dicts, self.own), self.found)) or (
            any(map(is_not, map(getattr, self.classes, self.names, repeat(None)), self.values))
            and any(value_key(bound_value(cls, name)) != key
                    for cls, name, key in zip(self.classes, self.names, self.keys)))

    def layout(self) -> dict[str, Any]:
        """The class attributes' keys by label (``Linear.forward``), for the cache key."""
        return dict(zip(self.labels, self.keys))
