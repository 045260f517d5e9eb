"""``torch.compiler``'s everyday names over :mod:`ember.jit`: ``compile``, ``is_compiling``
(True while a compiled function is being traced, for code that skips Python-only work then),
``disable`` and ``reset``.

Ember compiles whole graphs: there are no graph breaks, so a function marked with
``disable`` is traced like any other when a compiled function calls it (what cannot be traced
raises, naming the line), and runs as it is otherwise.

Example:
    >>> @ember.compile
    ... def f(x):
    ...     return x * 2 if ember.compiler.is_compiling() else x
    >>> f(ember.ones(2)), ember.compiler.is_compiling()
    (tensor([2., 2.]), False)
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from ember.jit import compile
from ember.jit.compiled import CompiledFunction
from ember.jit.switches import forget_all
from ember.jit.tracer import Tracer
from ember.ops.primitive import DISPATCH

__all__ = ["compile", "disable", "is_compiling", "is_dynamo_compiling", "list_backends",
           "reset"]


def is_compiling() -> bool:
    """Whether a compiled function (or an export) is being traced right now.

    Example:
        >>> ember.compiler.is_compiling()
        False
    """
    return any(isinstance(h, Tracer) for h in DISPATCH.stack)


is_dynamo_compiling = is_compiling


def disable(fn: Callable | None = None, recursive: bool = True, *,
            reason: str | None = None) -> Any:
    """``fn`` to run uncompiled: a compiled function gives back the function it compiles; any
    other function is returned as it is (called from compiled code, it is traced, as Ember's
    graphs have no breaks). Without ``fn``, a decorator.

    Example:
        >>> step = ember.compile(lambda x: x + 1)
        >>> ember.compiler.disable(step)(ember.zeros(1))
        tensor([1.])
    """
    if fn is None:
        return lambda f: disable(f, recursive, reason=reason)
    return fn.fn if isinstance(fn, CompiledFunction) else fn


def reset() -> None:
    """Forgets every compiled function's graphs: each traces again on its next call.

    Example:
        >>> ember.compiler.reset()
    """
    forget_all()


def list_backends(exclude_tags: Any = ()) -> list[str]:
    """The names ``ember.compile(backend=...)`` takes.

    Example:
        >>> ember.compiler.list_backends()
        ['aot_eager', 'eager', 'inductor']
    """
    from ember.jit import _BACKENDS

    return sorted(_BACKENDS)
