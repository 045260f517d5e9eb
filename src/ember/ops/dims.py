"""Reading ``dim`` arguments (:func:`normalize_dim`, :func:`normalize_dims`, used by every op
family) and the shapes and dtypes reductions and scans produce."""

from __future__ import annotations

import operator
from functools import lru_cache
from typing import Any

import numpy as np

from ember import dtypes
from ember.errors import ArgumentTypeError, IndexOutOfRange, ShapeError, refuse_non_tensor
from ember.ops.broadcast import expand
from ember.ops.convert import cast
from ember.ops.overrides import calling_op
from ember.tensor import Tensor

Dim = int | tuple[int, ...] | list[int] | None

# half-precision floats are summed and multiplied in float32, then rounded once
ACCUMULATE_IN_FLOAT32 = (dtypes.float16.np, dtypes.bfloat16.np)


def normalize_dim(dim: int, ndim: int, op: str = "op") -> int:
    """``dim`` as an index in ``[0, ndim)``; negative dims count from the end.

    A 0-d tensor accepts 0 and -1, as in PyTorch. Pass ``ndim + 1`` for ops that insert a
    dimension (``unsqueeze``).

    Example:
        >>> normalize_dim(-1, 3, "sum")
        2
    """
    try:
        if dim.__class__ is bool:  # (operator.index reads True as dim 1; PyTorch refuses it)
            raise TypeError
        d = operator.index(dim)
    except TypeError:
        raise ArgumentTypeError(f"{op}: dim must be an int, got {type(dim).__name__}") \
            from None
    n = ndim if ndim else 1
    if not -n <= d < n:
        raise IndexOutOfRange(f"{op}: dimension {d} is out of range for a tensor of {ndim} "
                              f"dimension(s); expected a dim in [{-n}, {n - 1}]")
    return d % n


def dim_error(op: str, dim: Any, ndim: int) -> Exception:
    """The error for a ``dim`` a tensor of ``ndim`` dimensions has not (``x.size(5)``): the
    IndexOutOfRange, or TypeError for a non-integer, :func:`normalize_dim` gives."""
    try:
        normalize_dim(dim, ndim, op)
    except (IndexError, TypeError) as error:
        return error
    return IndexOutOfRange(f"{op}: dimension {dim} is out of range for a 0-d tensor, which "
                           "has no dimensions")


def normalize_dims(dim: Dim, ndim: int, op: str = "op") -> tuple[int, ...]:
    """``dim`` (an int, a sequence of ints, or None for all) as a sorted tuple in
    ``[0, ndim)``; a repeated dim is an error. A 0-d tensor has no dims to name: ``()``.

    Example:
        >>> normalize_dims((-1, 0), 3, "sum")
        (0, 2)
    """
    if dim is None:
        return tuple(range(ndim))
    key = tuple(dim) if isinstance(dim, list) else dim
    # only ints reach the cache: True, np.True_ and 1.0 equal 1 and hash alike, so a cached
    # (1, 0) would answer for a refused (True, 0); the rest (np.int64, a tensor) is read uncached
    if key.__class__ is int or key.__class__ is tuple and _INT.issuperset(map(type, key)):
        return _cached_normalize(key, ndim, op)
    return _normalize(key, ndim, op)


_INT = frozenset((int,))


def _normalize(dim: Any, ndim: int, op: str) -> tuple[int, ...]:
    if not isinstance(dim, tuple):
        d = normalize_dim(dim, ndim, op)
        return (d,) if ndim else ()
    dims = sorted(normalize_dim(d, ndim, op) for d in dim)
    if len(set(dims)) != len(dims):
        raise ShapeError(f"{op}: a dim appears more than once in dims {dim}")
    return tuple(dims) if ndim else ()


_cached_normalize = lru_cache(maxsize=1024)(_normalize)


def reduce_dims(x: Tensor, dim: Dim, op: str) -> tuple[int, ...]:
    """The dims a reduction runs over: None and ``()`` mean all, as in PyTorch's ``sum``."""
    if dim is None or (isinstance(dim, (tuple, list)) and not dim):
        return tuple(range(x.ndim))
    return normalize_dims(dim, x.ndim, op)


def reduced_shape(shape: tuple[int, ...], dims: tuple[int, ...],
                  keepdim: bool) -> tuple[int, ...]:
    """The shape left after reducing ``dims`` (kept as size 1 with ``keepdim``)."""
    if keepdim:
        return tuple(1 if i in dims else s for i, s in enumerate(shape))
    return tuple(s for i, s in enumerate(shape) if i not in dims)


def with_reduced_dims(t: Tensor, shape: tuple[int, ...], dims: tuple[int, ...],
                      keepdim: bool) -> Tensor:
    """A reduction's output over an input of ``shape`` reshaped to have (``keepdim=True``)
    or not have (False) the reduced dims as size 1; ``t`` itself when it already does."""
    target = reduced_shape(shape, dims, keepdim)
    if t.shape == target:
        return t
    from ember.ops.shape import reshape  # shape.py imports this module's users

    return reshape(t, target)


def unreduce(g: Tensor, shape: tuple[int, ...], dims: tuple[int, ...],
             keepdim: bool) -> Tensor:
    """Broadcasts a reduction's output (or its gradient) back over the input ``shape`` (a
    full reduction's 0-d one broadcasts as it is: one op, not a reshape and an expand)."""
    if keepdim or not g._data.ndim:
        return expand(g, shape)
    return expand(with_reduced_dims(g, shape, dims, True), shape)


def check_nonempty(x: Tensor, dims: tuple[int, ...], op: str) -> None:
    """A clear error for a max/min/argmax over a dimension of size 0 (``dims`` () = all)."""
    if x.numel() == 0:
        for d in dims or range(x.ndim):
            if x.shape[d] == 0:
                raise ShapeError(f"{op}: cannot reduce over dimension {d} of size 0 "
                                 f"(input shape {tuple(x.shape)}): an empty reduction has no "
                                 "identity for this op. Hint: pass a dim whose size is not 0")


def accumulation_input(x: Tensor, dtype: Any) -> Tensor:
    """The input of sum/prod/cumsum/cumprod: cast to ``dtype`` if given, else integers and
    bools promoted to int64, as PyTorch does."""
    if dtype is not None:
        return cast(x, dtypes.to_dtype(dtype))
    dt = x.dtype
    try:
        if dt.category < dtypes.FLOAT and dt is not dtypes.int64:
            return cast(x, dtypes.int64)
    except AttributeError:  # (a PyTorch tensor, a NumPy array: its dtype is not Ember's)
        refuse_non_tensor(calling_op(), "input", x)
        raise
    return x


def accumulator(xp_dtype: Any) -> Any:
    """The NumPy dtype to accumulate an array of ``xp_dtype`` in."""
    return np.float32 if xp_dtype in ACCUMULATE_IN_FLOAT32 else xp_dtype


def scan_accumulator(xp_dtype: Any) -> Any:
    """The NumPy dtype cumsum and cumprod run in. NumPy's scans go step by step in the
    input's dtype, so their error grows with the length; PyTorch's CPU kernels run float32 in
    float64 (complex64 in complex128, halves in float32) and round once. A float32 cumsum of
    1e5 values near 1e4 is then off by 3e-8 relative, not 7e-4."""
    return _WIDER_SCAN.get(xp_dtype) or accumulator(xp_dtype)


_WIDER_SCAN = {np.dtype(np.float32): np.float64, np.dtype(np.complex64): np.complex128}
