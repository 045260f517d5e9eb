"""``Variable``: PyTorch's deprecated name for a tensor, kept so old scripts run."""

from __future__ import annotations

import warnings
from typing import Any

from ember.tensor import Tensor

__all__ = ["Variable"]


class _VariableMeta(type):
    def __instancecheck__(cls, instance: Any) -> bool:
        return isinstance(instance, Tensor)


class Variable(metaclass=_VariableMeta):
    """Deprecated, as in PyTorch: every tensor is a ``Variable``. ``Variable(data,
    requires_grad=False)`` returns ``data`` detached (sharing its memory) with that
    ``requires_grad``; ``volatile`` has no effect (use :class:`ember.no_grad`).

    Example:
        >>> v = ember.autograd.Variable(ember.ones(2), requires_grad=True)
        >>> v.requires_grad, isinstance(ember.ones(1), ember.autograd.Variable)
        (True, True)
    """

    def __new__(cls, data: Tensor, requires_grad: bool = False, volatile: bool = False
                ) -> Tensor:  # type: ignore[misc]
        if not isinstance(data, Tensor):
            raise TypeError(f"Variable data has to be a tensor, but got {type(data).__name__}")
        if volatile:
            warnings.warn("volatile was removed and now has no effect. Use `with "
                          "ember.no_grad():` instead.", UserWarning, stacklevel=2)
        return data.detach().requires_grad_(requires_grad)
