"""Reducing scatters and other writes by position: ``scatter_reduce`` (sum, prod, mean, amax,
amin; ``include_self``), ``index_reduce``, ``masked_scatter`` and ``put``.

``sum`` and ``mean`` are compositions of ``scatter``/``scatter_add``; ``prod``, ``amax`` and
``amin`` are one primitive, ``scatter_reduce``, whose gradients are PyTorch's: ``amax``/``amin``
share the gradient evenly among the entries equal to the result, ``prod`` gives each entry the
product of the others (computed without dividing by zero where one entry is 0).
"""

from __future__ import annotations

from typing import Any

from ember import dtypes
from ember.errors import ArgumentError, DTypeError, ShapeError, type_name
from ember.ops.broadcast import broadcast_shapes, expand
from ember.ops.compare import eq
from ember.ops.convert import cast, clone
from ember.ops.creation import ones_like, scalar_tensor, zeros_like
from ember.ops.gather import _as_1d, _check_gather, _grid, _scatter, scatter, wide_along
from ember.ops.index_checks import check_index_range, check_integer
from ember.ops.indexing import Index, IndexPut, Slice
from ember.ops.inplace import bind_inplace
from ember.ops.primitive import (
    DISPATCH,
    Primitive,
    apply,
    primitive,
    refuse_complex,
    refuse_limited,
)
from ember.ops.reduce import normalize_dim
from ember.ops.scan import cumsum
from ember.ops.select import where
from ember.ops.shape import reshape
from ember.ops.torch_steps import HALF_ARRAYS
from ember.tensor import Tensor, method

__all__ = ["scatter_reduce", "index_reduce", "masked_scatter", "put"]

_REDUCTIONS = ("sum", "prod", "mean", "amax", "amin")


@primitive
class ScatterReduce(Primitive):
    """``a`` with the values ``v`` combined in at the positions the index tensors ``idx`` (one
    per dimension of ``a``, broadcasting to ``v``'s shape) select: ``reduce`` is "prod",
    "amax" or "amin"; without ``include_self`` the old value at a selected position is left
    out. ``wide``: a half float's product (or amax/amin's count of ties, in the gradient) is
    taken in float32, as torch's scatter_reduce (its index_reduce's prod steps in the half)."""

    name = "scatter_reduce"
    save_outputs = True

    def forward(self, xp, a, v, *idx, reduce, include_self, wide=True):
        out = a.copy()
        key = tuple(idx)
        if reduce == "prod":
            total = out.astype(xp.float32) if wide and out.dtype in HALF_ARRAYS else out
            if not include_self:
                total[key] = 1
            xp.multiply.at(total, key, v.astype(total.dtype, copy=False))
            out[...] = total
        else:
            if not include_self:
                out[key] = v  # one of the values: the extreme then comes from them alone
            (xp.maximum if reduce == "amax" else xp.minimum).at(out, key, v)
        return out

    def infer(self, a, v, *idx, reduce, include_self, wide=True):
        return a

    def _terms(self, ctx: Any, g_a: Tensor, g_v: Tensor) -> tuple[Tensor, Tensor]:
        """``g_a`` (shaped as ``a``) times d out / d a and ``g_v`` (as ``v``) times d out[idx] /
        d v, multiplied in PyTorch's order (the gradient shared out among ties, then masked)."""
        a, v, *idx = ctx.inputs
        p = ctx.params
        out = ctx.out
        dims = tuple(range(a.ndim))
        if p["reduce"] == "prod":
            masked_a = where(eq(a, 0), 1, a)
            term_a = g_a * apply(ScatterReduce, masked_a, v, *idx, **p) / masked_a
            v_zero = eq(v, 0)
            zeros_at = apply(IndexPut, zeros_like(a), cast(v_zero, a.dtype), *idx, basic=(),
                             dims=dims, mode="add")
            single = v_zero & eq(apply(Index, zeros_at, *idx, dims=dims), 1)
            others = apply(ScatterReduce, a, where(single, 1, v), *idx, **p)
            term_v = where(single, g_v * apply(Index, others, *idx, dims=dims),
                           g_v * apply(Index, out, *idx, dims=dims) / where(v_zero, 1, v))
        else:
            mask_v = cast(eq(v, apply(Index, out, *idx, dims=dims)), a.dtype)
            mask_a = cast(eq(a, out), a.dtype)
            # (a left-out entry equal to the result counts among the ties, as torch's, though
            # its own term is 0; no entry equals a NaN result: a count of 0 gives NaN)
            count = apply(IndexPut, mask_a, mask_v, *idx, basic=(), dims=dims, mode="add",
                          wide=p.get("wide", True))
            term_a = mask_a * (g_a / count)
            term_v = mask_v * (g_v / apply(Index, count, *idx, dims=dims))
        if not p["include_self"]:  # (a left-out entry has no part in the result: exactly 0)
            hit = apply(IndexPut, zeros_like(a, dtype=dtypes.bool_),
                        scalar_tensor(True, dtypes.bool_, a.device), *idx, basic=(), dims=dims,
                        mode="set")
            term_a = where(hit, 0, term_a)
        return term_a, term_v

    def vjp(self, ctx, g):
        a, v, *idx = ctx.inputs
        ga, gv = self._terms(ctx, g, apply(Index, g, *idx, dims=tuple(range(a.ndim))))
        return (ga if a.requires_grad else None, gv if v.requires_grad else None) + \
            (None,) * len(idx)

    def jvp(self, ctx, da, dv, *_):
        a, v, *idx = ctx.inputs
        term_a, term_v = self._terms(ctx, da, dv)
        return term_a + apply(IndexPut, zeros_like(ctx.out), term_v, *idx, basic=(),
                              dims=tuple(range(a.ndim)), mode="add", wide=True)


@method()
def scatter_reduce(input: Tensor, dim: int, index: Tensor, src: Tensor, reduce: str, *,
                   include_self: bool = True) -> Tensor:
    """A copy of ``input`` with the values of ``src`` reduced in at the positions
    :func:`scatter` would write (``out[index[i][j]][j]`` for ``dim=0``). ``reduce`` is
    ``"sum"``, ``"prod"``, ``"mean"``, ``"amax"`` or ``"amin"``; ``include_self=False`` leaves
    ``input``'s own value out wherever something is scattered. Integer means round down.

    Example:
        >>> x = ember.tensor([1.0, 2.0, 3.0])
        >>> x.scatter_reduce(0, ember.tensor([0, 0, 2]), ember.tensor([5.0, 4.0, 1.0]), "amax")
        tensor([5., 2., 3.])
    """
    op = "scatter_reduce"
    if reduce not in _REDUCTIONS:
        raise ArgumentError(f"{op}: reduce argument must be either sum, prod, mean, amax or amin, "
                            f"got {reduce!r}")
    if not isinstance(src, Tensor):
        raise TypeError(f"{op}: src must be a tensor, got {type_name(src)}")
    if src.dtype is not input.dtype:
        raise DTypeError(f"{op}: expected self.dtype to be equal to src.dtype, got "
                         f"{input.dtype.name} and {src.dtype.name}")
    return _reduce_at(input, dim, index, src, reduce, bool(include_self), (True, True))


def _reduce_at(input: Tensor, dim: int, index: Tensor, src: Tensor, reduce: str,
               include_self: bool, wide: tuple[bool, bool]) -> Tensor:
    """:func:`scatter_reduce` past its argument checks; ``wide``: whether a half float's sums
    and products, and its counts (mean's, and amax/amin's ties), are taken in float32."""
    op = "scatter_reduce"
    d, index = _check_gather(op, input, dim, index, src)
    if index.numel() == 0 and index.ndim != input.ndim:  # (no grid to write through)
        return clone(input)
    if input.ndim == 0 or index.ndim == 0 or src.ndim == 0:
        out = _reduce_at(_as_1d(input), 0, _as_1d(index), _as_1d(src), reduce, include_self,
                         wide)
        return apply(Slice, out, index=(0,)) if input.ndim == 0 else out
    if tuple(src.shape) != tuple(index.shape):
        src = apply(Slice, src, index=tuple((0, s, 1) for s in index.shape))
    if reduce in ("sum", "mean"):
        base = input if include_self else scatter(input, d, index, 0)
        total = _scatter(op, base, d, index, src, "add", wide[0])
        if reduce == "sum":
            return total
        start = ones_like(input) if include_self else scatter(ones_like(input), d, index, 0)
        count = _scatter(op, start, d, index, ones_like(src), "add", wide[1])
        count = where(eq(count, 0), 1, count)
        if input.dtype.is_floating_point or input.dtype.is_complex:
            return total / count
        return (total // count).to(input.dtype)
    if reduce in ("amax", "amin"):  # (complex numbers have no order)
        refuse_complex(f"{op} {reduce}", input)
    return apply(ScatterReduce, input, src, *_grid(index.shape, d, index), reduce=reduce,
                 include_self=include_self, wide=wide[reduce != "prod"])


@method()
def index_reduce(input: Tensor, dim: int, index: Tensor, source: Tensor, reduce: str, *,
                 include_self: bool = True) -> Tensor:
    """A copy of ``input`` with the slices of ``source`` reduced in at positions ``index``
    (a vector) along ``dim``: ``reduce`` is ``"prod"``, ``"mean"``, ``"amax"`` or ``"amin"``
    (not of complex tensors, as in PyTorch).

    Example:
        >>> x = ember.ones(2, 2)
        >>> x.index_reduce(0, ember.tensor([0, 0]), ember.tensor([[2.0, 3.0], [4.0, 5.0]]),
        ...                "prod")
        tensor([[ 8., 15.],
                [ 1.,  1.]])
    """
    op = "index_reduce"
    if reduce not in ("prod", "mean", "amax", "amin"):
        raise ArgumentError(f"{op}: reduce argument must be either prod, mean, amax or amin, got "
                            f"{reduce!r}")
    refuse_complex(f"{op} {reduce}", input)  # (PyTorch has no complex kernel for any reduce)
    check_integer(index, op)
    if index.ndim > 1:
        raise ShapeError(f"{op}: index must be a vector, got shape {tuple(index.shape)}")
    if source.dtype is not input.dtype:
        raise DTypeError(f"{op}: self ({input.dtype.name}) and source ({source.dtype.name}) "
                         "must have the same scalar type")
    d = normalize_dim(dim, input.ndim, op)
    index = _as_1d(index)
    want = list(input.shape)
    if want:
        want[d] = index.shape[0]
    if tuple(source.shape) != tuple(want):
        raise ShapeError(f"{op}: source of shape {tuple(source.shape)} does not fit: expected "
                         f"{tuple(want)}")
    # (torch's sums and products step in the half type; its counts are index_add's)
    wide = (False, wide_along(input.ndim, d))
    if input.ndim == 0:
        return _reduce_at(input, 0, index, source, reduce, bool(include_self), wide)
    index = check_index_range(index, input.shape[d], d, op, negative=True)
    index = where(index < 0, index + input.shape[d], index)
    view = [1] * input.ndim
    view[d] = index.shape[0]
    full_index = expand(reshape(index, tuple(view)), tuple(source.shape))
    return _reduce_at(input, d, full_index, source, reduce, bool(include_self), wide)


@method()
def masked_scatter(input: Tensor, mask: Tensor, source: Tensor) -> Tensor:
    """A copy of ``input`` with the positions where ``mask`` is True filled, in order, with
    the leading elements of ``source``; ``input`` and ``mask`` broadcast together (only
    ``mask`` in the in-place ``masked_scatter_``).

    Example:
        >>> x = ember.zeros(2, 2)
        >>> x.masked_scatter(ember.tensor([[True, False], [True, True]]),
        ...                  ember.tensor([1.0, 2.0, 3.0, 4.0]))
        tensor([[1., 0.],
                [2., 3.]])
    """
    op = "masked_scatter"
    refuse_limited(op, input.dtype)
    if mask.dtype is not dtypes.bool_:
        raise DTypeError(f"{op}: expected mask to have dtype bool, got {mask.dtype.name}")
    if source.dtype is not input.dtype:
        raise DTypeError(f"{op}: expected self and source to have same dtypes but got "
                         f"{input.dtype.name} and {source.dtype.name}")
    shape = broadcast_shapes(tuple(input.shape), tuple(mask.shape), op=op)
    input, mask = expand(input, shape), expand(mask, shape)
    flat_mask = reshape(mask, (-1,))
    if DISPATCH.handler is None and int(flat_mask.sum().item()) > source.numel():
        raise ShapeError(f"{op}: Number of elements of source < number of ones in mask "
                         f"({source.numel()} < {int(flat_mask.sum().item())})")
    if source.numel() == 0:
        return input.clone()
    # the k-th True position reads source's k-th element: positions from a running count
    pos = cumsum(cast(flat_mask, dtypes.int64), 0) - 1
    pos = where(pos < 0, 0, where(pos >= source.numel(), source.numel() - 1, pos))
    picked = apply(Index, reshape(source, (-1,)), pos, dims=(0,))
    return where(mask, reshape(picked, shape), input)


@method()
def put(input: Tensor, index: Tensor, source: Tensor, accumulate: bool = False) -> Tensor:
    """A copy of ``input`` with ``source``'s elements written at the flat positions ``index``
    (negative ones count from the end), as if ``input`` were 1-d; ``accumulate`` adds.

    Example:
        >>> ember.zeros(2, 2).put(ember.tensor([0, 3]), ember.tensor([1.0, 2.0]))
        tensor([[1., 0.],
                [0., 2.]])
    """
    op = "put"
    refuse_limited(op, input.dtype)
    check_integer(index, op)
    if source.dtype is not input.dtype:
        raise DTypeError(f"{op}: expected self and source to have same dtype, got "
                         f"{input.dtype.name} and {source.dtype.name}")
    if index.numel() != source.numel():
        raise ShapeError(f"{op}: expected source and index to have the same number of "
                         f"elements, but got {source.numel()} and {index.numel()}")
    flat_index = check_index_range(reshape(index, (-1,)), input.numel(), 0, op, negative=True)
    flat_index = where(flat_index < 0, flat_index + input.numel(), flat_index)
    flat = reshape(input, (-1,))
    out = apply(IndexPut, flat, reshape(source, (-1,)), flat_index, basic=(), dims=(0,),
                mode="add" if accumulate else "set")
    return reshape(out, tuple(input.shape))


bind_inplace(scatter_reduce_=scatter_reduce, index_reduce_=index_reduce,
             masked_scatter_=masked_scatter, put_=put)
