"""Constructors from a tensor: ``x.new_zeros``, ``new_ones``, ``new_full``, ``new_empty``,
``new_empty_strided``, ``new_tensor`` and the legacy ``x.new(...)``, in ``x``'s dtype and
device unless given (batched inside ``vmap`` when ``x`` is). All but ``new_tensor`` accept
``pin_memory=``, as PyTorch's do (the CPU has nothing to pin)."""

from __future__ import annotations

import warnings
from collections.abc import Callable
from typing import Any

import numpy as np

from ember.errors import type_name
from ember.ops.constructors import empty_strided
from ember.ops.creation import (
    NO_SIZE,
    _shape,
    check_strided,
    empty,
    full,
    given_size,
    made_per_sample,
    ones,
    sequence_size,
    tensor,
    zeros,
)
from ember.ops.primitive import DISPATCH
from ember.size import Size
from ember.tensor import Tensor, method

__all__: list[str] = []  # (methods only)


def _like_self(self: Tensor, dtype: Any, device: Any) -> tuple[Any, Any]:
    return (self.dtype if dtype is None else dtype,
            self.device if device is None else device)


def _new(self: Tensor, name: str, make: Callable, size: tuple, dtype: Any, device: Any,
         requires_grad: bool, layout: Any, *args: Any) -> Tensor:
    """``make(*size, *args)`` with ``self``'s dtype and device unless given (``layout``:
    strided only, as the factories take it). Inside ``vmap``
    the result of a batched ``self`` is batched, as in PyTorch: method ``name`` runs on
    ``self``'s batch with the batch size in front of the shape (see ``made_per_sample``)."""
    check_strided(name, layout)
    dtype, device = _like_self(self, dtype, device)
    kwargs = {"dtype": dtype, "device": device, "requires_grad": requires_grad}
    if DISPATCH.handler is not None:
        shape = _shape(size, name)
        made = made_per_sample(self, lambda src: getattr(src, name)((src.shape[0], *shape),
                                                                    *args, **kwargs))
        if made is not None:
            return made
    return make(*size, *args, **kwargs)


@method()
def new_zeros(self: Tensor, *sizes: Any, size: Any = NO_SIZE, dtype: Any = None,
              device: Any = None, requires_grad: bool = False, layout: Any = None,
              pin_memory: bool = False) -> Tensor:
    """Zeros of ``size`` (given as ``*sizes``, a sequence or ``size=``) with ``self``'s dtype
    and device unless given.

    Example:
        >>> ember.ones(2, dtype=ember.int64).new_zeros(3)
        tensor([0, 0, 0])
    """
    return _new(self, "new_zeros", zeros, given_size("new_zeros", sizes, size), dtype, device,
                requires_grad, layout)


@method()
def new_ones(self: Tensor, *sizes: Any, size: Any = NO_SIZE, dtype: Any = None,
             device: Any = None, requires_grad: bool = False, layout: Any = None,
             pin_memory: bool = False) -> Tensor:
    """Ones of ``size`` (given as ``*sizes``, a sequence or ``size=``) with ``self``'s dtype
    and device unless given.

    Example:
        >>> ember.zeros(2, dtype=ember.float64).new_ones(2, 2)
        tensor([[1., 1.],
                [1., 1.]], dtype=ember.float64)
    """
    return _new(self, "new_ones", ones, given_size("new_ones", sizes, size), dtype, device,
                requires_grad, layout)


@method()
def new_full(self: Tensor, size: Any, fill_value: Any, *, dtype: Any = None, device: Any = None,
             requires_grad: bool = False, layout: Any = None, pin_memory: bool = False) -> Tensor:
    """``fill_value`` everywhere in a tensor of ``size``, with ``self``'s dtype and device
    unless given.

    Example:
        >>> ember.zeros(1).new_full((2,), 7)
        tensor([7., 7.])
    """
    return _new(self, "new_full", full, (sequence_size("new_full", size),), dtype, device,
                requires_grad, layout, fill_value)


@method()
def new_empty(self: Tensor, *sizes: Any, size: Any = NO_SIZE, dtype: Any = None,
              device: Any = None, requires_grad: bool = False, layout: Any = None,
              pin_memory: bool = False) -> Tensor:
    """An uninitialised tensor of ``size`` (``*sizes``, a sequence or ``size=``) with ``self``'s
    dtype and device unless given.

    Example:
        >>> ember.zeros(1, dtype=ember.int32).new_empty(2, 3).shape
        ember.Size([2, 3])
    """
    return _new(self, "new_empty", empty, given_size("new_empty", sizes, size), dtype, device,
                requires_grad, layout)


@method()
def new_empty_strided(self: Tensor, size: Any, stride: Any, *, dtype: Any = None,
                      device: Any = None, requires_grad: bool = False,
                      layout: Any = None, pin_memory: bool = False) -> Tensor:
    """:func:`ember.empty_strided` with ``self``'s dtype and device unless given.

    Example:
        >>> ember.zeros(1).new_empty_strided((2, 3), (1, 2)).stride()
        (1, 2)
    """
    dtype, device = _like_self(self, dtype, device)
    return empty_strided(size, stride, dtype=dtype, device=device, requires_grad=requires_grad,
                         layout=layout)


@method()
def new_tensor(self: Tensor, data: Any, *, dtype: Any = None, device: Any = None,
               requires_grad: bool = False) -> Tensor:
    """A new leaf tensor holding a copy of ``data``, with ``self``'s dtype and device unless
    given (a tensor ``data`` is copied and detached).

    Example:
        >>> ember.zeros(1, dtype=ember.float64).new_tensor([1, 2])
        tensor([1., 2.], dtype=ember.float64)
    """
    dtype, device = _like_self(self, dtype, device)
    if isinstance(data, Tensor):
        warnings.warn("To copy construct from a tensor, it is recommended to use "
                      "sourceTensor.detach().clone() or sourceTensor.detach().clone()"
                      ".requires_grad_(True), rather than tensor.new_tensor(sourceTensor) "
                      "(as PyTorch warns)", UserWarning, stacklevel=2)
        out = data.detach().to(dtype=dtype, device=device, copy=True)
        return out.requires_grad_(True) if requires_grad else out
    return tensor(data, dtype=dtype, device=device, requires_grad=requires_grad)


@method()
def new(self: Tensor, *args: Any, device: Any = None) -> Tensor:
    """PyTorch's legacy constructor, in ``self``'s dtype: ``x.new()`` is empty, ``x.new(2, 3)``
    (or ``x.new(ember.Size(...))``) uninitialised of that size, ``x.new(data)`` a copy of a
    list or tuple of numbers, and ``x.new(other)`` ``other`` itself (which must have
    ``self``'s dtype).

    Example:
        >>> ember.zeros(1, dtype=ember.int64).new([1, 2])
        tensor([1, 2])
    """
    device = self.device if device is None else device
    if len(args) == 1 and isinstance(args[0], Size):  # (sizes, not data: a tuple too)
        return empty(tuple(args[0]), dtype=self.dtype, device=device)
    if len(args) == 1 and isinstance(args[0], Tensor):
        if args[0].dtype is not self.dtype:
            raise TypeError(f"new: expected a tensor of dtype {self.dtype.name}, got "
                            f"{args[0].dtype.name}")
        return args[0]
    if len(args) == 1 and isinstance(args[0], (list, tuple, np.ndarray)):
        return tensor(args[0], dtype=self.dtype, device=device)
    if not all(isinstance(n, int) and not isinstance(n, bool) for n in args):
        raise TypeError(f"new: expected sizes (ints), a sequence of data or a tensor, got "
                        f"{', '.join(type_name(n) for n in args)}")
    return empty(*args, dtype=self.dtype, device=device) if args else \
        empty(0, dtype=self.dtype, device=device)
