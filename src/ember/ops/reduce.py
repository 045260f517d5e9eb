"""Reductions over dimensions: sum, mean, prod, max/min, amax/amin, argmax/argmin,
all/any, count_nonzero; and, from ``scan.py``, cumsum/cumprod (var/std live in
``variance.py``, logsumexp in ``logsumexp.py``).

Primitives: ``sum``, ``prod``, ``amax``/``amin`` (gradient split evenly among ties),
``max_dim``/``min_dim`` (values and indices; the gradient goes to the returned index),
``argmax``/``argmin``, ``all``/``any``. The rest (mean, var, std, logsumexp, count_nonzero)
are composites of them, so their gradients come for free. How ``dim`` is read
(:func:`normalize_dims`, which every family uses) lives in ``dims.py`` and is re-exported here.
"""

from __future__ import annotations

from math import prod as _product
from typing import Any

import numpy as np

from ember import dtypes, return_types
from ember.autograd.grad_mode import GRAD
from ember.autograd.graph import name_node
from ember.backend import gemm
from ember.dtypes import DType
from ember.errors import DTypeError
from ember.ops.broadcast import expand
from ember.ops.compare import eq, isfinite, isnan, logical_and, logical_not, logical_or
from ember.ops.complex_parts import Holomorphic
from ember.ops.convert import cast, clone, reduces_in_float32
from ember.ops.creation import arange, ones_like, zeros, zeros_like
from ember.ops.dims import (
    Dim,
    accumulation_input,
    accumulator,
    check_nonempty,
    normalize_dim,
    normalize_dims,
    reduce_dims,
    reduced_shape,
    unreduce,
    with_reduced_dims,
)
from ember.ops.overrides import TENSOR_LIKE, TensorLikeOperand, handle
from ember.ops.primitive import (
    DISPATCH,
    Primitive,
    TensorSpec,
    apply,
    complex_error,
    not_casting,
    primitive,
    refuse_limited,
)
from ember.ops.scan import cumprod, cumsum
from ember.ops.select import where
from ember.tensor import Tensor, method

__all__ = ["sum", "mean", "prod", "max", "min", "amax", "amin", "argmax", "argmin",
           "cumsum", "cumprod", "all", "any", "count_nonzero"]


def c_ordered(out: Any, a: Any) -> Any:
    """``out``, reduced from ``a``, in C order: PyTorch's reductions allocate their results
    contiguous whatever the input's layout, where NumPy's follow it (so ``x.sum(-1).view(-1)``
    of a channels-last ``x`` failed), and with C strides for size-1 dims too (a view). (NumPy
    gives those for a C-ordered ``a``.)"""
    if a.flags.c_contiguous or getattr(out, "ndim", 0) < 2:
        return out
    if not out.flags.c_contiguous:
        return out.copy()
    return out.reshape(-1).reshape(out.shape) if 1 in out.shape and out.size else out


class Reduction(Primitive):
    """A primitive reducing ``dims`` (sorted, non-negative), kept as size 1 if ``keepdim``."""

    def infer(self, a: TensorSpec, *, dims: tuple[int, ...], keepdim: bool) -> TensorSpec:
        return TensorSpec(reduced_shape(a.shape, dims, keepdim), a.dtype)


class Accumulation(Reduction):
    """sum and prod: accumulate half-precision floats in float32, integers in their dtype."""

    ufunc = "add"

    def forward(self, xp, a, *, dims, keepdim):
        axis = None if len(dims) == a.ndim and not keepdim else dims  # the fast whole-array path
        if self.ufunc == "add" and axis is not None:
            total = gemm.sum_leading(xp, a, dims)
            if total is not None:
                return c_ordered(total if keepdim else
                                 total.reshape(reduced_shape(a.shape, dims, False)), a)
        ufunc = getattr(xp, self.ufunc)
        out = ufunc.reduce(a, axis=axis, dtype=accumulator(a.dtype), keepdims=keepdim)
        return c_ordered(out if out.dtype == a.dtype else out.astype(a.dtype), a)


@primitive
class Sum(Accumulation):
    name = "sum"
    complex_grad = True  # moves, copies or sums elements: real coefficients
    save_inputs = False

    def vjp(self, ctx, g):
        return unreduce(g, ctx.inputs[0].shape, **ctx.params)

    def jvp(self, ctx, da):
        return apply(Sum, da, **ctx.params)


@primitive
class Prod(Holomorphic, Accumulation):
    name = "prod"
    ufunc = "multiply"

    def vjp(self, ctx, g):
        x = ctx.inputs[0]
        if x.ndim == 0:  # (the empty product of others is 1, also beside a NaN, as PyTorch)
            return g
        whole = getattr(self, "backward_name", None) != "ProdBackward1"  # (not prod(dim)'s)
        return unreduce(g, x.shape, **ctx.params) * _product_of_others(x, ctx.params["dims"], whole)

    def jvp(self, ctx, da):
        x = ctx.inputs[0]
        if x.ndim == 0 or _product(x.shape[d] for d in ctx.params["dims"]) == 1:
            return apply(Sum, da, **ctx.params)  # (the product of one: da also at inf, as torch)
        return apply(Sum, da * _product_of_others(x, ctx.params["dims"]), **ctx.params)


def _product_of_others(x: Tensor, dims: tuple[int, ...], whole: bool = False) -> Tensor:
    """For each element, the product of the other elements of its reduction, as PyTorch's: no
    zero, ``prod / x``; a zero beside an inf or NaN, :func:`_torch_others` (``whole``: prod()'s
    0 beside two zeros); else exact with zeros (one zero: only it gets the rest's product; two:
    all get 0), under create_graph or a transform its first derivatives too: beside one zero
    a nonzero element's 0 is ``rest / x * zero``, beside two a zero's is ``rest * other``."""
    zero = eq(x, 0)
    if not DISPATCH.stack:  # (eager: PyTorch's branches, chosen by the values)
        if not zero.any().item():
            return apply(Prod, x, dims=dims, keepdim=True) / x
        if len(dims) in (1, x.ndim) and not isfinite(x).all().item():
            return _torch_others(x, dims, whole and not GRAD.enabled)
    nothing, n_zero = zeros_like(x), apply(Sum, cast(zero, dtypes.int64), dims=dims, keepdim=True)
    safe = where(zero, ones_like(x), x)
    rest = apply(Prod, safe, dims=dims, keepdim=True)  # product of the non-zero elements
    if not (GRAD.enabled or DISPATCH.stack):  # (a plain backward: the values alone)
        return where(eq(n_zero, 0), rest / safe,
                     where(logical_and(zero, eq(n_zero, 1)), expand(rest, x.shape), nothing))
    # Each branch reads ``rest`` only in its own slices (1 elsewhere), and beside one zero a
    # nonzero element's ``others`` comes from the finite elements alone (an inf's is the
    # product of the finite rest where it is the only inf; 0 * inf is kept out as 0): no
    # branch that where() leaves out sends 0 * inf = NaN back (the NaN-through-where).
    one, (none, two) = ones_like(rest), (eq(n_zero, k) for k in (0, 2))
    zeros_sum = apply(Sum, where(zero, x, nothing), dims=dims, keepdim=True)  # (0, or -0)
    infinite = logical_not(isfinite(safe))
    finite = where(infinite, ones_like(x), safe)
    finite_rest = apply(Prod, finite, dims=dims, keepdim=True)
    n_inf = apply(Sum, cast(infinite, dtypes.int64), dims=dims, keepdim=True)
    others = where(infinite, where(eq(n_inf, 1), expand(finite_rest, x.shape), nothing),
                   where(eq(n_inf, 0), finite_rest / finite, nothing))
    one_zero = where(zero, expand(rest, x.shape), others * zeros_sum)
    two_zeros = where(zero, where(two, rest, one) * (zeros_sum - x), nothing)
    return where(none, where(none, rest, one) / safe,
                 where(eq(n_zero, 1), one_zero, where(two, two_zeros, nothing)))


def _torch_others(x: Tensor, dims: tuple[int, ...], two_zeros_give_0: bool) -> Tensor:
    """PyTorch's value beside a zero: the products before and after each element (0 * inf is
    NaN); 0 for two zeros if ``two_zeros_give_0`` (``dims``: one, or all)."""
    from ember.ops.join import cat, flip  # (join and shape import this module)
    from ember.ops.shape import narrow, reshape

    if len(dims) == x.ndim:  # (all elements: along the flattened tensor)
        if two_zeros_give_0 and eq(x, 0).sum().item() > 1:
            return zeros_like(x)
        return reshape(_torch_others(reshape(x, (-1, 1)), (0,), False), x.shape)
    d, n = dims[0], x.shape[dims[0]]
    one = ones_like(narrow(x, d, 0, 1))
    before = cumprod(cat([one, narrow(x, d, 0, n - 1)], d), d)
    return before * flip(cumprod(cat([one, flip(narrow(x, d, 1, n - 1), d)], d), d), d)


class Extremum(Reduction):
    """amax/amin: the gradient is split evenly among the elements tied for the extremum. Where
    the extremum is NaN, PyTorch's ``amax`` gives NaN gradients (0 / 0 ties) and its whole
    ``max()`` splits the gradient among the NaNs: ``share_nans`` (whole max()/min()) does that."""

    save_outputs = True
    kernel = "max"

    def infer(self, a: TensorSpec, *, dims: tuple[int, ...], keepdim: bool,
              share_nans: bool = False) -> TensorSpec:
        return super().infer(a, dims=dims, keepdim=keepdim)

    def forward(self, xp, a, *, dims, keepdim, share_nans=False):
        if a.dtype.kind == "c":  # (complex numbers have no order)
            raise complex_error(self.name, a.dtype)
        return c_ordered(getattr(xp, self.kernel)(a, axis=dims, keepdims=keepdim), a)

    def _share(self, ctx: Any) -> Tensor:
        x, dims = ctx.inputs[0], ctx.params["dims"]
        top = with_reduced_dims(ctx.out.detach(), x.shape, dims, True)
        hit = eq(x, top)
        if ctx.params.get("share_nans") and x.dtype.is_floating_point:
            hit = logical_or(hit, isnan(x))  # (a slice holds a NaN exactly where its max is NaN)
        hit = cast(hit, x.dtype)
        return hit / apply(Sum, hit, dims=dims, keepdim=True)

    def vjp(self, ctx, g):
        return unreduce(g, ctx.inputs[0].shape, dims=ctx.params["dims"],
                        keepdim=ctx.params["keepdim"]) * self._share(ctx)

    def jvp(self, ctx, da):
        return apply(Sum, da * self._share(ctx), dims=ctx.params["dims"],
                     keepdim=ctx.params["keepdim"])


@primitive
class AMax(Extremum):
    name = "amax"


@primitive
class AMin(Extremum):
    name = "amin"
    kernel = "min"


class ExtremumDim(Primitive):
    """max/min along one dim, giving (values, indices); the gradient goes to the index."""

    nout = 2
    save_inputs = False
    save_outputs = (1,)  # the rules read the winners, not the values
    kernel = "argmax"

    def forward(self, xp, a, *, dim, keepdim):
        if a.dtype.kind == "c":  # (complex numbers have no order)
            raise complex_error(self.name, a.dtype)
        idx = getattr(xp, self.kernel)(a, axis=dim, keepdims=True)
        values = xp.take_along_axis(a, idx, axis=dim)
        if not keepdim:
            values, idx = values.squeeze(dim), idx.squeeze(dim)
        return c_ordered(values, a), c_ordered(idx.astype(np.int64, copy=False), a)

    def infer(self, a, *, dim, keepdim):
        shape = reduced_shape(a.shape, (dim,), keepdim)
        return TensorSpec(shape, a.dtype), TensorSpec(shape, dtypes.int64)

    def _one_hot(self, ctx: Any) -> Tensor:
        x, dim = ctx.inputs[0], ctx.params["dim"]
        n = x.shape[dim]
        iota = with_reduced_dims(arange(n, device=x.device), x.shape,
                                 tuple(i for i in range(x.ndim) if i != dim), True)
        index = with_reduced_dims(ctx.output(1).detach(), x.shape, (dim,), True)
        return cast(eq(index, iota), x.dtype)

    def vjp(self, ctx, g, _g_indices=None):
        if g is None:
            return (None,)
        dims, keepdim = (ctx.params["dim"],), ctx.params["keepdim"]
        return (unreduce(g, ctx.inputs[0].shape, dims, keepdim) * self._one_hot(ctx),)

    def jvp(self, ctx, da):
        dims = (ctx.params["dim"],)
        return apply(Sum, da * self._one_hot(ctx), dims=dims,
                     keepdim=ctx.params["keepdim"]), None


@primitive
class MaxDim(ExtremumDim):
    name = "max_dim"
    backward_name = "MaxBackward0"  # PyTorch's max(dim) overload


@primitive
class MinDim(ExtremumDim):
    name = "min_dim"
    backward_name = "MinBackward0"
    kernel = "argmin"


class ArgExtremum(Primitive):
    """argmax/argmin over one dim, or over the flattened tensor when ``dim`` is None."""

    differentiable = False
    kernel = "argmax"

    def forward(self, xp, a, *, dim, keepdim):
        if a.dtype.kind == "c":  # (complex numbers have no order)
            raise complex_error(self.name, a.dtype)
        return c_ordered(getattr(xp, self.kernel)(a, axis=dim, keepdims=keepdim).astype(
            np.int64), a)

    def infer(self, a, *, dim, keepdim):
        dims = tuple(range(len(a.shape))) if dim is None else (dim,)
        return TensorSpec(reduced_shape(a.shape, dims, keepdim), dtypes.int64)


@primitive
class ArgMax(ArgExtremum):
    name = "argmax"


@primitive
class ArgMin(ArgExtremum):
    name = "argmin"
    kernel = "argmin"


class Quantifier(Reduction):
    """all/any: bool results (uint8 for uint8 input, as in PyTorch), no gradient."""

    differentiable = False
    kernel = "all"

    def forward(self, xp, a, *, dims, keepdim):
        out = getattr(xp, self.kernel)(a, axis=dims, keepdims=keepdim)
        return c_ordered(out.astype(np.uint8) if a.dtype == np.uint8 else out, a)

    def infer(self, a, *, dims, keepdim):
        dtype = dtypes.uint8 if a.dtype is dtypes.uint8 else dtypes.bool_
        return TensorSpec(reduced_shape(a.shape, dims, keepdim), dtype)


@primitive
class All(Quantifier):
    name = "all"
    limited_dtypes = dtypes.ALL_LIMITED


@primitive
class AnyOf(Quantifier):
    name = "any"
    kernel = "any"
    limited_dtypes = dtypes.ALL_LIMITED


def no_bool(op: str, input: Tensor) -> None:
    """PyTorch's refusal of bool input to ops that rank values (argmax, median, topk…)."""
    if input.dtype is dtypes.bool_:
        raise DTypeError(f"{op}: does not support bool input (shape {tuple(input.shape)}), as "
                         "in PyTorch. Hint: convert it with .int() first")


# -- the functional API ----------------------------------------------------------------------


@method()
def sum(input: Tensor, dim: Dim = None, keepdim: bool = False, *,  # noqa: A001
        dtype: DType | None = None) -> Tensor:
    """The sum over ``dim`` (all dims when None); integers and bools sum to int64.

    Example:
        >>> ember.tensor([[1, 2], [3, 4]]).sum(-1)
        tensor([3, 7])
    """
    try:
        if dim is None and dtype is None and input._data.dtype in _NATIVE_SUM:  # the hot path
            return apply(Sum, input, dims=_ALL_DIMS[input._data.ndim], keepdim=keepdim)
        if dtype is not None and DISPATCH.casting:  # (dtype= wins over autocast, as PyTorch's)
            return not_casting(lambda: sum(input, dim, keepdim, dtype=dtype))
        x = accumulation_input(input, dtype)
        total = apply(Sum, x, dims=reduce_dims(x, dim, "sum"), keepdim=keepdim)
        return total if dim is None else name_node(total, "SumBackward1")  # PyTorch's overload
    except TensorLikeOperand:
        return handle(sum, (input, dim, keepdim), {"dtype": dtype})


_NATIVE_SUM = frozenset(np.dtype(t) for t in (np.float32, np.float64, np.int64))
_ALL_DIMS = [tuple(range(n)) for n in range(65)]


@method()
def prod(input: Tensor, dim: int | None = None, keepdim: bool = False, *,
         dtype: DType | None = None) -> Tensor:
    """The product over ``dim`` (all elements when None). The first derivative is exact with
    zeros in the input; second derivatives at inputs containing zeros are not.

    Example:
        >>> ember.tensor([1.0, 2.0, 3.0]).prod()
        tensor(6.)
    """
    if type(input) in TENSOR_LIKE:  # (a MaskedTensor)
        return handle(prod, (input, dim, keepdim), {"dtype": dtype})
    if dtype is not None and DISPATCH.casting:  # (dtype= wins over autocast, as PyTorch's)
        return not_casting(lambda: prod(input, dim, keepdim, dtype=dtype))
    x = accumulation_input(input, dtype)
    if dim is None:
        return apply(Prod, x, dims=tuple(range(x.ndim)), keepdim=keepdim)
    total = apply(Prod, x, dims=normalize_dims(dim, x.ndim, "prod"), keepdim=keepdim)
    return name_node(total, "ProdBackward1")  # (PyTorch's overload)


@method()
def mean(input: Tensor, dim: Dim = None, keepdim: bool = False, *,
         dtype: DType | None = None) -> Tensor:
    """The mean over ``dim`` (all dims when None); floating and complex inputs only, as in
    PyTorch.
    Half-precision inputs are summed and divided in float32, rounded once at the end (with a
    half ``dtype=``, the input itself is read in float32, as PyTorch: no overflow on the way).

    Example:
        >>> ember.tensor([1.0, 2.0, 6.0]).mean()
        tensor(3.)
    """
    if type(input) in TENSOR_LIKE:
        return handle(mean, (input, dim, keepdim), {"dtype": dtype})
    if dtype is not None and DISPATCH.casting:  # (dtype= wins over autocast, as PyTorch's)
        return not_casting(lambda: mean(input, dim, keepdim, dtype=dtype))
    x = input if dtype is None else cast(input, dtypes.to_dtype(dtype))
    if x.dtype.category < dtypes.FLOAT:
        raise DTypeError(f"mean: input dtype {x.dtype.name} is not floating point, so the "
                         "mean's dtype cannot be inferred. Hint: call .float() on the input or "
                         "pass dtype=ember.float32")
    dims = reduce_dims(x, dim, "mean")
    # PyTorch numbers mean's overloads: MeanBackward0 for the whole tensor, 1 with dim
    node = "MeanBackward0" if dim is None else "MeanBackward1"
    if reduces_in_float32(x):
        source = x if dtype is None or input.dtype.is_complex else input
        return name_node(cast(mean(cast(source, dtypes.float32), dims, keepdim), x.dtype), node)
    n = _product(x.shape[d] for d in dims)
    total = apply(Sum, x, dims=dims, keepdim=keepdim)
    return name_node(total / n if n else total * float("nan"), node)


def _extremum(kind: tuple, input: Tensor, dim: Any, keepdim: bool, op: str) -> Any:
    everything, along_dim = kind
    if dim is None:
        check_nonempty(input, (), op)
        out = apply(everything, input, dims=tuple(range(input.ndim)), keepdim=False,
                    share_nans=True)
        return name_node(out, f"{op.capitalize()}Backward1")  # PyTorch's max()/min() overload
    if isinstance(dim, Tensor) or type(dim) in TENSOR_LIKE:  # max(a, b) (a DTensor b too)
        from ember.ops.select import maximum, minimum

        return (maximum if op == "max" else minimum)(input, dim)
    d = normalize_dim(dim, input.ndim, op)
    if input.ndim == 0:
        return getattr(return_types, op)(clone(input), zeros_like(input, dtype=dtypes.int64))
    check_nonempty(input, (d,), op)
    values, indices = apply(along_dim, input, dim=d, keepdim=keepdim)
    return getattr(return_types, op)(values, indices.detach() if indices.requires_grad else indices)


@method()
def max(input: Tensor, dim: int | Tensor | None = None,  # noqa: A001
        keepdim: bool = False) -> Tensor | return_types.max:
    """The largest element; with ``dim``, ``(values, indices)`` along it; with a tensor
    ``other`` in place of ``dim``, the elementwise maximum.

    The gradient of the whole-tensor max is split evenly among tied elements; along a dim
    it goes to the returned index (the first occurrence), as in PyTorch.

    Example:
        >>> ember.tensor([[1, 5], [7, 2]]).max(dim=1)
        ember.return_types.max(
        values=tensor([5, 7]),
        indices=tensor([1, 0]))
    """
    return _extremum((AMax, MaxDim), input, dim, keepdim, "max")


@method()
def min(input: Tensor, dim: int | Tensor | None = None,  # noqa: A001
        keepdim: bool = False) -> Tensor | return_types.min:
    """The smallest element; with ``dim``, ``(values, indices)``; see :func:`max`.

    Example:
        >>> ember.tensor([3.0, 1.0]).min()
        tensor(1.)
    """
    return _extremum((AMin, MinDim), input, dim, keepdim, "min")


def _amax_amin(prim: Primitive, input: Tensor, dim: Dim, keepdim: bool, op: str,
               share_nans: bool = False) -> Tensor:
    dims = reduce_dims(input, dim, op)
    check_nonempty(input, dims, op)
    if share_nans:
        return apply(prim, input, dims=dims, keepdim=keepdim, share_nans=True)
    return apply(prim, input, dims=dims, keepdim=keepdim)


def extreme_sharing_nans(input: Tensor, dim: Dim, keepdim: bool, largest: bool) -> Tensor:
    """:func:`amax` (``largest``) or :func:`amin` whose gradient, where the extremum is NaN,
    the NaNs share, as in PyTorch's ``max()`` and ``vector_norm(ord=±inf)``."""
    op = "amax" if largest else "amin"
    return _amax_amin(AMax if largest else AMin, input, dim, keepdim, op, share_nans=True)


@method()
def amax(input: Tensor, dim: Dim = (), keepdim: bool = False) -> Tensor:
    """The maximum over ``dim`` (all dims for ``()``); ties share the gradient evenly (where
    the maximum is NaN the gradient is NaN, as PyTorch's; ``max()`` shares it among the NaNs).

    Example:
        >>> ember.tensor([[1.0, 4.0], [3.0, 2.0]]).amax(0)
        tensor([3., 4.])
    """
    if type(input) in TENSOR_LIKE:  # (a MaskedTensor)
        return handle(amax, (input, dim, keepdim), {})
    return _amax_amin(AMax, input, dim, keepdim, "amax")


@method()
def amin(input: Tensor, dim: Dim = (), keepdim: bool = False) -> Tensor:
    """The minimum over ``dim`` (all dims for ``()``); ties share the gradient evenly.

    Example:
        >>> ember.tensor([[1.0, 4.0], [3.0, 2.0]]).amin(1)
        tensor([1., 2.])
    """
    if type(input) in TENSOR_LIKE:  # (a MaskedTensor)
        return handle(amin, (input, dim, keepdim), {})
    return _amax_amin(AMin, input, dim, keepdim, "amin")


def _arg(prim: Primitive, input: Tensor, dim: int | None, keepdim: bool, op: str) -> Tensor:
    no_bool(op, input)
    if dim is None:
        check_nonempty(input, (), op)
        return apply(prim, input, dim=None, keepdim=keepdim)
    d = normalize_dim(dim, input.ndim, op)
    if input.ndim == 0:
        return zeros((), dtype=dtypes.int64, device=input.device)
    check_nonempty(input, (d,), op)
    return apply(prim, input, dim=d, keepdim=keepdim)


@method()
def argmax(input: Tensor, dim: int | None = None, keepdim: bool = False) -> Tensor:
    """Index of the largest element (of the flattened tensor when ``dim`` is None).

    Example:
        >>> ember.tensor([[1, 5], [7, 2]]).argmax()
        tensor(2)
    """
    if type(input) in TENSOR_LIKE:  # (a MaskedTensor)
        return handle(argmax, (input, dim, keepdim), {})
    return _arg(ArgMax, input, dim, keepdim, "argmax")


@method()
def argmin(input: Tensor, dim: int | None = None, keepdim: bool = False) -> Tensor:
    """Index of the smallest element (of the flattened tensor when ``dim`` is None).

    Example:
        >>> ember.tensor([[1, 5], [7, 2]]).argmin(dim=1)
        tensor([0, 1])
    """
    if type(input) in TENSOR_LIKE:  # (a MaskedTensor)
        return handle(argmin, (input, dim, keepdim), {})
    return _arg(ArgMin, input, dim, keepdim, "argmin")


@method()
def all(input: Tensor, dim: Dim = None, keepdim: bool = False) -> Tensor:  # noqa: A001
    """Whether every element (over ``dim``) is non-zero: bool (uint8 for uint8 input).

    Example:
        >>> ember.tensor([[True, False], [True, True]]).all(1)
        tensor([False,  True])
    """
    if type(input) in TENSOR_LIKE:  # (a MaskedTensor)
        return handle(all, (input, dim, keepdim), {})
    return apply(All, input, dims=_truth_dims(input, dim, "all"), keepdim=keepdim)


@method()
def any(input: Tensor, dim: Dim = None, keepdim: bool = False) -> Tensor:  # noqa: A001
    """Whether some element (over ``dim``) is non-zero: bool (uint8 for uint8 input).

    Example:
        >>> ember.tensor([0, 0, 3]).any()
        tensor(True)
    """
    if type(input) in TENSOR_LIKE:  # (a nested tensor)
        return handle(any, (input, dim, keepdim), {})
    return apply(AnyOf, input, dims=_truth_dims(input, dim, "any"), keepdim=keepdim)


def _truth_dims(input: Tensor, dim: Dim, op: str) -> tuple[int, ...]:
    """all/any's dims: none for ``dim=()`` (each element tested, as PyTorch's), where the other
    reductions take ``()`` as every dim."""
    if isinstance(dim, (tuple, list)) and not dim:
        return ()
    return reduce_dims(input, dim, op)


@method()
def count_nonzero(input: Tensor, dim: Dim = None) -> Tensor:
    """How many elements (over ``dim``) are non-zero, as int64.

    Example:
        >>> ember.tensor([0, 1, 2]).count_nonzero()
        tensor(2)
    """
    refuse_limited("count_nonzero", input.dtype)
    return sum(cast(input.detach(), dtypes.bool_), dim)


