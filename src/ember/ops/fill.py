"""Filling tensors in place: ``fill_``, ``zero_``, ``copy_`` and the random fills
``uniform_``, ``normal_``, ``bernoulli_``. With no gradient to track they write straight into
the tensor's memory; otherwise they go through :func:`ember.ops.inplace.inplace`, so history,
version counters and views stay right."""

from __future__ import annotations

import numbers
from typing import Any

import numpy as np

from ember.autograd.grad_mode import GRAD, refuse_inference_write
from ember.autograd.graph import name_node
from ember.backend.memory_block import writable_alias
from ember.backend.meta import copy_out
from ember.dtypes import COMPLEX_DTYPES, FLOATING_DTYPES, cast_ready
from ember.errors import ArgumentError, ArgumentTypeError, DTypeError, ShapeError
from ember.ops.broadcast import expand
from ember.ops.convert import Copy, cast
from ember.ops.creation import as_tensor, empty_like
from ember.ops.fits import check_fits, check_number_int, converts_unchecked
from ember.ops.inplace import count_write, inplace, needs_history
from ember.ops.primitive import apply
from ember.ops.random import Generator, bernoulli, normal_samples, uniform_samples
from ember.ops.select import zero_grad_from
from ember.tensor import Tensor, method

__all__ = ["fill"]

_NUMBERS = (int, float, bool)
_INT64_LIMIT = 2**63
_SET_BY_NUMBER = (*FLOATING_DTYPES, *COMPLEX_DTYPES)  # (not integers: uint8.fill_(-1) wraps
#                                                      in as_tensor, NumPy's setitem refuses)


@method()
def copy_(self: Tensor, src: Any, non_blocking: bool = False) -> Tensor:
    """Copies ``src`` (broadcast, cast to ``self``'s dtype) into ``self``; returns ``self``.

    Example:
        >>> x = ember.zeros(2, 3)
        >>> x.copy_(ember.tensor([1.0, 2.0, 3.0]))[1]
        tensor([1., 2., 3.])
    """
    return _write_from(self, src, "copy_")


def _write_from(self: Tensor, src: Any, name: str) -> Tensor:
    """``copy_`` for the fills, under their own name (which errors show)."""
    if self._vc.inference and not GRAD.inference:
        refuse_inference_write(self, name)
    if type(src) in _NUMBERS and self.dtype in _SET_BY_NUMBER and not needs_history(self) and \
            (type(src) is not int or -_INT64_LIMIT <= src < _INT64_LIMIT):
        # (zero_, fill_(2.0): NumPy's own conversion of the number gives as_tensor's bits
        # for these dtypes, /work/fuzz/overhead45b/fillcheck.py; ~2 µs less a call; an int
        # beyond int64 takes as_tensor's reading, below)
        if _written(self, src):
            return self
    check_number_int(name, src)
    number = not isinstance(src, Tensor)
    src = as_tensor(src, dtype=self.dtype) if number else src
    if src.is_meta and not self.is_meta:
        copy_out(name, self.device)
    if not needs_history(self, src) and (_written(self, src._data) or number and
                                         name != "copy_" and _filled_aliased(self, src._data)):
        return self
    return inplace(self, name, lambda old: _value(src, old, name))


def _value(src: Tensor, old: Tensor, name: str) -> Tensor:
    """What ``name`` writes into ``old``; ``copy_``'s, when it needs a gradient, made by a
    node of its own (``CopyBackwards``, as PyTorch's): ``src`` itself, a leaf of ``old``'s
    shape and dtype, would otherwise become the written tensor's history, and its gradient
    would stop there. That node gives ``old``'s history a zero gradient, as PyTorch's."""
    value = expand(cast(src, old.dtype), old.shape)
    if name == "copy_" and old.requires_grad and GRAD.enabled:
        return name_node(zero_grad_from(old, value), "CopyBackwards")
    if name == "copy_" and value.requires_grad:
        return name_node(apply(Copy, value), "CopyBackwards")
    return value


def _written(self: Tensor, values: Any) -> bool:
    """Writes ``values`` straight into ``self``'s memory and counts the version; False where
    the memory refuses (read-only: the general path says what is wrong)."""
    try:  # (converted as PyTorch's casts: float16 through float32, float8 saturating)
        self._data[...] = cast_ready(self._device.xp, values, self.dtype)
    except ValueError:
        return False
    count_write(self)
    return True


def _filled_aliased(self: Tensor, value: Any) -> bool:
    """A number written by ``fill_``/``zero_`` into a tensor whose elements share memory
    (``expand``'s, ``as_strided``'s: read-only arrays here), through a writable array over the
    same memory: each location gets the one value, so PyTorch allows it (and no other write).
    False where that memory is not writable (a read-only buffer, a loaded file)."""
    alias = writable_alias(self._data, overlapping=True)
    if alias is None:
        return False
    alias[...] = cast_ready(np, value, self.dtype)
    count_write(self)
    return True


@method()
def fill_(self: Tensor, value: Any) -> Tensor:
    """Sets every element to ``value`` (a number or a one-element tensor); returns ``self``."""
    if isinstance(value, Tensor) and value.numel() != 1:
        raise ArgumentError(f"fill_: the value must have one element, got shape "
                            f"{tuple(value.shape)}")
    if isinstance(value, Tensor):
        value = value.reshape(())
    elif type(value) not in _NUMBERS and not isinstance(value, (numbers.Number, np.bool_)) \
            and not (isinstance(value, np.ndarray) and value.ndim == 0):
        raise ArgumentTypeError(f"fill_(): argument 'value' must be a number or a one-element "
                                f"tensor, not {type(value).__name__}. Hint: for a value per "
                                f"element, use copy_")  # (a list was broadcast like copy_'s)
    elif not converts_unchecked(self.dtype, self.numel()):  # a number the dtype cannot hold
        check_fits("fill_", value, self.dtype)  # is an error (a tensor value wraps, as torch)
    return _write_from(self, value, "fill_")


def fill(input: Tensor, value: Any) -> Tensor:
    """A new tensor of ``input``'s shape and dtype holding ``value`` everywhere (a number or a
    0-d tensor, to which the gradient flows).

    Example:
        >>> ember.fill(ember.zeros(2, 2), 3.0)
        tensor([[3., 3.],
                [3., 3.]])
    """
    if isinstance(value, Tensor) and value.ndim != 0:
        raise ShapeError(f"fill: only supports a 0-dimension value tensor, but got one of shape "
                         f"{tuple(value.shape)}. Hint: pass value.reshape(()) or value.item()")
    # (input's gradient is zero, but it has one, as PyTorch's)
    return zero_grad_from(input, fill_(empty_like(input), value))


@method()
def zero_(self: Tensor) -> Tensor:
    """Sets every element to zero; returns ``self``."""
    return _write_from(self, 0, "zero_")


@method()
def uniform_(self: Tensor, from_: float = 0.0, to: float = 1.0, *,
             generator: Generator | None = None) -> Tensor:
    """Fills with samples from U(from_, to) (each part of a complex tensor); returns ``self``.

    Example:
        >>> bool((ember.zeros(100).uniform_(to=0.5) < 0.5).all())
        True
    """
    return _write_from(self, uniform_samples(self.shape, from_, to, dtype=self.dtype,
                                             device=self.device, generator=generator),
                       "uniform_")  # (on the meta device, no draws: the generator stays)


@method()
def normal_(self: Tensor, mean: float = 0.0, std: float = 1.0, *,
            generator: Generator | None = None) -> Tensor:
    """Fills with samples from N(mean, std²); returns ``self``. A complex tensor gets the
    complex normal, as PyTorch's: each part N(mean, std²/2)."""
    return _write_from(self, normal_samples(self.shape, mean, std, dtype=self.dtype,
                                            device=self.device, generator=generator),
                       "normal_")


@method("bernoulli_")
def bernoulli_(self: Tensor, p: Any = 0.5, *, generator: Generator | None = None) -> Tensor:
    """Fills with 0/1 samples, 1 with probability ``p``: a number, or a floating tensor of
    probabilities broadcast to ``self``'s shape; returns ``self``.

    Example:
        >>> ember.zeros(2, 2).bernoulli_(ember.tensor([0.0, 1.0]))
        tensor([[0., 1.],
                [0., 1.]])
    """
    if self.dtype.is_complex:
        raise DTypeError("bernoulli_: not implemented for complex tensors, as in PyTorch. Hint: "
                         "fill a real tensor and convert with .to()")
    if isinstance(p, Tensor) and p.ndim:
        if not p.dtype.is_floating_point:
            raise DTypeError(f"bernoulli_: probabilities must be floating, got {p.dtype.name}")
        draws = bernoulli(expand(p.detach(), tuple(self.shape)), generator=generator)
    else:
        draws = bernoulli(self, p, generator=generator)
    return _write_from(self, draws.detach(), "bernoulli_")
