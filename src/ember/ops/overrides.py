"""Tensor-like classes outside the core (``ember.nested``'s nested tensors) taking over the
functional ops that accept them.

An op that such a class supports starts with ``if type(input) in TENSOR_LIKE: return
handle(op, args, kwargs)``: a plain tensor pays one dictionary lookup, and the core never
imports the class; the class's package registers a handler here when it is imported (a
Python ``dict`` membership test costs about 40 ns, an eager op several microseconds). Binary
arithmetic of two tensors of one dtype pays nothing: :func:`ember.ops.convert.promote` looks
for such operands only on its slow path (scalars, mixed dtypes, other classes), raising
:class:`TensorLikeOperand`, and ``add``/``sub``/``mul``/``div`` hand the call over when they
catch it (a ``try`` costs nothing in Python 3.11 until it catches).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

__all__: list[str] = []

#: class -> handler(op, args, kwargs): computes the public function ``op`` on ``args``
TENSOR_LIKE: dict[type, Callable[[Callable, tuple, dict], Any]] = {}


class TensorLikeOperand(TypeError):
    """An operand is a registered tensor-like object, which ops that do not support it
    cannot take; ops that do catch this and call :func:`handle`."""


def register(cls: type, handler: Callable[[Callable, tuple, dict], Any]) -> None:
    """Makes ``handler(op, args, kwargs)`` compute the ops that find a ``cls`` operand."""
    TENSOR_LIKE[cls] = handler


def tensor_like(x: Any) -> bool:
    """Whether ``x`` is an instance of a registered tensor-like class."""
    return type(x) in TENSOR_LIKE


def handle(op: Callable, args: tuple, kwargs: dict) -> Any:
    """``op(*args, **kwargs)`` computed by the handler of the first tensor-like argument (or
    element of a list argument, as ``cat``'s)."""
    for arg in args:
        for x in arg if isinstance(arg, (list, tuple)) else (arg,):
            handler = TENSOR_LIKE.get(type(x))
            if handler is not None:
                return handler(op, args, kwargs)
    raise TypeError(f"{op.__name__}: no tensor-like argument to hand the call to")
