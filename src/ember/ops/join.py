"""Ops that build a new tensor from pieces of others: cat/stack/hstack/vstack, repeat/tile,
flip and roll.

One primitive, ``cat`` (its vjp slices the gradient back into pieces). ``stack`` is unsqueeze
and cat (called eagerly, the ``stack`` primitive: one op instead of one per tensor);
``repeat`` is a view with a size-1 dim before each dim, expanded and copied; ``flip`` a copy
of a negative-step slice; ``roll`` the cat of two slices per dim.
"""

from __future__ import annotations

import functools
from collections.abc import Sequence
from typing import Any

from ember import dtypes
from ember.autograd.graph import name_node
from ember.errors import (
    ArgumentError,
    DTypeError,
    ShapeError,
    UninitializedError,
    refuse_non_tensors,
)
from ember.layouts import contiguous_format, dense_in_order, suggested_format
from ember.ops.broadcast import expand
from ember.ops.convert import Copy, cast, clone
from ember.ops.creation import zeros
from ember.ops.dims import normalize_dims
from ember.ops.indexing import FULL, Slice
from ember.ops.overrides import TENSOR_LIKE, handle, handler_of
from ember.ops.primitive import DISPATCH, Primitive, TensorSpec, apply, plain, primitive
from ember.ops.reduce import normalize_dim
from ember.ops.shape import (
    as_ints,
    atleast_1d,
    atleast_2d,
    flatten,
    read_sizes,
    reshape,
    reshape_view,
    slice_dim,
    unsqueeze,
)
from ember.tensor import Tensor, _wrap, method

__all__ = ["cat", "concat", "concatenate", "stack", "hstack", "vstack", "row_stack",
           "repeat", "tile", "flip",
           "fliplr", "flipud", "roll"]


def joined(items: Sequence) -> Sequence:
    """The arrays or specs ``cat`` joins: PyTorch's legacy rule skips 1-d empty tensors,
    whatever the others' shapes."""
    kept = [a for a in items if a.shape != (0,)]
    return items if len(kept) == len(items) else kept or items[:1]


def uninitialized(op: str) -> UninitializedError:
    """PyTorch's error for joining a lazy module's parameter, whose ``shape`` raises a
    RuntimeError (a plain tensor's never does) until its first call gives it one."""
    return UninitializedError(f"Attempted to use an uninitialized parameter in {op}. Hint: "
                              "call the lazy module's forward with a dummy batch first, to "
                              "initialize its parameters")


def cat_layout(xp, out, arrays: Sequence):
    """``out``, the NumPy concatenation of ``arrays`` (not C-ordered), laid out as PyTorch's
    ``cat``: in the inputs' channels-last(-3d) format when all suggest that one (a legacy
    empty (0,) operand too, which suggests C), else C (NumPy keeps any order the inputs
    share, e.g. a transpose's, and orders size-1 dimensions as it likes)."""
    fmt = suggested_format(arrays[0])
    if fmt is contiguous_format or any(suggested_format(a) is not fmt for a in arrays[1:]):
        return xp.ascontiguousarray(out)
    if dense_in_order(out.shape, tuple(s // out.itemsize for s in out.strides), fmt.dims):
        return out
    inverse = tuple(sorted(range(fmt.rank), key=fmt.dims.__getitem__))
    return xp.ascontiguousarray(out.transpose(fmt.dims)).transpose(inverse)


def concatenated(xp, arrays: Sequence, dim: int):
    """``arrays`` joined along ``dim``, laid out as PyTorch's ``cat`` (C inputs: one flag
    read)."""
    out = xp.concatenate(joined(arrays), axis=dim)
    return out if out.flags.c_contiguous else cat_layout(xp, out, arrays)


@primitive
class Cat(Primitive):
    name = "cat"
    limited_dtypes = dtypes.ALL_LIMITED
    complex_grad = True  # moves, copies or sums elements: real coefficients
    save_inputs = False

    def forward(self, xp, *arrays, dim):
        # (``concatenated``, inlined: one call less on a hot path)
        out = xp.concatenate(joined(arrays), axis=dim)
        return out if out.flags.c_contiguous else cat_layout(xp, out, arrays)

    def infer(self, *specs, dim):
        specs = joined(specs)
        first = specs[0]
        for i, s in enumerate(specs):
            if len(s.shape) != len(first.shape):
                raise ShapeError(f"cat: tensors must have the same number of dimensions: tensor "
                                 f"0 has shape {first.shape} and tensor {i} has {s.shape}")
            for d, (a, b) in enumerate(zip(first.shape, s.shape, strict=True)):
                if d != dim and a != b:
                    raise ShapeError(f"cat: sizes of tensors must match except in dimension "
                                     f"{dim}: expected size {a} but got size {b} for tensor "
                                     f"number {i} in the list (shapes {first.shape} and "
                                     f"{s.shape}, dimension {d})")
        size = sum(s.shape[dim] for s in specs)
        shape = first.shape[:dim] + (size,) + first.shape[dim + 1:]
        return TensorSpec(shape, first.dtype)

    def vjp(self, ctx, g):
        dim = ctx.params["dim"]
        grads, start = [], 0
        for x in ctx.inputs:
            if x.shape == (0,) and g.ndim != 1:  # skipped by PyTorch's legacy rule
                grads.append(zeros(0, dtype=g.dtype, device=g.device))
                continue
            n = x.shape[dim]
            grads.append(apply(Slice, g, index=(FULL,) * dim + ((start, start + n, 1),))
                         if x.requires_grad else None)
            start += n
        return tuple(grads)

    def jvp(self, ctx, *tangents):
        return apply(Cat, *tangents, **ctx.params)


def cat(tensors: Sequence[Tensor], dim: int = 0) -> Tensor:
    """The tensors joined along an existing dimension ``dim``; dtypes promote as in PyTorch.

    Example:
        >>> ember.cat([ember.zeros(2, 3), ember.ones(1, 3)]).shape
        ember.Size([3, 3])
    """
    tensors = list(tensors)
    if not tensors:
        raise ArgumentError("cat: expected a non-empty list of tensors")
    if type(tensors[0]) in TENSOR_LIKE:
        return handle(cat, (tensors, dim), {})
    try:
        dtype = functools.reduce(dtypes.promote_types, (t.dtype for t in tensors))
    except (AttributeError, DTypeError):  # (a NumPy array's dtype is no Ember dtype)
        if handler_of((tensors,)):  # (a quantized tensor after an ordinary one)
            return handle(cat, (tensors, dim), {})
        refuse_non_tensors("cat", "tensors", tensors)
        raise
    try:
        kept = joined(tensors)
    except RuntimeError:
        raise uninitialized("cat") from None
    for i, t in enumerate(kept):
        if not t.ndim:
            raise ShapeError(f"cat: zero-dimensional tensor (at position {i}) cannot be "
                             "concatenated. Hint: use stack, or unsqueeze it first")
    dim = normalize_dim(dim, kept[0].ndim, "cat")
    # the skipped ones ride along: for their (empty) gradients, and as PyTorch counts them
    # when it picks the result's layout (a C one)
    return apply(Cat, *(cast(t, dtype) for t in tensors), dim=dim)


concat = cat


def concatenate(tensors: Sequence[Tensor], axis: int = 0, *, dim: int | None = None) -> Tensor:
    """:func:`cat` under NumPy's name, whose dimension is called ``axis`` (``dim`` works too,
    as in PyTorch).

    Example:
        >>> ember.concatenate([ember.zeros(2, 1), ember.ones(2, 1)], axis=1).shape
        ember.Size([2, 2])
    """
    return cat(tensors, axis if dim is None else dim)


def stack(tensors: Sequence[Tensor], dim: int = 0) -> Tensor:
    """The tensors (all of one shape) joined along a new dimension ``dim``.

    Example:
        >>> ember.stack([ember.zeros(3), ember.ones(3)], dim=1).shape
        ember.Size([3, 2])
    """
    tensors = list(tensors)
    if not tensors:
        raise ArgumentError("stack: expected a non-empty list of tensors")
    if type(tensors[0]) in TENSOR_LIKE:
        return handle(stack, (tensors, dim), {})
    try:
        shapes = [t.shape for t in tensors]
    except RuntimeError:
        raise uninitialized("stack") from None
    shape = shapes[0]
    for i, s in enumerate(shapes):
        if s != shape:
            raise ShapeError(f"stack: expects each tensor to be equal size, but got "
                             f"{tuple(shape)} at entry 0 and {tuple(s)} at entry {i}")
    dim = normalize_dim(dim, len(shape) + 1, "stack")
    dtype = tensors[0].dtype
    if (DISPATCH.handler is None or DISPATCH.only_observers()) and \
            all(t.dtype is dtype for t in tensors):
        return apply(Stack, *tensors, dim=dim)
    if handler_of((tensors,)):  # (a tensor-like after an ordinary tensor)
        return handle(stack, (tensors, dim), {})
    return name_node(cat([unsqueeze(t, dim) for t in tensors], dim), "StackBackward0")


@primitive
class Stack(Primitive):
    """Tensors of one shape and dtype (:func:`stack` checks) joined along a new dimension
    ``dim``: eager ``stack``; under a transform (which knows ``cat``, e.g. the jit's passes
    and ONNX export) ``stack`` is an unsqueeze per tensor and a cat instead."""

    name = "stack"
    backward_name = "StackBackward0"
    limited_dtypes = dtypes.ALL_LIMITED
    complex_grad = True  # moves elements: real coefficients
    save_inputs = False

    def forward(self, xp, *arrays, dim):
        # PyTorch's: a cat along ``dim`` split by a view, or of the inputs unsqueezed at the
        # end, so the result is laid out as that cat
        first = arrays[0]
        if dim == first.ndim:
            return concatenated(xp, [a[..., None] for a in arrays], dim)
        return concatenated(xp, arrays, dim).reshape(
            first.shape[:dim] + (len(arrays),) + first.shape[dim:])

    def infer(self, *specs, dim):
        first = specs[0]
        return TensorSpec(first.shape[:dim] + (len(specs),) + first.shape[dim:], first.dtype)

    def vjp(self, ctx, g):
        head = (FULL,) * ctx.params["dim"]
        return tuple(apply(Slice, g, index=head + (i,)) if x.requires_grad else None
                     for i, x in enumerate(ctx.inputs))

    def jvp(self, ctx, *tangents):
        return apply(Stack, *tangents, **ctx.params)


def hstack(tensors: Sequence[Tensor]) -> Tensor:
    """Tensors joined column-wise: along dim 1, or dim 0 for 1-d tensors."""
    ts = [atleast_1d(t) for t in tensors]
    return cat(ts, 0 if all(t.ndim == 1 for t in ts) else 1)


def vstack(tensors: Sequence[Tensor]) -> Tensor:
    """Tensors joined row-wise (1-d tensors become rows)."""
    return cat([atleast_2d(t) for t in tensors], 0)


row_stack = vstack  # PyTorch's alias


# -- repeating, flipping, rolling ----------------------------------------------------------------
@method()
def repeat(input: Tensor, *sizes: Any) -> Tensor:
    """``input`` tiled ``sizes[i]`` times along each dimension (extra sizes add leading
    dimensions); a copy.

    Example:
        >>> ember.tensor([1, 2]).repeat(2, 2)
        tensor([[1, 2, 1, 2],
                [1, 2, 1, 2]])
    """
    sizes = as_ints(read_sizes(sizes), "repeat", "each repeat size")
    if len(sizes) < input.ndim:
        raise ShapeError(f"repeat: {len(sizes)} repeat sizes given for a tensor of shape "
                         f"{tuple(input.shape)}; give at least one per dimension")
    if any(s < 0 for s in sizes):
        raise ShapeError(f"repeat: repeat sizes must be non-negative, got {sizes}")
    shape = (1,) * (len(sizes) - input.ndim) + tuple(input.shape)
    spread = tuple(v for s in shape for v in (1, s))  # a size-1 dim before each dim
    grown = expand(reshape_view(input, spread), tuple(v for r, s in zip(sizes, shape,
                                                                         strict=True)
                                                       for v in (r, s)))
    out = reshape(clone(grown), tuple(r * s for r, s in zip(sizes, shape, strict=True)))
    return name_node(out, "RepeatBackward0")


@method()
def tile(input: Tensor, dims: int | Sequence[int], *more: int) -> Tensor:
    """``input`` repeated ``dims[i]`` times along each dimension; missing entries are 1. The
    sizes may come one by one, as the method takes them: ``x.tile(2, 1)``.

    Example:
        >>> ember.tensor([[1, 2]]).tile((2,)).shape
        ember.Size([1, 4])
    """
    dims = tuple(read_sizes((dims, *more)))
    return repeat(input, (1,) * (input.ndim - len(dims)) + dims)


@method()
def flip(input: Tensor, dims: int | Sequence[int], *more: int) -> Tensor:
    """A copy of ``input`` with the order of entries reversed along ``dims`` (a sequence, or
    the dims one by one: ``x.flip(0, 2)``).

    Example:
        >>> ember.tensor([1, 2, 3]).flip(0)
        tensor([3, 2, 1])
    """
    ndim = input.ndim
    dims = normalize_dims(read_sizes((dims, *more)), max(ndim, 1),
                          "flip")  # (a dim named twice: an error)
    if not ndim:
        return name_node(clone(input), "FlipBackward0")
    index = _flip_index(dims, ndim)
    if plain(input) and input._data.flags.c_contiguous:  # (what clone gives, with no view)
        xp = input._device.xp
        try:
            return _wrap(Copy.forward(xp, Slice.forward(xp, input._data, index=index), "K"),
                         input._device)
        except Exception:  # (apply explains it)
            pass
    return name_node(clone(apply(Slice, input, index=index)), "FlipBackward0")


@functools.lru_cache(maxsize=256)
def _flip_index(dims: tuple, ndim: int) -> tuple:
    """The basic index reversing ``dims`` of an ``ndim``-d tensor."""
    return tuple((None, None, -1) if d in dims else FULL for d in range(ndim))


@method()
def fliplr(input: Tensor) -> Tensor:
    """``flip(input, 1)``: columns in reverse order (``input`` at least 2-d)."""
    _at_least("fliplr", input, 2)
    return flip(input, 1)


@method()
def flipud(input: Tensor) -> Tensor:
    """``flip(input, 0)``: rows in reverse order (``input`` at least 1-d)."""
    _at_least("flipud", input, 1)
    return flip(input, 0)


def _at_least(op: str, input: Tensor, ndim: int) -> None:
    if isinstance(input, Tensor) and input.ndim < ndim:
        raise ShapeError(f"{op}: input must be at least {ndim}-d, got shape "
                         f"{tuple(input.shape)}, as in PyTorch")


@method()
def roll(input: Tensor, shifts: int | Sequence[int], dims: int | Sequence[int] | None = None
         ) -> Tensor:
    """``input`` with entries shifted cyclically by ``shifts`` along ``dims`` (the flattened
    tensor when ``dims`` is None).

    Example:
        >>> ember.tensor([1, 2, 3, 4]).roll(1)
        tensor([4, 1, 2, 3])
    """
    if dims is None:
        shifts = as_ints(shifts, "roll", "shifts")
        if len(shifts) != 1:
            raise ShapeError(f"roll: without dims, shifts must be one number, got {shifts}")
        return name_node(reshape(roll(flatten(input), shifts, 0), input.shape), "RollBackward0")
    shifts, dims = as_ints(shifts, "roll", "shifts"), as_ints(dims, "roll", "dims")
    if len(shifts) != len(dims):
        raise ShapeError(f"roll: shifts {shifts} and dims {dims} must have the same length")
    out = input
    for shift, d in zip(shifts, dims, strict=True):
        d = normalize_dim(d, input.ndim, "roll")
        n = input.shape[d] if input.ndim else 1
        s = shift % n if n else 0
        if s:
            out = cat([slice_dim(out, d, n - s, s), slice_dim(out, d, 0, n - s)], d)
    return name_node(clone(out) if out is input else out, "RollBackward0")
