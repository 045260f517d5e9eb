r"""Python source that Ember writes while running (``ember.jit``'s compiled functions and
kernels, ``ember.fx``'s generated ``forward``) made into a function, with its source registered
in :mod:`linecache` so that tracebacks, debuggers and ``inspect.getsource`` show it."""

from __future__ import annotations

import itertools
import linecache
import weakref
from typing import Any

__all__ = ["define"]

_COUNTER = itertools.count()


def define(source: str, label: str, name: str, globals_: dict[str, Any]) -> Any:
    r"""The function ``name`` that ``source`` defines, run with (a copy of) ``globals_`` as its
    globals (without itself: it does not call itself by name); its file name is ``<label
    #N>``, unique, and its source stays in :mod:`linecache` while the function lives (a
    compiled function's old graphs, dropped, take theirs along).

    Example:
        >>> from ember.utils.generated_code import define
        >>> define("def f(x):\n    return x + k\n", "demo", "f", {"k": 1})(2)
        3
    """
    filename = f"<{label} #{next(_COUNTER)}>"
    linecache.cache[filename] = (len(source), None, source.splitlines(True), filename)
    scope = dict(globals_)
    exec(compile(source, filename, "exec"), scope)  # noqa: S102 - Ember's own generated code
    made = scope.pop(name)  # (its globals holding it would be a cycle: it dies by refcount)
    weakref.finalize(made, linecache.cache.pop, filename, None)
    return made
