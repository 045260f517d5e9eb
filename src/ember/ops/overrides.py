"""Tensor-like classes outside the core (``ember.nested``'s nested tensors) taking over the
functional ops that accept them, at no cost to ordinary tensors.

Such a class registers a handler here when its package is imported (the core never imports
it), and raises :class:`TensorLikeOperand` wherever the core treats one of its objects as a
tensor: reading a tensor's internals (``_data``) or converting it to an array. An op that
supports the class hands the call over in one of two ways:

- ``try: … except TensorLikeOperand: return handle(op, args, kwargs)`` around the statement
  that first reads the input's internals: free until it catches (a ``try`` costs nothing in
  Python 3.11). The cheap ops use it (one-tensor math, ``relu``, ``sum``, ``transpose``,
  ``reshape``, ``squeeze``, ``unsqueeze``, ``clone``, ``matmul``; and ``add``/``sub``/``mul``/
  ``div``/``floor_divide``, ``where`` and the comparisons, whose operands meet
  :func:`ember.ops.convert.promote` first);
- ``if type(input) in TENSOR_LIKE: return handle(op, args, kwargs)`` first, for ops that
  check their input's shape before they read it (``softmax``, ``layer_norm``, attention, …):
  one dictionary lookup, about 40 ns against their several microseconds.

- ``@hands_over`` (:mod:`ember.ops.forwarding`) on the public function: a generated frame with
  its own parameters around the call (F's activations ``elu``, ``leaky_relu``, ``hardtanh``, …,
  of several microseconds each).

A handler with ``takes_out = True`` also computes the calls whose ``out=`` is one of its
class's objects (``ember.cat(qs, out=q)`` of quantized tensors), given ``out`` as a keyword.

The ``out=`` forms of the public functions (:mod:`ember.ops.out_arg`) catch it as well, so an
``ember.*`` function with an ``out=`` form hands over even where its op does not; a tensor's
binary method whose op does not (``dense.hypot(nt)``, ``dense << mt``) is bound as the op's
hand-over form (:func:`ember.ops.forwarding.hand_over_methods`).
``ember.autograd.grad`` and ``ember.autograd.backward`` hand over when :func:`handler_of` finds
a tensor-like among their outputs, gradients or inputs (a class that does not differentiate
that way raises its error); ``loss.backward()`` of a tensor does not look.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

# (the tensor-likes' errors name the op they met with these)
from ember.ops.public_op import calling_op, outermost_op  # noqa: F401

__all__: list[str] = []

#: class -> handler(op, args, kwargs): computes the public function ``op`` on ``args``
TENSOR_LIKE: dict[type, Callable[[Callable, tuple, dict], Any]] = {}


class TensorLikeOperand(TypeError):
    """A registered tensor-like object was used as a tensor; ops that support it catch this and
    call :func:`handle`, for the others it is the error the user sees."""


def register(cls: type, handler: Callable[[Callable, tuple, dict], Any]) -> None:
    """Makes ``handler(op, args, kwargs)`` compute the ops that find a ``cls`` operand."""
    TENSOR_LIKE[cls] = handler


def handler_of(args: tuple) -> Callable[[Callable, tuple, dict], Any] | None:
    """The handler of the first tensor-like argument (or element of a list or tuple argument,
    as ``cat``'s), or None: one dictionary lookup per argument and element."""
    like = TENSOR_LIKE
    for arg in args:
        if isinstance(arg, (list, tuple)):
            for x in arg:
                if type(x) in like:
                    return like[type(x)]
        elif type(arg) in like:
            return like[type(arg)]
    return None


def handle(op: Callable, args: tuple, kwargs: dict) -> Any:
    """``op(*args, **kwargs)`` computed by the handler of the first tensor-like argument (or
    element of a list argument, as ``cat``'s)."""
    handler = handler_of(args)
    if handler is None:
        raise TypeError(f"{op.__name__}: no tensor-like argument to hand the call to")
    return handler(op, args, kwargs)
