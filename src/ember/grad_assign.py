"""The checks of ``x.grad = g``, as PyTorch's: a gradient has its tensor's shape, dtype and
device, and is not the tensor itself (``backward`` would accumulate into the parameter).
Leaves-first module: it imports only :mod:`ember.errors`, so the tensor class can use it."""

from __future__ import annotations

from typing import Any

from ember.errors import DTypeError, GradError, ShapeError

__all__ = ["check_assigned_grad"]


def check_assigned_grad(owner: Any, value: Any) -> None:
    """Raises unless the tensor(-like) ``value`` may be ``owner``'s ``.grad``."""
    if value is owner:
        raise GradError("grad: can't assign a tensor as its own gradient; backward would "
                        "accumulate into the tensor itself. Hint: assign a clone()")
    if value.shape != owner.shape:
        raise ShapeError(f"grad: assigned a gradient of shape {tuple(value.shape)} to a "
                         f"tensor of shape {tuple(owner.shape)}; a gradient has its "
                         "tensor's shape")
    if value.dtype is not owner.dtype or value.device != owner.device:
        raise DTypeError(f"grad: assigned a {value.dtype.name} gradient on {value.device} to "
                         f"a {owner.dtype.name} tensor on {owner.device}; a gradient has its "
                         f"tensor's dtype and device. Hint: .to({owner.dtype}) it first")
