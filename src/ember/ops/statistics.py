"""Order statistics and NaN-aware reductions: quantile, nanquantile, nanmedian, mode,
aminmax, nansum, nanmean, cummax, cummin, cov and corrcoef (``logcumsumexp`` has a file of
its own).

One primitive: ``cummax``/``cummin`` compute the *indices* of the running extremum (no
gradient; the values are ``gather(input, dim, indices)``, so the gradient goes to those
positions, as in PyTorch). Everything else is a composite of sort, gather, cumulative and reduction
primitives, so gradients and vmap come for free. PyTorch's tie rules are kept: quantile and
nanmedian read a stable sort (nanmedian's index is the k-th of the non-NaN values in stable
order), mode picks the smallest of the most frequent values, cummax/cummin move to the latest
of equal values and to each NaN.
"""

from __future__ import annotations

import warnings
from functools import lru_cache
from typing import Any

import numpy as np

from ember import dtypes, return_types
from ember.autograd.graph import name_node
from ember.errors import (
    ArgumentError,
    DTypeError,
    EmberError,
    IndexOutOfRange,
    ShapeError,
    bool_flag,
    dtype_name,
)
from ember.ops.arithmetic import floor_divide
from ember.ops.broadcast import expand
from ember.ops.compare import isnan, logical_not, ne
from ember.ops.complex_parts import complex, imag, real
from ember.ops.convert import cast, clone, float32_under_autocast
from ember.ops.creation import arange, full, full_like, zeros
from ember.ops.diagonal import diagonal
from ember.ops.dims import normalize_dim
from ember.ops.fused_arithmetic import lerp
from ember.ops.gather import gather
from ember.ops.int_args import as_float
from ember.ops.join import cat
from ember.ops.linalg import mm
from ember.ops.primitive import Primitive, TensorSpec, apply, complex_error, primitive
from ember.ops.reduce import amax, amin, any, argmax, no_bool, sum
from ember.ops.rounding import ceil, floor, round
from ember.ops.select import clamp, where
from ember.ops.shape import flatten, movedim, narrow, reshape, squeeze, unsqueeze
from ember.ops.sort import argsort, median_of_all, reduced_pair, sort
from ember.ops.unary import sqrt
from ember.tensor import Tensor, method

__all__ = ["quantile", "nanquantile", "nanmedian", "mode", "aminmax", "nansum", "nanmean",
           "cummax", "cummin", "cov", "corrcoef"]


def _known(t: Tensor) -> Any:
    """``t``'s Python value when it can be read, None under a transform that hides it (vmap
    of a batched value, jit tracing): checks on values then wait for the eager call."""
    try:
        return t.item()
    except EmberError:
        return None


def _stable_order(x: Tensor, dim: int) -> Tensor:
    """The stable ascending order of ``x`` along ``dim``, NaN last (bfloat16 sorted as float32,
    exactly: NumPy's sort of ml_dtypes' bfloat16 does not put NaN last)."""
    return argsort(cast(x, dtypes.float32) if x.dtype is dtypes.bfloat16 else x, dim,
                   stable=True)


def _along(n: int, dim: int, ndim: int, device: Any) -> Tensor:
    """``arange(n)`` shaped to broadcast along ``dim`` of a rank-``ndim`` tensor."""
    return reshape(arange(n, device=device), tuple(n if i == dim else 1 for i in range(ndim)))


# -- primitives ------------------------------------------------------------------------------------
class _CumExtremumIndices(Primitive):
    """Indices of the running max (min) along ``dim``: the latest position holding it (ties
    move it on, PyTorch's ``>=``); from the first NaN on, the latest NaN."""

    differentiable = False
    ufunc = "maximum"

    def forward(self, xp, a, *, dim):
        if a.dtype.kind == "c":  # (complex numbers have no order)
            raise complex_error(self.name, a.dtype)
        running = getattr(xp, self.ufunc).accumulate(a, axis=dim)
        n = a.shape[dim]
        iota = xp.arange(n).reshape(tuple(n if i == dim else 1 for i in range(a.ndim)))
        moves = a == running
        if a.dtype.kind == "f" or a.dtype == dtypes.bfloat16.np:
            moves |= xp.isnan(a)
        return xp.maximum.accumulate(xp.where(moves, iota, 0), axis=dim).astype(
            np.int64, order="C")  # (C order whatever the input's, as PyTorch's scans)

    def infer(self, a, *, dim):
        return TensorSpec(a.shape, dtypes.int64)


@primitive
class CumMaxIndices(_CumExtremumIndices):
    name = "cummax"


@primitive
class CumMinIndices(_CumExtremumIndices):
    name = "cummin"
    ufunc = "minimum"


def _of_0d(result: type, input: Tensor, node: str) -> Any:
    """A 0-d input's ``(value, index 0)``: a reduction over its one position, as PyTorch's
    (the value's node named ``node``, as the op's)."""
    return result(name_node(clone(input), node),
                  zeros((), dtype=dtypes.int64, device=input.device))


def _reduced_length(input: Tensor, d: int, op: str) -> int:
    """The length of the reduced dimension ``d``; an error when it is empty."""
    n = input.shape[d]
    if n == 0:
        raise IndexOutOfRange(f"{op}: the reduced dimension {d} of input {tuple(input.shape)} "
                              "is empty")
    return n


# -- scans ---------------------------------------------------------------------------------------
def _cum_extremum(prim: Primitive, input: Tensor, dim: int, op: str) -> Any:
    d = normalize_dim(dim, input.ndim, op)
    node = f"{op.capitalize()}Backward0"
    if input.ndim == 0:
        return _of_0d(getattr(return_types, op), input, node)
    indices = apply(prim, input, dim=d)
    values = name_node(gather(input, d, indices), node)
    return getattr(return_types, op)(values, indices)


@method()
def cummax(input: Tensor, dim: int) -> return_types.cummax:
    """``(values, indices)`` of the running maximum along ``dim``; among equal values the
    index moves to the latest, and from a NaN on the values are NaN (PyTorch's rules). The
    values are differentiable (the gradient goes to the indices).

    Example:
        >>> ember.tensor([1, 3, 2, 3, 5]).cummax(0)
        ember.return_types.cummax(
        values=tensor([1, 3, 3, 3, 5]),
        indices=tensor([0, 1, 1, 3, 4]))
    """
    return _cum_extremum(CumMaxIndices, input, dim, "cummax")


@method()
def cummin(input: Tensor, dim: int) -> return_types.cummin:
    """``(values, indices)`` of the running minimum along ``dim``; see :func:`cummax`.

    Example:
        >>> ember.tensor([3.0, 1.0, 2.0, 1.0]).cummin(0)
        ember.return_types.cummin(
        values=tensor([3., 1., 1., 1.]),
        indices=tensor([0, 1, 1, 3]))
    """
    return _cum_extremum(CumMinIndices, input, dim, "cummin")


# -- NaN-aware reductions --------------------------------------------------------------------------
@method()
def nansum(input: Tensor, dim: Any = None, keepdim: bool = False, *,
           dtype: Any = None) -> Tensor:
    """The sum over ``dim`` with NaN counted as 0; integers and bools sum to int64.

    Example:
        >>> ember.tensor([1.0, float("nan"), 2.0]).nansum()
        tensor(3.)
    """
    _refuse_complex("nansum", input, dtype)
    x = input
    if x.dtype.is_floating_point:
        x = where(isnan(x), 0.0, x)
    return name_node(sum(x, dim, keepdim, dtype=dtype), "NansumBackward0")


class ComplexNanSumError(DTypeError, NotImplementedError):
    """A complex nansum or nanmean (PyTorch's CPU kernels have none: NotImplementedError for a
    complex ``dtype=``, RuntimeError for a complex input)."""


def _refuse_complex(op: str, input: Tensor, dtype: Any) -> None:
    for what, d in (("input", input.dtype), ("dtype=", dtype)):
        if d is not None and dtypes.to_dtype(d).is_complex:
            raise ComplexNanSumError(f"{op}: complex {what} {dtypes.to_dtype(d).name} is not "
                                     "supported, as in PyTorch. Hint: reduce the real and "
                                     "imaginary parts apart")


@method()
def nanmean(input: Tensor, dim: Any = None, keepdim: bool = False, *,
            dtype: Any = None) -> Tensor:
    """The mean over ``dim`` of the non-NaN elements (NaN where there are none). Floating
    inputs only, as in PyTorch.

    Example:
        >>> ember.tensor([1.0, float("nan"), 2.0]).nanmean()
        tensor(1.5000)
    """
    if not input.dtype.is_floating_point:
        raise DTypeError(f"nanmean: expected a floating input, got {input.dtype.name}. Hint: "
                         "call .float() first")
    _refuse_complex("nanmean", input, dtype)
    if dtype is not None and dtypes.to_dtype(dtype).category < dtypes.FLOAT:
        raise DTypeError(f"nanmean: dtype={dtypes.to_dtype(dtype).name} is not floating "
                         "point, and the mean's dtype must be. Hint: pass a floating dtype")
    count = sum(logical_not(isnan(input)), dim, keepdim)
    # (a half quotient ends in a cast; PyTorch's node is the division's)
    return name_node(nansum(input, dim, keepdim, dtype=dtype) / count, "DivBackward0")


@method()
def aminmax(input: Tensor, *, dim: int | None = None,
            keepdim: bool = False) -> return_types.aminmax:
    """``(min, max)`` over ``dim`` (all elements when None) in one call; NaN propagates, and
    ties share the gradient evenly, as for ``amin``/``amax``.

    Example:
        >>> ember.tensor([[1, 5], [7, 2]]).aminmax(dim=0)
        ember.return_types.aminmax(
        min=tensor([1, 2]),
        max=tensor([7, 5]))
    """
    if dim is None:
        dims = tuple(range(input.ndim))
        empty = input.numel() == 0
    else:
        d = normalize_dim(dim, input.ndim, "aminmax")
        dims = (d,) if input.ndim else ()
        empty = bool(input.ndim) and input.shape[d] == 0
    if empty:
        raise ShapeError(f"aminmax: cannot compute aminmax over an empty dimension of input "
                         f"{tuple(input.shape)}: the operation has no identity. Hint: pass a "
                         "dim whose size is not 0")
    return return_types.aminmax(name_node(amin(input, dims, keepdim), "AminmaxBackward0"),
                                name_node(amax(input, dims, keepdim), "AminmaxBackward0"))


# -- order statistics ----------------------------------------------------------------------------
_INTERPOLATIONS = ("linear", "lower", "higher", "midpoint", "nearest")


def _quantile(input: Tensor, q: Any, dim: int | None, keepdim: bool, interpolation: str,
              ignore_nan: bool, op: str) -> Tensor:
    if input.dtype not in (dtypes.float32, dtypes.float64):
        raise DTypeError(f"{op}: the input must be float32 or float64, got "
                         f"{dtype_name(op, 'input', input)}. "
                         "Hint: call .float() first")
    if interpolation not in _INTERPOLATIONS:
        raise ArgumentError(f"{op}: interpolation must be one of {', '.join(_INTERPOLATIONS)}, "
                            f"got {interpolation!r}")
    if isinstance(q, Tensor):
        if q.dtype is not input.dtype:
            raise DTypeError(f"{op}: the q tensor must have the input's dtype "
                             f"{input.dtype.name}, got {q.dtype.name}")
        if q.ndim > 1:
            raise ShapeError(f"{op}: q must be a number or a 0-d or 1-D tensor, got shape "
                             f"{tuple(q.shape)}")
        inside = _known(((q >= 0) & (q <= 1)).all())
        if inside is False:
            raise ArgumentError(f"{op}: q values must be in the range [0, 1]")
        qt = q
    else:
        q = as_float(q, op, "q")
        if not 0 <= q <= 1:
            raise ArgumentError(f"{op}: q must be in the range [0, 1], got {q}")
        qt = full((), q, dtype=input.dtype, device=input.device)
    if input.numel() == 0:
        raise ShapeError(f"{op}: the input tensor must be non-empty, got shape "
                         f"{tuple(input.shape)}")
    if dim is None:
        x = flatten(input)
        reduced = (1,) * input.ndim if keepdim else ()
    else:
        d = normalize_dim(dim, input.ndim, op)
        x = movedim(input, d, -1) if input.ndim else reshape(input, (1,))
        shape = input.shape
        reduced = tuple(1 if i == d else s for i, s in enumerate(shape)) if keepdim else \
            tuple(s for i, s in enumerate(shape) if i != d)
    values = sort(x, -1).values                     # (*rows, n), NaN last
    n = values.shape[-1]
    qs = reshape(qt, (-1,))                         # (Q,)
    if ignore_nan:  # rank among the non-NaN values; an all-NaN row reads its first NaN
        count = sum(logical_not(isnan(values)), -1, keepdim=True)
        ranks = qs * (count - 1)
        ranks = where(ranks < 0, 0.0, ranks)
    else:           # a row holding NaN reads its last value, a NaN
        ranks = where(any(isnan(values), -1, keepdim=True), float(n - 1), qs * (n - 1))
    if interpolation == "lower":
        ranks = floor(ranks)
    elif interpolation == "higher":
        ranks = ceil(ranks)
    elif interpolation == "nearest":
        ranks = round(ranks)                        # half to even, as PyTorch
    below_at = cast(ranks, dtypes.int64)
    out = gather(values, -1, below_at)
    if interpolation in ("linear", "midpoint"):
        weight = full_like(ranks, 0.5) if interpolation == "midpoint" else ranks - below_at
        above = gather(values, -1, cast(ceil(ranks), dtypes.int64))
        out = lerp(out, above, weight)
    out = movedim(out, -1, 0)                       # (Q, *rows)
    if qt.ndim == 0:
        return reshape(out, reduced)
    return reshape(out, (qs.shape[0],) + reduced)


@method()
@float32_under_autocast
def quantile(input: Tensor, q: float | Tensor, dim: int | None = None, keepdim: bool = False,
             *, interpolation: str = "linear") -> Tensor:
    """The ``q``-th quantiles of ``input`` along ``dim`` (all elements when None); ``q`` is a
    number or a 0-d/1-D tensor of ``input``'s dtype in [0, 1] (a 1-D ``q`` puts its dimension
    first). Between two data points ``interpolation`` picks ``linear``, ``lower``,
    ``higher``, ``midpoint`` or ``nearest``. A row holding NaN gives NaN. Differentiable in
    ``input`` and, for ``linear``, in ``q``.

    Example:
        >>> ember.tensor([1.0, 2.0, 3.0, 4.0]).quantile(0.5)
        tensor(2.5000)
    """
    return _quantile(input, q, dim, keepdim, interpolation, False, "quantile")


@method()
@float32_under_autocast
def nanquantile(input: Tensor, q: float | Tensor, dim: int | None = None, keepdim: bool = False,
                *, interpolation: str = "linear") -> Tensor:
    """:func:`quantile` ignoring NaN: the quantiles of the non-NaN values (NaN for a row of
    NaNs only).

    Example:
        >>> ember.tensor([1.0, float("nan"), 3.0]).nanquantile(0.5)
        tensor(2.)
    """
    return _quantile(input, q, dim, keepdim, interpolation, True, "nanquantile")


@lru_cache(maxsize=256)
def _all_nan_index(n: int) -> int:
    """The index PyTorch's CPU nanmedian reports for a row of ``n`` NaNs: where libstdc++'s
    ``nth_element`` leaves position 0 when its comparison never holds (its partition steps
    depend on ``n`` only)."""
    idx = np.arange(n)
    first, last = 0, n
    while last - first > 3:
        mid = first + (last - first) // 2
        idx[[first, mid]] = idx[[mid, first]]
        k = (last - first - 1) // 2     # the partition swaps the ends of [first + 1, last)
        lo, hi = idx[first + 1:first + 1 + k].copy(), idx[last - k:last].copy()
        idx[first + 1:first + 1 + k], idx[last - k:last] = hi[::-1], lo[::-1]
        last = first + 1 + k            # nth (0) lies before the cut
    return int(idx[0])


@method()
def nanmedian(input: Tensor, dim: int | None = None, keepdim: bool = False
              ) -> Tensor | return_types.nanmedian:
    """The lower median of the non-NaN values: of all elements (a 0-d tensor; NaN if there are
    none), or ``(values, indices)`` along ``dim``, the index being that of the k-th non-NaN
    value in stable order, as in PyTorch. The values are differentiable.

    Example:
        >>> ember.tensor([1.0, float("nan"), 3.0, 2.0]).nanmedian()
        tensor(2.)
    """
    no_bool("nanmedian", input)
    bool_flag("nanmedian", "keepdim", keepdim)
    if dim is None:
        return name_node(median_of_all("nanmedian", input, lambda flat: nanmedian(flat, 0).values),
                         "NanmedianBackward0")
    d = normalize_dim(dim, input.ndim, "nanmedian")
    if input.ndim == 0:
        return _of_0d(return_types.nanmedian, input, "NanmedianBackward1")
    n = _reduced_length(input, d, "nanmedian")
    order = _stable_order(input.detach(), d)                # NaN last
    count = sum(logical_not(isnan(input.detach())), d, keepdim=True)
    k = floor_divide(clamp(count - 1, min=0), 2)
    indices = gather(order, d, k)
    if input.dtype.is_floating_point:
        indices = where(count == 0, _all_nan_index(n), indices)
    return reduced_pair(return_types.nanmedian, gather(input, d, indices), indices, d, keepdim,
                        "NanmedianBackward1")


@method()
def mode(input: Tensor, dim: int = -1, keepdim: bool = False) -> return_types.mode:
    """``(values, indices)``: the most frequent value along ``dim`` (the smallest of several
    equally frequent ones, PyTorch's rule) and an index where it occurs (the last one; PyTorch's
    own index among the copies follows its unstable sort on rows longer than 16). The values
    are differentiable.

    Example:
        >>> ember.tensor([1, 2, 2, 3, 3, 1, 0]).mode()
        ember.return_types.mode(
        values=tensor(1),
        indices=tensor(5))
    """
    bool_flag("mode", "keepdim", keepdim)
    d = normalize_dim(dim, input.ndim, "mode")
    if input.ndim == 0:
        return _of_0d(return_types.mode, input, "ModeBackward0")
    n = _reduced_length(input, d, "mode")
    x = input.detach()
    order = _stable_order(x, d)
    s = gather(x, d, order)
    edge = reshape(full((), True, dtype=dtypes.bool_, device=x.device), (1,) * x.ndim)
    edge = expand(edge, tuple(1 if i == d else size for i, size in enumerate(x.shape)))
    if n > 1:
        new = ne(narrow(s, d, 1, n - 1), narrow(s, d, 0, n - 1))   # a run starts at i + 1
        starts, ends = cat([edge, new], d), cat([new, edge], d)
    else:
        starts = ends = edge
    iota = _along(n, d, x.ndim, x.device)
    run_start = cummax(where(starts, iota, 0), d).values
    length = where(ends, iota - run_start + 1, 0)      # each run's length, at its end
    best = argmax(length, d, keepdim=True)              # first: the smallest value
    indices = gather(order, d, best)
    return reduced_pair(return_types.mode, gather(input, d, indices), indices, d, keepdim,
                        "ModeBackward0")


# -- covariance ------------------------------------------------------------------------------------
def _check_weights(w: Tensor, kind: str, observations: int) -> None:
    if w.ndim > 1:
        raise ShapeError(f"cov: expected {kind} to have one or fewer dimensions, got shape "
                         f"{tuple(w.shape)}")
    if w.numel() != observations:
        raise ShapeError(f"cov: expected {kind} to have as many elements as there are "
                         f"observations in the input ({observations}), got {w.numel()}")
    if observations and _known(amin(w) < 0) is True:
        raise ArgumentError(f"cov: {kind} cannot be negative")


@method()
def cov(input: Tensor, *, correction: int = 1, fweights: Tensor | None = None,
        aweights: Tensor | None = None) -> Tensor:
    """The covariance matrix of the variables in the rows of ``input`` (a 1-D input is one
    variable), observations in the columns: ``correction`` 1 is Bessel's; ``fweights``
    (integer repeat counts) and ``aweights`` (floating importance) weight the observations.

    Example:
        >>> ember.cov(ember.tensor([[0.0, 1.0, 2.0], [2.0, 1.0, 0.0]]))
        tensor([[ 1., -1.],
                [-1.,  1.]])
    """
    if input.ndim > 2:
        raise ShapeError(f"cov: expected input to have two or fewer dimensions, got shape "
                         f"{tuple(input.shape)}")
    if input.dtype is dtypes.bool_:
        raise DTypeError("cov: bool inputs are not supported. Hint: call .float() first")
    x = reshape(input, (1, -1)) if input.ndim < 2 else input
    observations = x.shape[1]
    w = None
    if fweights is not None:
        if fweights.dtype.category != dtypes.INT:
            raise DTypeError(f"cov: expected fweights to have an integer dtype, got "
                             f"{fweights.dtype.name}")
        _check_weights(fweights, "fweights", observations)
        w = fweights
    if aweights is not None:
        if not aweights.dtype.is_floating_point:
            raise DTypeError(f"cov: expected aweights to have a floating dtype, got "
                             f"{aweights.dtype.name}")
        _check_weights(aweights, "aweights", observations)
        w = aweights if w is None else w * aweights
    if w is None:
        total: Any = observations
        avg = sum(x, 1) / observations
    else:
        total = sum(w)
        if _known(total == 0) is True:
            raise ArgumentError("cov: the weights sum to zero, so they cannot be normalized")
        avg = sum(x * w, 1) / total
    if w is not None and aweights is not None and correction != 0:
        norm = total - correction * sum(w * aweights) / total
    else:
        norm = total - correction
    if isinstance(norm, Tensor):
        if _known(norm <= 0) is True:
            _warn_dof()
        norm = where(norm <= 0, 0, norm)
    elif norm <= 0:
        _warn_dof()
        norm = 0
    centered = x - unsqueeze(avg, 1)
    weighted = (centered if w is None else centered * w).t()
    c = mm(centered, weighted.conj() if weighted.is_complex() else weighted)
    return squeeze(c / norm)


def _warn_dof() -> None:
    warnings.warn("cov: degrees of freedom is <= 0. Correction should be strictly less than "
                  "the number of observations.", UserWarning, stacklevel=3)


@method()
def corrcoef(input: Tensor) -> Tensor:
    """Pearson correlation coefficients of the variables in the rows of ``input``:
    ``cov / (std_i std_j)``, clipped to [-1, 1]; NaN for a variable without variance.

    Example:
        >>> ember.corrcoef(ember.tensor([[0.0, 1.0, 2.0], [0.0, 2.0, 4.5]]))
        tensor([[1.0000, 0.9979],
                [0.9979, 1.0000]])
    """
    if input.ndim > 2:
        raise ShapeError(f"corrcoef: expected input to have two or fewer dimensions, got shape "
                         f"{tuple(input.shape)}")
    c = cov(input)
    if c.ndim == 0:
        return c / c
    variances = diagonal(c)
    std = sqrt(real(variances) if c.dtype.is_complex else variances)
    c = c / reshape(std, (-1, 1))
    c = c / reshape(std, (1, -1))
    if c.dtype.is_complex:  # as PyTorch: clip each part (complex numbers have no order)
        return complex(clamp(real(c), -1, 1), clamp(imag(c), -1, 1))
    return clamp(c, -1, 1)

