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

The binding costs the operators one Python frame (~25 ns of the ~1.9 µs of ``x + y``).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

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


def _giving_way(fn: Callable[..., Any], reflected: str) -> Callable[..., Any]:
    def op(self: Tensor, other: Any) -> Any:
        try:
            return fn(self, other)
        except TypeError:
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
                setattr(Tensor, dunder, _giving_way(vars(Tensor)[dunder], f"__{reflected}__"))
