"""Triangles and diagonals: tril/triu, diagonal (a view), diag, diagonal_scatter.

Primitives: ``triangular`` (its own adjoint) and ``diagonal``, a writable view whose vjp is
:func:`diagonal_scatter` into zeros. ``diagonal_scatter`` is the ``index_put`` primitive on
the two dims moved last, so its own gradients come from that rule.
"""

from __future__ import annotations

from ember.autograd.graph import name_node
from ember.errors import ShapeError
from ember.ops.convert import cast, clone
from ember.ops.creation import zeros
from ember.ops.indexing import IndexPut
from ember.ops.inplace import bind_inplace
from ember.ops.int_args import as_int
from ember.ops.primitive import Primitive, TensorSpec, apply, primitive, spec
from ember.ops.reduce import normalize_dim
from ember.ops.shape import Permute
from ember.tensor import Tensor, _wrap, method

__all__ = ["tril", "triu", "diagonal", "diag", "diagonal_scatter"]


@primitive
class Triangular(Primitive):
    """The lower (``upper=False``) or upper triangle of the last two dims; zeros elsewhere."""

    name = "triangular"
    complex_grad = True  # moves, copies or sums elements: real coefficients
    save_inputs = False

    def forward(self, xp, a, *, upper, diagonal):
        return (xp.triu if upper else xp.tril)(a, diagonal)

    def infer(self, a, *, upper, diagonal):
        if len(a.shape) < 2:
            raise ShapeError(f"{'triu' if upper else 'tril'}: input tensor must have at least "
                             f"2 dimensions, got {a}")
        return a

    def vjp(self, ctx, g):
        return apply(Triangular, g, **ctx.params)

    def jvp(self, ctx, da):
        return apply(Triangular, da, **ctx.params)


def _triangle(x: Tensor, upper: bool, diagonal: int) -> Tensor:
    op = "triu" if upper else "tril"
    if x.ndim < 2:
        raise ShapeError(f"{op}: input tensor must have at least 2 dimensions, got shape "
                         f"{tuple(x.shape)}")
    return apply(Triangular, x, upper=upper, diagonal=as_int(diagonal, op, "diagonal"))


@method()
def tril(input: Tensor, diagonal: int = 0) -> Tensor:
    """The lower triangle of the last two dims (on and below diagonal ``diagonal``); zeros
    elsewhere.

    Example:
        >>> ember.ones(2, 2).tril()
        tensor([[1., 0.],
                [1., 1.]])
    """
    return name_node(_triangle(input, False, diagonal), "TrilBackward0")


@method()
def triu(input: Tensor, diagonal: int = 0) -> Tensor:
    """The upper triangle of the last two dims (on and above diagonal ``diagonal``); zeros
    elsewhere.

    Example:
        >>> ember.ones(2, 2).triu(1)
        tensor([[0., 1.],
                [0., 0.]])
    """
    return name_node(_triangle(input, True, diagonal), "TriuBackward0")


@primitive
class Diagonal(Primitive):
    """The diagonal of dims ``dim1``, ``dim2`` as a (writable) view, appended as the last dim."""

    name = "diagonal"
    complex_grad = True  # moves, copies or sums elements: real coefficients
    view = True
    save_inputs = False

    def forward(self, xp, a, *, offset, dim1, dim2):
        d = xp.diagonal(a, offset, dim1, dim2)
        if not d.flags.writeable and a.flags.writeable:  # NumPy marks it read-only
            d.flags.writeable = True
        return d

    def infer(self, a, *, offset, dim1, dim2):
        shape = a.shape
        n1, n2 = shape[dim1], shape[dim2]
        size = max(0, min(n1, n2 - offset) if offset >= 0 else min(n1 + offset, n2))
        rest = tuple(s for i, s in enumerate(shape) if i not in (dim1, dim2))
        return TensorSpec(rest + (size,), a.dtype)

    def vjp(self, ctx, g):
        base = zeros(ctx.inputs[0].shape, dtype=g.dtype, device=g.device)
        return diagonal_scatter(base, g, **ctx.params)

    def jvp(self, ctx, da):
        return apply(Diagonal, da, **ctx.params)


@method()
def diagonal(input: Tensor, offset: int = 0, dim1: int = 0, dim2: int = 1) -> Tensor:
    """The view of the diagonal ``offset`` (above the main one if positive) of the matrices in
    dims ``dim1``, ``dim2``; it becomes the last dimension.

    Example:
        >>> ember.arange(9).reshape(3, 3).diagonal(1)
        tensor([1, 5])
    """
    d1, d2 = _diagonal_dims(input, dim1, dim2, "diagonal")
    return apply(Diagonal, input, offset=as_int(offset, "diagonal", "offset"), dim1=d1, dim2=d2)


@method()
def diag(input: Tensor, diagonal: int = 0) -> Tensor:
    """A 1-d ``input`` placed on diagonal ``diagonal`` of a square matrix, or a copy of
    diagonal ``diagonal`` of a 2-d ``input``.

    Example:
        >>> ember.diag(ember.tensor([1, 2]))
        tensor([[1, 0],
                [0, 2]])
    """
    diagonal = as_int(diagonal, "diag", "diagonal")
    if input.ndim == 2:
        return clone(apply(Diagonal, input, offset=diagonal, dim1=0, dim2=1))
    if input.ndim != 1:
        raise ShapeError(f"diag: expects a 1-d or 2-d tensor, got shape {tuple(input.shape)}")
    n = input.shape[0] + abs(diagonal)
    base = zeros((n, n), dtype=input.dtype, device=input.device)
    return diagonal_scatter(base, input, offset=diagonal, dim1=0, dim2=1)


def _diagonal_dims(x: Tensor, dim1: int, dim2: int, op: str) -> tuple[int, int]:
    n = x.ndim
    if n < 2:
        raise ShapeError(f"{op}: needs at least 2 dimensions, got shape {tuple(x.shape)}")
    d1, d2 = normalize_dim(dim1, n, op), normalize_dim(dim2, n, op)
    if d1 == d2:
        raise ShapeError(f"{op}: diagonal dimensions cannot be identical ({dim1}, {dim2})")
    return d1, d2


@method()
def diagonal_scatter(input: Tensor, src: Tensor, offset: int = 0, dim1: int = 0,
                     dim2: int = 1) -> Tensor:
    """A copy of ``input`` with ``src`` written on the diagonal that
    ``input.diagonal(offset, dim1, dim2)`` reads.

    Example:
        >>> ember.diagonal_scatter(ember.zeros(2, 2), ember.ones(2))
        tensor([[1., 0.],
                [0., 1.]])
    """
    d1, d2 = _diagonal_dims(input, dim1, dim2, "diagonal_scatter")
    want = Diagonal.infer(spec(input), offset=offset, dim1=d1, dim2=d2).shape
    if tuple(src.shape) != tuple(want):
        raise ShapeError(f"diagonal_scatter: src has shape {tuple(src.shape)} but the diagonal "
                         f"of input {tuple(input.shape)} has shape {tuple(want)}")
    n, k = input.ndim, want[-1]
    order = tuple(d for d in range(n) if d not in (d1, d2)) + (d1, d2)
    inverse = tuple(order.index(d) for d in range(n))
    xp, dev = input._device.xp, input._device
    rows = _wrap(xp.arange(k) + max(-offset, 0), dev)
    cols = _wrap(xp.arange(k) + max(offset, 0), dev)
    moved = apply(IndexPut, apply(Permute, input, dims=order), cast(src, input.dtype), rows, cols,
                  basic=(), dims=(n - 2, n - 1), mode="set")
    return apply(Permute, moved, dims=inverse)


bind_inplace(tril_=tril, triu_=triu)
