"""``torch.compiler``'s everyday names over :mod:`ember.jit`: ``compile``, ``is_compiling``
(True while a compiled function is being traced, for code that skips Python-only work then),
``disable``, ``reset`` and ``set_stance``; ``allow_in_graph`` and ``assume_constant_result``
give their function back (Ember traces every function's tensor ops and keeps the Python
values a trace computes, which is what torch asks of those functions).

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

import functools
from collections.abc import Callable
from typing import Any

from ember.errors import ArgumentError
from ember.jit import compile
from ember.jit.compiled import CompiledFunction
from ember.jit.switches import STANCES, forget_all
from ember.jit.switches import set_stance as _set_stance
from ember.jit.tracer import TraceError, Tracer
from ember.ops.primitive import DISPATCH

__all__ = ["allow_in_graph", "assume_constant_result", "compile", "disable", "is_compiling",
           "is_dynamo_compiling", "list_backends", "reset", "set_stance"]


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


def allow_in_graph(fn: Callable | list | tuple) -> Any:
    """``fn`` (or each function of a list or tuple) as it is: a compiled function that calls
    it records its tensor ops, as ``torch.compiler.allow_in_graph`` puts it in the graph.

    Example:
        >>> ember.compiler.allow_in_graph(ember.sin) is ember.sin
        True
    """
    if isinstance(fn, list | tuple):
        return [allow_in_graph(f) for f in fn]
    if not callable(fn):
        raise ArgumentError(f"ember.compiler.allow_in_graph: expected a function, got "
                            f"{type(fn).__name__}")
    return fn


def assume_constant_result(fn: Callable) -> Callable:
    """``fn`` as it is: the Python values it returns while a compiled function is traced are
    kept in the graph as constants, as ``torch.compiler.assume_constant_result`` asks.

    Example:
        >>> f = ember.compiler.assume_constant_result(lambda: 3)
        >>> f()
        3
    """
    if not callable(fn):
        raise ArgumentError(f"ember.compiler.assume_constant_result: expected a function, got "
                            f"{type(fn).__name__}")
    return fn


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


def _forced_backend(stance: str, backend: Any) -> None:
    """Checks set_stance's ``force_backend``: as torch's, only with the stance "default"; a
    name of :func:`list_backends` (they compute the same values: each function keeps its own)."""
    if stance != "default":
        raise ArgumentError(f"ember.compiler.set_stance: non-default stance cannot have "
                            f"force_backend set (got stance {stance!r}), as in torch")
    if backend not in list_backends():
        raise ArgumentError(f"ember.compiler.set_stance: force_backend={backend!r} is not a "
                            f"backend; the backends are {list_backends()}")


class set_stance:  # noqa: N801 (torch's name: a function, a context manager and a decorator)
    """Sets what every compiled function does, as ``torch.compiler.set_stance``: called, from
    now on; as a ``with`` block or a decorator, inside it only. The stances:
    ``"default"`` (compile); ``"force_eager"`` (run the plain functions, as
    :func:`ember.jit.disable`); ``"eager_on_recompile"`` (a call no graph fits runs the plain
    function; graphs already made still run); ``"fail_on_recompile"`` (such a call raises a
    ``TraceError``); ``"eager_then_compile"`` and ``"aot_eager_then_compile"`` (the first
    call no graph fits runs the plain function, the next call of that signature compiles; a
    training step, whose second call sees its gradients, runs eagerly twice: docs/jit.md).
    ``skip_guard_eval_unsafe`` is accepted: Ember always checks its keys; so is
    ``force_backend`` with ``"default"`` (a name of :func:`list_backends`).

    Example:
        >>> double = ember.compile(lambda x: x * 2)
        >>> with ember.compiler.set_stance("force_eager"):
        ...     y = double(ember.ones(2))     # the plain function runs
        >>> y
        tensor([2., 2.])
    """

    def __init__(self, stance: str = "default", *, skip_guard_eval_unsafe: bool = False,
                 force_backend: str | Callable | None = None) -> None:
        if is_compiling():
            raise TraceError("ember.compiler.set_stance: called inside a compiled function; "
                             "call it outside (as torch refuses it inside torch.compile)")
        if stance not in STANCES:
            raise ArgumentError(f"ember.compiler.set_stance: unknown stance {stance!r}; the "
                                f"stances are {list(STANCES)}")
        if force_backend is not None:
            _forced_backend(stance, force_backend)
        self.stance = stance
        self.before = _set_stance(stance)

    def __enter__(self) -> None:
        _set_stance(self.stance)

    def __exit__(self, *exc: Any) -> None:
        _set_stance(self.before)

    def __call__(self, fn: Callable) -> Callable:
        _set_stance(self.before)  # (a decorator: the stance holds while ``fn`` runs)

        @functools.wraps(fn)
        def with_stance(*args: Any, **kwargs: Any) -> Any:
            before = _set_stance(self.stance)
            try:
                return fn(*args, **kwargs)
            finally:
                _set_stance(before)

        return with_stance
