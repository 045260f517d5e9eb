"""Broadcasting as a pair of primitives: ``expand`` (broadcast a tensor to a shape) and
``sum_to`` (sum a tensor down to a shape). Each is the other's vjp, which is how every
broadcasting op's gradient is reduced back to its input's shape."""

from __future__ import annotations

import operator
from collections.abc import Sequence
from typing import Any

import numpy as np

from ember import dtypes
from ember.backend import gemm
from ember.backend.cpu import broadcast_view
from ember.errors import ShapeError
from ember.ops.int_args import as_int, as_ints, refused_ints
from ember.ops.primitive import Primitive, TensorSpec, apply, primitive
from ember.size import Size
from ember.tensor import Tensor, method

__all__ = ["broadcast_shapes", "broadcast_to", "broadcast_tensors"]


def broadcast_shapes(*shapes: Sequence[int] | int, op: str = "broadcast_shapes") -> Size:
    """The shape NumPy/PyTorch broadcasting gives ``shapes`` (an int is a 1-d shape); a
    ShapeError naming ``op`` if none.

    Example:
        >>> ember.broadcast_shapes((3, 1), (4,)), ember.broadcast_shapes(2, (3, 1))
        (ember.Size([3, 4]), ember.Size([3, 2]))
    """
    # (a tuple as it is, its sizes checked below; an int, a bool (as PyTorch), a 0-d tensor:
    # one size; a 1-d one, a list: sizes; an array or PyTorch tensor of more dimensions refused
    # by name)
    shapes = tuple(s if type(s) is tuple else (int(s),) if type(s) is bool else
                   as_ints(s, op, "a size") for s in shapes)
    return tuple.__new__(Size, broadcast_shape(shapes, op))


def broadcast_shape(shapes: Sequence[Sequence[int]], op: str) -> tuple[int, ...]:
    """:func:`broadcast_shapes` of a sequence of shapes, as a plain tuple (for ops' ``infer``)."""
    ndim = max((len(s) for s in shapes), default=0)
    out = []
    for i in range(-ndim, 0):
        size = 1
        for s in shapes:
            d = s[i] if -i <= len(s) else 1
            if d != 1:
                if type(d) is not int:  # (a NumPy integer; a float, string or tensor refused)
                    d = as_int(d, op, "a size")
                if size not in (1, d):
                    shown = " and ".join(str(tuple(s)) for s in shapes)
                    raise ShapeError(f"{op}: shapes {shown} do not broadcast: dimension {i} has "
                                     f"sizes {size} and {d}. Hint: sizes must match or be 1")
                size = d
        out.append(size)
    return tuple(out)


def broadcast_spec(*specs: TensorSpec, op: str) -> TensorSpec:
    """The output spec of an elementwise op over same-dtype inputs."""
    return TensorSpec(broadcast_shape([s.shape for s in specs], op), specs[0].dtype)


@primitive
class Expand(Primitive):
    name = "expand"
    complex_grad = True  # moves, copies or sums elements: real coefficients
    view = True
    save_inputs = False

    def forward(self, xp, a, *, shape):
        if shape == (1,) * (len(shape) - a.ndim) + a.shape:
            # nothing repeats (new dims of size 1 at most): a writable view, as PyTorch's,
            # into which a state dict's position_ids-style buffer loads
            return xp.reshape(a, shape)
        if xp is not np:
            return xp.broadcast_to(a, shape)
        view = broadcast_view(a, shape)
        if 0 not in shape or not a.flags.writeable:
            return view
        # no elements, so none aliased: writable, as PyTorch's (NumPy's broadcast is read-only)
        return np.lib.stride_tricks.as_strided(a, shape, view.strides, writeable=True)

    def infer(self, a, *, shape):
        if len(shape) < len(a.shape) or min(shape, default=0) < 0 or \
                broadcast_shapes(a.shape, shape, op="expand") != shape:
            raise ShapeError(f"expand: cannot expand shape {a.shape} to {shape}. Hint: only "
                             "dimensions of size 1 can grow, and new ones go in front")
        return TensorSpec(shape, a.dtype)

    def vjp(self, ctx, g):
        return sum_to(g, ctx.inputs[0].shape)

    def jvp(self, ctx, da):
        return expand(da, ctx.params["shape"])


@primitive
class SumTo(Primitive):
    name = "sum_to"
    limited_dtypes = dtypes.WIDE_UNSIGNED
    complex_grad = True  # moves, copies or sums elements: real coefficients
    save_inputs = False

    def forward(self, xp, a, *, shape):
        lead = a.ndim - len(shape)
        axes = tuple(range(lead)) + tuple(lead + i for i, s in enumerate(shape)
                                           if s == 1 and a.shape[lead + i] != 1)
        if not axes:
            return a.reshape(shape)
        return gemm.sum_axes(xp, a, axes).reshape(shape)

    def infer(self, a, *, shape):
        if broadcast_shapes(a.shape, shape, op="sum_to") != a.shape:
            raise ShapeError(f"sum_to: shape {a.shape} does not reduce to {shape}")
        return TensorSpec(shape, a.dtype)

    def vjp(self, ctx, g):
        return expand(g, ctx.inputs[0].shape)

    def jvp(self, ctx, da):
        return sum_to(da, ctx.params["shape"])


def _expand_shape(current: tuple[int, ...], sizes: tuple) -> tuple[int, ...]:
    """Reads PyTorch's expand sizes, where -1 keeps a dimension's size."""
    if len(sizes) == 1 and isinstance(sizes[0], (tuple, list)):
        sizes = tuple(sizes[0])
    lead = len(sizes) - len(current)
    if lead < 0:
        raise ShapeError(f"expand: {len(sizes)} sizes given for a tensor of shape "
                         f"{tuple(current)}; expand cannot drop dimensions")
    try:
        shape = tuple(current[i - lead] if (n := operator.index(s)) == -1 and i >= lead else n
                      for i, s in enumerate(sizes))
    except TypeError as exc:
        raise refused_ints(sizes, "expand", "size", exc) from None
    if bool in map(type, sizes):  # (an int to operator.index; a TypeError to PyTorch, as to
        raise refused_ints(sizes, "expand", "size", TypeError())  # view, reshape, repeat)
    if min(shape, default=0) < 0:
        why = (f"-1 keeps an existing size, so it cannot stand for a new leading dimension "
               f"(here the first {lead} of {len(sizes)})"
               if -1 in sizes[:lead] else "sizes must be non-negative, or -1 to keep one")
        raise ShapeError(f"expand: cannot expand shape {tuple(current)} to {tuple(sizes)}: "
                         f"{why}")
    return shape


def expand(x: Tensor, shape: tuple[int, ...]) -> Tensor:
    """``x`` broadcast to ``shape`` (a view; ``x`` itself when the shape already matches)."""
    shape = tuple(shape)
    if x.shape == shape:
        return x
    return apply(Expand, x, shape=shape)


def sum_to(x: Tensor, shape: tuple[int, ...]) -> Tensor:
    """``x`` summed over the dimensions broadcasting added to ``shape`` (``x`` if equal)."""
    shape = tuple(shape)
    if x._data.shape == shape:
        return x
    return apply(SumTo, x, shape=shape)


@method("expand", "broadcast_to")
def _expand_method(self: Tensor, *sizes: Any, size: Any = None, implicit: bool = False
                   ) -> Tensor:
    """``x.expand(3, -1)`` or ``x.expand(size=(3, -1))`` (or ``x.broadcast_to((3, -1))``): a
    broadcast view, -1 keeping a dimension (``implicit``, PyTorch's tracing flag, changes
    nothing)."""
    if size is not None:
        if sizes:
            raise TypeError("expand: the sizes were given twice, positionally and as size=")
        sizes = (size,)
    return expand(self, _expand_shape(self.shape, sizes))


@method()
def expand_as(self: Tensor, other: Tensor) -> Tensor:
    """``self`` broadcast to ``other``'s shape."""
    return expand(self, other.shape)


def broadcast_to(x: Tensor, shape: tuple[int, ...]) -> Tensor:
    """``x`` broadcast to ``shape``, as ``torch.broadcast_to``."""
    if isinstance(shape, (str, bytes)) or not hasattr(shape, "__iter__"):
        shape = (shape,)  # (one size: an int, or what the size check then refuses)
    return expand(x, _expand_shape(x.shape, (tuple(shape),)))


def broadcast_tensors(*xs: Tensor) -> tuple[Tensor, ...]:
    """All of ``xs`` broadcast to their common shape."""
    shape = broadcast_shapes(*(x.shape for x in xs), op="broadcast_tensors")
    return tuple(expand(x, shape) for x in xs)
