"""The ``torch._dynamo`` names that scripts and notebooks call: ``reset()`` (between
benchmarks of ``torch.compile``), ``is_compiling()``, ``disable`` and ``set_stance``, as
:mod:`ember.compiler`'s; ``mark_dynamic``, ``maybe_mark_dynamic`` and ``mark_static``, which
change nothing here: Ember compiles a graph per shape, so a tensor's new size traces again
(:func:`ember.jit.explain` says so) and every size computes what eager code does. Ember has no
Dynamo; its other names are not here.

Example:
    >>> step = ember.compile(lambda x: x * 2)
    >>> _ = step(ember.ones(2))
    >>> ember._dynamo.reset()  # every compiled function traces again on its next call
"""

from __future__ import annotations

from typing import Any

from ember.compiler import disable, is_compiling, reset, set_stance
from ember.errors import ArgumentTypeError
from ember.nn.module import Module
from ember.tensor import Tensor

__all__ = ["disable", "is_compiling", "mark_dynamic", "mark_static", "maybe_mark_dynamic",
           "reset", "set_stance"]


def _marked(what: str, t: Any, kinds: tuple[type, ...] = (Tensor,)) -> None:
    if not isinstance(t, kinds):
        raise ArgumentTypeError(f"ember._dynamo.{what}: expected a tensor, got "
                                f"{type(t).__name__}")


def mark_dynamic(t: Tensor, index: int | list | tuple, *, hint_override: int | None = None,
                 min: int | None = None, max: int | None = None,  # noqa: A002 (torch's)
                 specialize_on: list | None = None) -> None:
    """Accepted for ``torch._dynamo.mark_dynamic``: Ember traces each size it meets, so the
    dimensions ``index`` of ``t`` need no mark.

    Example:
        >>> ember._dynamo.mark_dynamic(ember.ones(4, 3), 0)
    """
    _marked("mark_dynamic", t)


def maybe_mark_dynamic(t: Tensor, index: int | list | tuple) -> None:
    """Accepted for ``torch._dynamo.maybe_mark_dynamic`` (see :func:`mark_dynamic`).

    Example:
        >>> ember._dynamo.maybe_mark_dynamic(ember.ones(4, 3), 0)
    """
    _marked("maybe_mark_dynamic", t)


def mark_static(t: Tensor | type[Module], index: int | list | tuple | None = None
                ) -> type[Module] | None:
    """Accepted for ``torch._dynamo.mark_static``: every size is static in Ember's graphs.
    As torch's, it takes a tensor or an ``nn.Module`` class (returned, so it decorates one),
    not a module instance.

    Example:
        >>> ember._dynamo.mark_static(ember.ones(4, 3))
        >>> ember._dynamo.mark_static(ember.nn.Linear)
        <class 'ember.nn.linear.Linear'>
    """
    if isinstance(t, type) and issubclass(t, Module):
        return t
    if not isinstance(t, Tensor):
        hint = ("; hint: pass its class, type(module), as torch's mark_static takes"
                if isinstance(t, Module) else "")
        raise ArgumentTypeError(f"ember._dynamo.mark_static: expected a tensor or an nn.Module "
                                f"class, got {type(t).__name__}{hint}")
    return None
