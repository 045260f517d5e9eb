"""Python's binary-operator protocol for tensors: ``t + obj`` gives way to ``obj.__radd__``.

When a tensor's operator cannot take the right operand, Python asks the operand's reflected
method only if the tensor's returns ``NotImplemented``, as PyTorch's operators do. Ember's
return it for an operand that Ember does not take as a tensor (not a tensor, number or NumPy
array, nor a registered tensor-like that answers the op itself) and whose type has the
reflected method: a user's class with ``__radd__`` computes
``t + obj``, ``t += obj`` falls back to it too, and a one-element integer tensor repeats a
list (``ember.tensor(2) * [1, 2]`` is ``[1, 2, 1, 2]``). An operand without one keeps
Ember's error, which names the op and says how to convert it (Python's own would only say
"unsupported operand type(s)"); so do numbers and arrays the op refuses (``bool - bool``).
An array of another library (a PyTorch tensor, anything with ``__dlpack__``) on either side
of an operator or a comparison is refused with an ``ArgumentTypeError`` that names both types
and how to convert, not handed to its reflected method (``torch.Tensor``'s gives up, leaving
Python's bare message) nor silently converted.

The binding costs the operators one Python frame (~25 ns of the ~1.9 µs of ``x + y``).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from ember.errors import ArgumentTypeError, type_name
from ember.ops.overrides import TENSOR_LIKE
from ember.tensor import Tensor

__all__: list[str] = []

#: operator -> the reflected method Python asks next (the in-place forms fall back to it too)
_REFLECTED = {"add": "radd", "sub": "rsub", "mul": "rmul", "truediv": "rtruediv",
              "floordiv": "rfloordiv", "mod": "rmod", "pow": "rpow", "matmul": "rmatmul",
              "and": "rand", "or": "ror", "xor": "rxor", "lshift": "rlshift",
              "rshift": "rrshift"}

#: what a tensor's operators take as the other operand (the comparisons too)
OPERANDS = (Tensor, int, float, complex, bool, np.generic, np.ndarray)

#: an operator's name (its dunder's, ``r`` and ``i`` forms too) -> the symbol users write
_SYMBOLS = {"add": "+", "sub": "-", "mul": "*", "truediv": "/", "floordiv": "//", "mod": "%",
            "pow": "**", "matmul": "@", "and": "&", "or": "|", "xor": "^", "lshift": "<<",
            "rshift": ">>", "eq": "==", "ne": "!=", "lt": "<", "le": "<=", "gt": ">",
            "ge": ">="}


def refuse_foreign(dunder: str, left: Any, right: Any) -> None:
    """Raises for ``left <op> right`` (``dunder`` names the operator) when either operand is
    another library's array (a PyTorch tensor): Ember takes it in no operator, and Python's
    fallback would say only "unsupported operand type(s) … 'Tensor' and 'Tensor'". For the
    error paths of the operators."""
    for x in (left, right):
        kind = type(x)
        if not isinstance(x, OPERANDS) and kind not in TENSOR_LIKE and hasattr(kind, "__dlpack__"):
            name = dunder.strip("_")
            if name not in _SYMBOLS:
                name = name[1:]  # (radd, iadd)
            symbol = _SYMBOLS[name] + ("=" if dunder.startswith("__i") else "")
            left_kind, right_kind = (f"ember.{type_name(y)}" if isinstance(y, Tensor)
                                     else type_name(y) for y in (left, right))
            raise ArgumentTypeError(
                f"{symbol} ({name}): unsupported operands {left_kind} and {right_kind}; "
                "Ember's operators take Ember tensors, numbers and NumPy arrays. Hint: convert "
                f"the {type_name(x)} first, with ember.from_dlpack(x) "
                "(shares its memory) or ember.tensor(x.numpy())")


#: Python's sequences, handed back before the op where their type has the reflected method
#: (``n * [0]`` repeats the list): the op's error, built then caught, costs ~70 us
_SEQUENCES = (list, tuple, str, bytes, bytearray)


def _giving_way(fn: Callable[..., Any], dunder: str, reflected: str) -> Callable[..., Any]:
    yielding = frozenset(kind for kind in _SEQUENCES if hasattr(kind, reflected))

    def op(self: Tensor, other: Any) -> Any:
        if type(other) in yielding:
            return NotImplemented
        try:
            return fn(self, other)
        except TypeError:
            refuse_foreign(dunder, self, other)
            kind = type(other)
            if not isinstance(other, OPERANDS) and kind not in TENSOR_LIKE and \
                    hasattr(kind, reflected):
                return NotImplemented
            raise
    op.__name__, op.__qualname__, op.__doc__ = fn.__name__, fn.__qualname__, fn.__doc__
    return op


def bind() -> None:
    """Wraps the binary operators already bound on :class:`Tensor` (once, at import)."""
    for name, reflected in _REFLECTED.items():
        for dunder in (f"__{name}__", f"__i{name}__"):
            if dunder in vars(Tensor):
                setattr(Tensor, dunder, _giving_way(vars(Tensor)[dunder], dunder,
                                                        f"__{reflected}__"))
