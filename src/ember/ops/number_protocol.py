"""A tensor as a Python number and container: ``int(t)``, ``float(t)``, ``complex(t)``,
``operator.index(t)`` (so ``range(t)`` and ``lst[t]``), ``x in t``, ``reversed(t)`` and
``del t[i]`` (refused), with PyTorch's rules."""

from __future__ import annotations

import numbers
from typing import Any

from ember import dtypes
from ember.errors import OpError, ValueOverflow, describe
from ember.ops.argument_kind import not_a_python_value
from ember.ops.compare import eq
from ember.ops.join import flip
from ember.tensor import Tensor, method

__all__: list[str] = []


@method("__int__")
def _to_int(self: Tensor) -> int:
    return int(_real_value(self, "int()"))


@method("__float__")
def _to_float(self: Tensor) -> float:
    return float(_real_value(self, "float()"))


@method("__complex__")
def _to_complex(self: Tensor) -> complex:
    return complex(self.item())


def _real_value(self: Tensor, what: str) -> Any:
    """The value of a one-element tensor as a real number: a complex one only when its
    imaginary part is 0, as in PyTorch (``int(tensor(3+0j))`` is 3)."""
    value = self.item()
    if not isinstance(value, complex):
        return value
    if value.imag:
        raise ValueOverflow(f"{what}: the complex value {value} has an imaginary part, which a "
                            "real number cannot hold. Hint: take .real or .abs() first")
    return value.real


@method("__index__")
def _to_index(self: Tensor) -> int:
    """``operator.index(t)`` (``range(t)``, ``lst[t]``): an integer or bool tensor of one
    element, as in PyTorch."""
    if self.dtype.category > dtypes.INT or self._data.size != 1:
        raise not_a_python_value(self, "int", TypeError(
            "only integer tensors of a single element can be used as an index, got "
            f"{describe(self.shape, self.dtype)}"))
    return int(self.item())


@method("__contains__")
def _contains(self: Tensor, element: Any) -> bool:
    """``element in t``: whether any element of ``t`` equals ``element``, a number or a
    tensor (compared with broadcasting), as in PyTorch.

    Example:
        >>> 2 in ember.tensor([[1, 2], [3, 4]]), ember.tensor([3, 4]) in ember.eye(2)
        (True, False)
    """
    if not isinstance(element, (Tensor, numbers.Number)):
        raise OpError(f"in: a tensor can only contain a number or a tensor, not "
                      f"{type(element).__name__}")
    return bool(eq(self, element).any())


@method("__reversed__")
def _reversed(self: Tensor) -> Tensor:
    """``reversed(t)``: ``t`` flipped along its first dimension (a 0-d ``t`` itself), a
    tensor as in PyTorch, not an iterator.

    Example:
        >>> reversed(ember.tensor([1, 2, 3]))
        tensor([3, 2, 1])
    """
    return self if self.ndim == 0 else flip(self, 0)


@method("__delitem__")
def _delitem(self: Tensor, key: Any) -> None:
    raise TypeError("a tensor does not support deleting items (del t[i]), as in PyTorch. Hint: "
                    "keep the others by indexing, e.g. t[mask] or ember.cat of slices")
