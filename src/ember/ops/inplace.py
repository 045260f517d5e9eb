"""In-place ops (``x.add_(y)``, ``x += y``, ``x[i] = v``) built from their out-of-place forms.

The result is computed out of place, written into ``x``'s memory (so views of ``x`` see it),
``x``'s version counter goes up, and ``x``'s history moves to the new node, whose input is an
alias of the old ``x``. A backward that needs the old value then fails with a clear error
instead of using the overwritten one.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from ember.autograd.grad_mode import GRAD
from ember.errors import DTypeError, GradError, ShapeError
from ember.tensor import Tensor, _wrap, method


def inplace(x: Tensor, name: str, compute: Callable[[Tensor], Tensor]) -> Tensor:
    """Writes ``compute(alias of x)`` into ``x`` and moves ``x``'s history to the result."""
    if GRAD.enabled and x.requires_grad and x._node is None:
        raise GradError(f"{name}: a leaf tensor that requires grad (shape {tuple(x.shape)}) "
                        "cannot be modified in place, since its gradient would be lost. Hint: "
                        "do it under `with ember.no_grad():`, or on a clone")
    old = _wrap(x._data, x._device, x.requires_grad, x._node, x._idx, x._vc)
    result = compute(old)
    if result.shape != x.shape:
        raise ShapeError(f"{name}: the result has shape {tuple(result.shape)} but the tensor "
                         f"written in place has shape {tuple(x.shape)}; in-place ops cannot "
                         "broadcast the tensor they write to")
    if result.dtype is not x.dtype:
        if result.dtype.category > x.dtype.category:
            raise DTypeError(f"{name}: the result type {result.dtype.name} cannot be cast to "
                             f"the {x.dtype.name} tensor written in place")
        result = result.to(x.dtype)
    try:
        x._data[...] = result._data
    except ValueError as exc:  # a read-only broadcast view, typically
        raise GradError(f"{name}: cannot write into this tensor ({exc}). Hint: tensors made "
                        "by expand() share one element across many positions; clone() "
                        "them before writing") from None
    x._vc.value += 1
    if result.requires_grad:
        x._node, x._idx, x.requires_grad = result._node, result._idx, True
    return x


def inplace_method(name: str, fn: Callable[..., Tensor]) -> Callable[..., Tensor]:
    """Makes ``x.name(*args)`` = ``inplace(x, name, lambda x: fn(x, *args))`` and binds it."""
    def op(self: Tensor, *args: Any, **kwargs: Any) -> Tensor:
        return inplace(self, name, lambda old: fn(old, *args, **kwargs))
    op.__name__ = name
    op.__doc__ = f"In-place form of ``{fn.__name__}``: writes the result into ``self``."
    return method(name)(op)


def bind_inplace(**ops: Callable[..., Tensor]) -> None:
    """``bind_inplace(add_=add, __iadd__=add)`` binds in-place methods for out-of-place ops."""
    for name, fn in ops.items():
        inplace_method(name, fn)
