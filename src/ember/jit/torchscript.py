"""``torch.jit``'s TorchScript names, so model code written for TorchScript runs unchanged.

Ember has no TorchScript: :func:`script` compiles with :func:`ember.jit.compile` (the first
call traces, so Python control flow on tensor values raises a ``TraceError`` that names the
line and the fix, where TorchScript would have compiled both branches), and the markers
TorchScript reads (``ignore``, ``unused``, ``export``, ``annotate``, ``Final``) are plain
Python here. ``is_scripting()`` is always False, so ``if torch.jit.is_scripting():`` blocks
take their eager path; ``is_tracing()`` is True while Ember traces a compiled function.

Example:
    >>> @ember.jit.script
    ... def swish(x):
    ...     return x * ember.sigmoid(x)
    >>> swish(ember.zeros(2))
    tensor([0., 0.])
"""

from __future__ import annotations

import typing
from collections.abc import Callable
from typing import Any

from ember.autograd.grad_mode import no_grad
from ember.jit.compiled import CompiledFunction
from ember.jit.serialize import save as save_compiled
from ember.jit.tracer import Tracer
from ember.ops.primitive import DISPATCH

__all__ = ["Final", "ScriptModule", "annotate", "export", "ignore", "is_scripting",
           "is_tracing", "script", "script_module", "unused"]

#: TorchScript's marker for constant module attributes; plain ``typing.Final`` here
Final = typing.Final


class ScriptModule(CompiledFunction):
    """What :func:`script` and :func:`ember.jit.trace` return: a compiled function or module
    (as :func:`ember.jit.compile`'s) with TorchScript's ``save(path)``.

    Example:
        >>> import os, tempfile
        >>> traced = ember.jit.trace(ember.nn.Linear(3, 2), ember.ones(1, 3))
        >>> path = os.path.join(tempfile.mkdtemp(), "linear.ejit")
        >>> traced.save(path)
        >>> ember.jit.load(path)(ember.ones(1, 3)).shape
        ember.Size([1, 2])
    """

    #: the (args, kwargs) a trace ran on, or None (a scripted function)
    example: tuple | None = None

    def save(self, path: str) -> None:
        """Writes the graph as :func:`ember.jit.save` does; a traced one first runs its
        example again without grad, so calls with grad since the trace do not stop the save
        (a TorchScript module saves whatever ran last; so does :func:`ember.jit.save`)."""
        if self.example is not None:
            args, kwargs = self.example
            with no_grad():
                self(*args, **kwargs)
        save_compiled(self, path)


def script_module(compiled: CompiledFunction, example: tuple | None = None) -> ScriptModule:
    """``compiled``'s function and settings as a :class:`ScriptModule` (``example``: what
    a trace ran on)."""
    out = ScriptModule(compiled.fn, compiled.static_argnums, "default", compiled.passes,
                       compiled.fullgraph)
    out.example = example
    return out


def script(obj: Any, optimize: Any = None, _frames_up: int = 0, _rcb: Any = None,
           example_inputs: Any = None) -> Any:
    """``torch.jit.script``: a function or module compiled with :func:`ember.jit.compile`, as a
    :class:`ScriptModule` (a class is given back as it is). ``optimize``, ``example_inputs``
    and the private arguments are accepted and unused.

    Example:
        >>> scripted = ember.jit.script(ember.nn.Linear(3, 2))
        >>> scripted(ember.ones(4, 3)).shape
        ember.Size([4, 2])
    """
    if isinstance(obj, type):
        return obj
    if not callable(obj):
        raise TypeError(f"ember.jit.script: expected a function or an nn.Module, got "
                        f"{type(obj).__name__}")
    return ScriptModule(obj)


def is_scripting() -> bool:
    """Always False: Ember never runs TorchScript, so code guarded by
    ``if not torch.jit.is_scripting():`` always runs.

    Example:
        >>> ember.jit.is_scripting()
        False
    """
    return False


def is_tracing() -> bool:
    """Whether a compiled function is being traced right now (``torch.jit.is_tracing``).

    Example:
        >>> ember.jit.is_tracing()
        False
    """
    return any(isinstance(h, Tracer) for h in DISPATCH.stack)


def ignore(drop: Any = False, **kwargs: Any) -> Any:
    """``@torch.jit.ignore`` and ``@torch.jit.ignore(drop=True)``: the function unchanged.

    Example:
        >>> ember.jit.ignore(len)([1, 2])
        2
    """
    if callable(drop):
        return drop
    return lambda fn: fn


def unused(fn: Callable) -> Callable:
    """``@torch.jit.unused``: the function unchanged.

    Example:
        >>> ember.jit.unused(abs)(-2)
        2
    """
    return fn


def export(fn: Callable) -> Callable:
    """``@torch.jit.export``: the method unchanged.

    Example:
        >>> ember.jit.export(abs)(-3)
        3
    """
    return fn


def annotate(the_type: Any, the_value: Any) -> Any:
    """``torch.jit.annotate(type, value)``: the value (the type is TorchScript's hint).

    Example:
        >>> ember.jit.annotate(list, [])
        []
    """
    return the_value
