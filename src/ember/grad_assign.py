"""The checks of ``x.grad = g``, as PyTorch's: a gradient has its tensor's shape and device,
the tensor's ``grad_dtype`` (its dtype unless set: ``None`` takes any), and is not the tensor
itself (``backward`` would accumulate into the parameter). Also ``grad_dtype`` itself.
Leaves-first module: it imports only errors and dtypes, so the tensor class can use it."""

from __future__ import annotations

from typing import Any

from ember import dtypes
from ember.errors import DTypeError, GradError, ShapeError

__all__ = ["check_assigned_grad", "SAME_DTYPE", "read_grad_dtype", "set_grad_dtype"]

#: a tensor's ``_grad_dtype`` until one is set: its gradient has its own dtype
SAME_DTYPE = object()


def _leaf_only(owner: Any, verb: str) -> None:
    if owner.grad_fn is not None:
        raise GradError(f"grad_dtype can only be {verb} on leaf tensors (this one has "
                        f"grad_fn={owner.grad_fn.name()})")


def read_grad_dtype(owner: Any) -> dtypes.DType | None:
    """The dtype ``owner.grad`` must have (its own unless set; None: any), as PyTorch 2.13's
    ``Tensor.grad_dtype``; leaves only."""
    _leaf_only(owner, "accessed")
    want = owner._grad_dtype
    return owner.dtype if want is SAME_DTYPE else want


def set_grad_dtype(owner: Any, value: Any) -> None:
    """Sets the dtype of ``owner``'s gradients: ``backward`` casts to it, ``.grad =``
    checks it; None lets a gradient keep its own."""
    _leaf_only(owner, "set")
    if value is not None:
        value = dtypes.to_dtype(value)
        if value.category < dtypes.FLOAT:
            raise DTypeError(f"grad_dtype: gradients are floating or complex, got "
                             f"{value.name}. Hint: pass a floating dtype, or None for any")
    owner._grad_dtype = value


def check_assigned_grad(owner: Any, value: Any) -> None:
    """Raises unless the tensor(-like) ``value`` may be ``owner``'s ``.grad``."""
    if value is owner:
        raise GradError("grad: can't assign a tensor as its own gradient; backward would "
                        "accumulate into the tensor itself. Hint: assign a clone()")
    if value.shape != owner.shape:
        raise ShapeError(f"grad: assigned a gradient of shape {tuple(value.shape)} to a "
                         f"tensor of shape {tuple(owner.shape)}; a gradient has its "
                         "tensor's shape")
    want = owner._grad_dtype
    want = owner.dtype if want is SAME_DTYPE else want
    if want is not None and value.dtype is not want:
        raise DTypeError(f"grad: assigned a {value.dtype.name} gradient to a "
                         f"{owner.dtype.name} tensor whose grad_dtype is {want.name} (its "
                         "dtype unless set). Hint: "
                         f".to({want}) it first, or set the tensor's grad_dtype (None: any)")
    if value.device != owner.device:
        raise DTypeError(f"grad: assigned a gradient on {value.device} to a tensor on "
                         f"{owner.device}; a gradient has its tensor's device. Hint: "
                         f".to({str(owner.device)!r}) it first")
