"""Tensors built from others: tensor_split, diff, kron, cartesian_prod, combinations, trace,
cross, vander, tril_indices/triu_indices, meshgrid, rot90 and block_diag. (``cdist`` is in
:mod:`ember.ops.distance`, ``renorm`` in :mod:`ember.ops.norms`, ``Tensor.unfold`` in
:mod:`ember.ops.unfold`.)

All are composites of existing primitives (slices,
cat, reshape/expand, elementwise ops, sums, matmul, where, ``index``), so gradients, forward
mode and vmap come from their rules. ``tensor_split`` pieces and ``meshgrid`` outputs are
views, as in PyTorch; the others are new tensors. ``tril_indices``/``triu_indices`` are
computed on the device's array namespace; ``combinations`` builds its index table on the host
and gathers with it (``index``), so its gradient sums over repeats.
"""

from __future__ import annotations

import functools
import itertools
from collections.abc import Sequence
from typing import Any

import numpy as np

from ember import dtypes
from ember.backend import device as to_device
from ember.errors import ArgumentError, DeviceError, DTypeError, ShapeError
from ember.ops.arithmetic import mul
from ember.ops.broadcast import broadcast_shapes, expand
from ember.ops.compare import logical_xor
from ember.ops.convert import cast, clone, float32_under_autocast
from ember.ops.creation import check_strided, ones, zeros
from ember.ops.diagonal import diagonal
from ember.ops.forwarding import check_tensors, hands_over
from ember.ops.indexing import FULL, Index, Slice
from ember.ops.int_args import as_int
from ember.ops.join import cat, flip, stack
from ember.ops.primitive import apply, refuse_limited
from ember.ops.reduce import normalize_dim
from ember.ops.reduce import sum as _sum
from ember.ops.scan import cumprod
from ember.ops.shape import reshape, reshape_view, slice_dim, transpose
from ember.tensor import Tensor, _wrap, method

__all__ = ["tensor_split", "diff", "kron", "cartesian_prod", "combinations", "trace", "cross",
           "vander", "tril_indices", "triu_indices", "meshgrid", "rot90", "block_diag"]


def _shape(x: Tensor) -> tuple:
    return tuple(x.shape)


def _tensor_list(tensors: tuple, op: str) -> list:
    """``f(a, b)`` and ``f([a, b])`` alike; every entry checked to be a Tensor."""
    if len(tensors) == 1 and isinstance(tensors[0], (list, tuple)):
        tensors = tuple(tensors[0])
    for i, t in enumerate(tensors):
        check_tensors(op, **{f"tensor {i}": t})
    return list(tensors)


def _index_tensor(array: Any, dev: Any) -> Tensor:
    """A host int64 NumPy array as a tensor on ``dev``."""
    return _wrap(dev.xp.asarray(np.ascontiguousarray(array, dtype=np.int64)), dev)


# -- tensor_split ---------------------------------------------------------------------------------
def one_given(op: str, **spellings: Any) -> Any:
    """The one of ``spellings`` (an argument's names in PyTorch's overloads) that is not None;
    a TypeError naming them all when there are none or several.

    Example:
        >>> one_given("hsplit", indices_or_sections=None, sections=2)
        2
    """
    given = [v for v in spellings.values() if v is not None]
    if len(given) != 1:
        raise TypeError(f"{op}: expected exactly one of {', '.join(spellings)}, got "
                        f"{len(given)}")
    return given[0]


@method()
@hands_over
def tensor_split(input: Tensor, indices_or_sections: Any = None, dim: int = 0, *,
                 sections: int | None = None, indices: Sequence[int] | None = None,
                 tensor_indices_or_sections: Tensor | None = None) -> tuple[Tensor, ...]:
    """Views of ``input`` cut along ``dim``: into ``sections`` nearly equal pieces (the first
    ``size % sections`` one longer), or at the given ``indices`` (NumPy's ``array_split``).
    A 0-d int64 tensor counts as ``sections``, a 1-d one as ``indices`` (PyTorch's keyword
    for it: ``tensor_indices_or_sections``).

    Example:
        >>> [p.tolist() for p in ember.arange(7).tensor_split(3)]
        [[0, 1, 2], [3, 4], [5, 6]]
        >>> [p.tolist() for p in ember.arange(7).tensor_split([1, 5])]
        [[0], [1, 2, 3, 4], [5, 6]]
    """
    op = "tensor_split"
    check_tensors(op, input=input)
    spec = one_given(op, indices_or_sections=indices_or_sections, sections=sections,
                     indices=indices, tensor_indices_or_sections=tensor_indices_or_sections)
    if input.ndim == 0:
        raise ShapeError(f"{op}: expected at least a 1-dimensional tensor, but got a tensor "
                         "with 0 dims. Hint: reshape(1) it first")
    if isinstance(spec, Tensor):
        if spec.dtype is not dtypes.int64:
            raise DTypeError(f"{op}: expected tensor_indices_or_sections to have dtype int64, "
                             f"but got {spec.dtype.name}")
        if spec.ndim > 1:
            raise ShapeError(f"{op}: expected tensor_indices_or_sections to be a 0-d or 1-d "
                             f"tensor, but got shape {_shape(spec)}")
        spec = spec.tolist()
    d = normalize_dim(dim, input.ndim, op)
    n = input.shape[d]
    if isinstance(spec, (list, tuple)):
        if sections is not None:
            raise TypeError(f"{op}: sections= must be an int, got {type(spec).__name__}")
        bounds = [as_int(i, op, "each split index") for i in spec]
        pieces, prev = [], 0
        for b in bounds + [None]:
            start, stop, _ = slice(prev, b).indices(n)
            pieces.append(slice_dim(input, d, start, max(0, stop - start)))
            prev = b
        return tuple(pieces)
    if indices is not None:
        raise TypeError(f"{op}: indices= must be a sequence of ints, got "
                        f"{type(spec).__name__}")
    count = as_int(spec, op, "indices_or_sections")
    if count <= 0:
        raise ArgumentError(f"{op}: number of sections must be larger than 0, got {count}")
    q, r = divmod(n, count)
    pieces, start = [], 0
    for i in range(count):
        length = q + (i < r)
        pieces.append(slice_dim(input, d, start, length))
        start += length
    return tuple(pieces)


# -- diff -----------------------------------------------------------------------------------------
@method()
@hands_over
def diff(input: Tensor, n: int = 1, dim: int = -1, prepend: Tensor | None = None,
         append: Tensor | None = None) -> Tensor:
    """The ``n``-th forward difference ``out[i] = x[i + 1] - x[i]`` along ``dim``, after
    ``prepend`` and ``append`` are joined to ``input`` there (bools: ``x[i + 1] != x[i]``).

    Example:
        >>> ember.tensor([1, 3, 6, 10]).diff()
        tensor([2, 3, 4])
        >>> ember.tensor([1.0, 3.0]).diff(prepend=ember.tensor([0.0]))
        tensor([1., 2.])
    """
    op = "diff"
    check_tensors(op, input=input)
    if input.ndim == 0:
        raise ShapeError(f"{op}: expects input to be at least one-dimensional, got a 0-d "
                         "tensor")
    order = as_int(n, op, "n")
    if order < 0:
        raise ArgumentError(f"{op}: order must be non-negative but got {order}")
    d = normalize_dim(dim, input.ndim, op)
    parts = []
    for name, extra in (("prepend", prepend), ("append", append)):
        if extra is None:
            continue
        check_tensors(op, **{name: extra})
        if extra.ndim != input.ndim:
            raise ShapeError(f"{op}: expects {name} to have the same number of dimensions as "
                             f"input: got shape {_shape(extra)} for input of shape "
                             f"{_shape(input)}")
        for i, (a, b) in enumerate(zip(input.shape, extra.shape, strict=True)):
            if i != d and a != b:
                raise ShapeError(f"{op}: expects the shape of {name} to match that of input "
                                 f"except along dimension {d}: input.size({i}) = {a}, but "
                                 f"{name}.size({i}) = {b}")
        parts.append((name, extra))
    if order == 0:  # (prepend and append checked, then left out, as PyTorch's and NumPy's)
        return clone(input)
    x = input
    if parts:
        pieces = [e for k, e in parts if k == "prepend"] + [input] + \
                 [e for k, e in parts if k == "append"]
        x = cat(pieces, d)
    order = min(order, x.shape[d])
    if order == 0:  # (an empty dim)
        return clone(x)
    boolean = x.dtype is dtypes.bool_
    for _ in range(order):
        length = x.shape[d] - 1
        later, earlier = slice_dim(x, d, 1, length), slice_dim(x, d, 0, length)
        x = logical_xor(later, earlier) if boolean else later - earlier
    return x


# -- products -------------------------------------------------------------------------------------
@method()
@hands_over
def kron(input: Tensor, other: Tensor) -> Tensor:
    """The Kronecker product: ``out[i*m + j] = input[i] * other[j]`` in every dimension (the
    tensor with fewer dimensions gets leading size-1 ones).

    Example:
        >>> ember.kron(ember.tensor([[1, 2], [3, 4]]), ember.ones(2, dtype=ember.int64))
        tensor([[1, 1, 2, 2],
                [3, 3, 4, 4]])
    """
    check_tensors("kron", input=input, other=other)
    nd = max(input.ndim, other.ndim)
    sa = (1,) * (nd - input.ndim) + _shape(input)
    sb = (1,) * (nd - other.ndim) + _shape(other)
    a = reshape_view(input, tuple(v for s in sa for v in (s, 1)))
    b = reshape_view(other, tuple(v for s in sb for v in (1, s)))
    return reshape(mul(a, b), tuple(x * y for x, y in zip(sa, sb, strict=True)))


@hands_over
def cartesian_prod(*tensors: Tensor) -> Tensor:
    """The Cartesian product of 1-d tensors of one dtype: a ``(∏ sizes, k)`` tensor of every
    combination, first tensor slowest (``itertools.product``); one tensor comes back as is.

    Example:
        >>> ember.cartesian_prod(ember.tensor([1, 2]), ember.tensor([3, 4]))
        tensor([[1, 3],
                [1, 4],
                [2, 3],
                [2, 4]])
    """
    ts = _tensor_list(tensors, "cartesian_prod")
    if not ts:
        raise ArgumentError("cartesian_prod: expects a non-empty list of tensors")
    for i, t in enumerate(ts):
        if t.ndim != 1:
            raise ShapeError(f"cartesian_prod: expects 1-d tensors, but tensor {i} has shape "
                             f"{_shape(t)}")
    if len(ts) == 1:
        return ts[0]
    return reshape(stack(meshgrid(*ts, indexing="ij"), -1), (-1, len(ts)))


@hands_over
def combinations(input: Tensor, r: int = 2, with_replacement: bool = False) -> Tensor:
    """The length-``r`` combinations of the entries of a 1-d tensor, as rows of an
    ``(count, r)`` tensor in ``itertools.combinations`` order (``with_replacement``:
    ``itertools.combinations_with_replacement``); ``r = 0`` gives an empty ``(0,)`` tensor.

    Example:
        >>> ember.combinations(ember.tensor([1, 2, 3]))
        tensor([[1, 2],
                [1, 3],
                [2, 3]])
    """
    op = "combinations"
    check_tensors(op, input=input)
    if input.ndim != 1:
        raise ShapeError(f"{op}: expects a 1-d vector, but got shape {_shape(input)}")
    r = as_int(r, op, "r")
    if r < 0:
        raise ArgumentError(f"{op}: expects a non-negative r, but got {r}")
    if r == 0:
        return zeros((0,), dtype=input.dtype, device=input.device)
    n = input.shape[0]
    if r == 2:  # the common case, without a Python loop
        rows, cols = np.triu_indices(n, 0 if with_replacement else 1)
        idx = np.stack([rows, cols], 1)
    else:
        make = itertools.combinations_with_replacement if with_replacement else \
            itertools.combinations
        flat = np.fromiter(itertools.chain.from_iterable(make(range(n), r)), dtype=np.int64)
        idx = flat.reshape(-1, r)
    return apply(Index, input, _index_tensor(idx, input._device), dims=(0,))


@method()
@hands_over
@float32_under_autocast
def trace(input: Tensor) -> Tensor:
    """The sum of the main diagonal of a 2-d tensor (integers sum to int64).

    Example:
        >>> ember.arange(9).reshape(3, 3).trace()
        tensor(12)
    """
    check_tensors("trace", input=input)
    refuse_limited("trace", input.dtype, dtypes.ALL_LIMITED - dtypes.WIDE_UNSIGNED)
    if input.ndim != 2:
        raise ShapeError(f"trace: expected a matrix, but got a tensor with {input.ndim} "
                         f"dimension(s) (shape {_shape(input)})")
    if input.dtype is dtypes.bool_:
        raise DTypeError("trace: not implemented for bool tensors. Hint: convert with .long()")
    return _sum(diagonal(input))


def _cross(a: Tensor, b: Tensor, dim: int, op: str) -> Tensor:
    check_tensors(op, input=a, other=b)
    if a.ndim != b.ndim:
        raise ShapeError(f"{op}: inputs must have the same number of dimensions, got shapes "
                         f"{_shape(a)} and {_shape(b)}")
    if a.dtype is not b.dtype:
        raise DTypeError(f"{op}: expected both inputs to have the same dtype, got "
                         f"{a.dtype.name} and {b.dtype.name}. Hint: convert one with .to()")
    if a.dtype is dtypes.bool_:
        raise DTypeError(f"{op}: not implemented for bool tensors")
    if a.ndim == 0:
        raise ShapeError(f"{op}: inputs must have a dimension of length 3, got 0-d tensors")
    d = normalize_dim(dim, a.ndim, op)
    if a.shape[d] != 3 or b.shape[d] != 3:
        raise ShapeError(f"{op}: inputs dimension {dim} must have length 3. Got "
                         f"{a.shape[d]} and {b.shape[d]} (shapes {_shape(a)} and {_shape(b)})")
    broadcast_shapes(_shape(a), _shape(b), op=op)
    a0, a1, a2 = (apply(Slice, a, index=(FULL,) * d + (i,)) for i in range(3))
    b0, b1, b2 = (apply(Slice, b, index=(FULL,) * d + (i,)) for i in range(3))
    return stack([a1 * b2 - a2 * b1, a2 * b0 - a0 * b2, a0 * b1 - a1 * b0], d)


@method()
@hands_over
def cross(input: Tensor, other: Tensor, dim: int | None = None) -> Tensor:
    """The cross product of 3-vectors along ``dim`` (the other dims broadcast); without
    ``dim``, the first dimension of ``input`` of size 3, as ``torch.cross`` does.

    Example:
        >>> ember.cross(ember.tensor([1.0, 0.0, 0.0]), ember.tensor([0.0, 1.0, 0.0]))
        tensor([0., 0., 1.])
    """
    if dim is None:
        check_tensors("cross", input=input)
        dim = next((i for i, s in enumerate(input.shape) if s == 3), None)
        if dim is None:
            raise ShapeError(f"cross: no dimension of size 3 in input (shape "
                             f"{_shape(input)}). Hint: pass dim=")
    return _cross(input, other, dim, "cross")


def linalg_cross(input: Tensor, other: Tensor, *, dim: int = -1) -> Tensor:
    """``torch.linalg.cross``: the cross product along ``dim`` (default the last)."""
    return _cross(input, other, dim, "linalg.cross")


@hands_over
def vander(x: Tensor, N: int | None = None, increasing: bool = False) -> Tensor:  # noqa: N803
    """The Vandermonde matrix of a 1-d ``x``: columns ``x^(N-1), …, x^1, x^0`` (reversed when
    ``increasing``); ``N`` defaults to ``len(x)``. Integers and bools give int64.

    Example:
        >>> ember.vander(ember.tensor([1, 2, 3]))
        tensor([[1, 1, 1],
                [4, 2, 1],
                [9, 3, 1]])
    """
    op = "vander"
    check_tensors(op, x=x)
    if x.ndim != 1:
        raise ShapeError(f"{op}: x must be a one-dimensional tensor, got shape {_shape(x)}")
    n = x.shape[0]
    cols = n if N is None else as_int(N, op, "N")
    if cols < 0:
        raise ArgumentError(f"{op}: N must be non-negative, got {cols}")
    if x.dtype.category < dtypes.FLOAT:  # integers and bools; floats and complex stay
        x = cast(x, dtypes.int64)
    first = ones((n, 1 if cols else 0), dtype=x.dtype, device=x.device)
    if cols <= 1:
        return first
    powers = cumprod(expand(reshape_view(x, (n, 1)), (n, cols - 1)), 1)
    out = cat([first, powers], 1)
    return out if increasing else flip(out, 1)


# -- index builders -------------------------------------------------------------------------------
def _triangle_indices(op: str, lower: bool, row: Any, col: Any, offset: Any, dtype: Any,
                      device: Any, layout: Any) -> Tensor:
    check_strided(op, layout)
    row, col = as_int(row, op, "row"), as_int(col, op, "col")
    offset = as_int(offset, op, "offset")
    for name, v in (("row", row), ("col", col)):
        if v < 0:
            raise ArgumentError(f"{op}: {name} must be non-negative, got {v}")
    dt = dtypes.int64 if dtype is None else dtypes.to_dtype(dtype)
    if dt not in (dtypes.int64, dtypes.int32):
        raise DTypeError(f"{op}: dtype must be int64 or int32 (as in PyTorch), got {dt.name}")
    dev = to_device(device)
    pair = (np.tril_indices if lower else np.triu_indices)(row, offset, col)
    # (computed by NumPy, then put on the device: they depend on the sizes only)
    return _wrap(dev.xp.asarray(np.stack(pair), dtype=dt.np), dev)


def tril_indices(row: int, col: int, offset: int = 0, *, dtype: Any = None, device: Any = None,
                 layout: Any = None) -> Tensor:
    """The ``(2, count)`` row and column indices of the lower triangle of a ``row × col``
    matrix (on and below diagonal ``offset``), row by row; int64 unless ``dtype`` is
    int32. ``layout``: strided only, as PyTorch's.

    Example:
        >>> ember.tril_indices(3, 3)
        tensor([[0, 1, 1, 2, 2, 2],
                [0, 0, 1, 0, 1, 2]])
    """
    return _triangle_indices("tril_indices", True, row, col, offset, dtype, device, layout)


def triu_indices(row: int, col: int, offset: int = 0, *, dtype: Any = None, device: Any = None,
                 layout: Any = None) -> Tensor:
    """The ``(2, count)`` row and column indices of the upper triangle of a ``row × col``
    matrix (on and above diagonal ``offset``), row by row.

    Example:
        >>> ember.triu_indices(3, 3, 1)
        tensor([[0, 0, 1],
                [1, 2, 2]])
    """
    return _triangle_indices("triu_indices", False, row, col, offset, dtype, device, layout)


@hands_over
def meshgrid(*tensors: Tensor, indexing: str | None = None) -> tuple[Tensor, ...]:
    """Coordinate grids of 0-d or 1-d tensors of one dtype: output ``i`` holds ``tensors[i]``
    along its own dimension, broadcast (a view, no copy) over the others. ``indexing="ij"``
    (the default) keeps the inputs' order; ``"xy"`` swaps the first two dimensions
    (Cartesian, as in NumPy).

    Example:
        >>> xs, ys = ember.meshgrid(ember.tensor([1, 2]), ember.tensor([3, 4, 5]), indexing="ij")
        >>> xs.shape, ys[0].tolist()
        (ember.Size([2, 3]), [3, 4, 5])
    """
    op = "meshgrid"
    ts = _tensor_list(tensors, op)
    if not ts:
        raise ArgumentError(f"{op}: expects a non-empty list of tensors")
    if indexing is None:
        indexing = "ij"
    if indexing not in ("ij", "xy"):
        raise ArgumentError(f'{op}: indexing must be one of "xy" or "ij", but received: '
                            f"{indexing!r}")
    first = ts[0]
    for i, t in enumerate(ts):
        if t.ndim > 1:
            raise ShapeError(f"{op}: expects 0-d or 1-d tensors, but tensor {i} has shape "
                             f"{_shape(t)}")
        if t.dtype is not first.dtype:
            raise DTypeError(f"{op}: expects all tensors to have the same dtype, got "
                             f"{first.dtype.name} (tensor 0) and {t.dtype.name} (tensor {i})")
        if t._device is not first._device:
            raise DeviceError(f"{op}: expects all tensors on the same device, got "
                              f"{first.device} (tensor 0) and {t.device} (tensor {i})")
    k = len(ts)
    sizes = [t.shape[0] if t.ndim else 1 for t in ts]
    pos = list(range(k))
    if indexing == "xy" and k >= 2:
        pos[0], pos[1] = 1, 0
    shape = [0] * k
    for i, p in enumerate(pos):
        shape[p] = sizes[i]
    out = []
    for i, t in enumerate(ts):
        view_shape = [1] * k
        view_shape[pos[i]] = sizes[i]
        out.append(expand(reshape_view(t, tuple(view_shape)), tuple(shape)))
    return tuple(out)


# -- rearranging ----------------------------------------------------------------------------------
@method()
@hands_over
def rot90(input: Tensor, k: int = 1, dims: Sequence[int] = (0, 1)) -> Tensor:
    """``input`` rotated by ``k`` quarter turns in the plane of ``dims``, from the first
    dimension towards the second (a copy).

    Example:
        >>> ember.tensor([[1, 2], [3, 4]]).rot90()
        tensor([[2, 4],
                [1, 3]])
    """
    op = "rot90"
    check_tensors(op, input=input)
    dims = list(dims)
    if len(dims) != 2:
        raise ShapeError(f"{op}: expected total rotation dims == 2, but got dims = {len(dims)}")
    if input.ndim < 2:
        raise ShapeError(f"{op}: expected total dims >= 2, but got total dims = {input.ndim} "
                         f"(shape {_shape(input)})")
    raw = [as_int(d, op, "dims") for d in dims]
    d0, d1 = (normalize_dim(d, input.ndim, op) for d in raw)
    if d0 == d1:
        raise ShapeError(f"{op}: expected rotation dims to be different, but got dim0 = "
                         f"{raw[0]} and dim1 = {raw[1]}")
    k = as_int(k, op, "k") % 4
    if k == 1:
        return transpose(flip(input, d1), d0, d1)
    if k == 2:
        return flip(input, (d0, d1))
    if k == 3:
        return transpose(flip(input, d0), d0, d1)
    return clone(input)


@hands_over
def block_diag(*tensors: Tensor) -> Tensor:
    """The block-diagonal matrix with ``tensors`` (each at most 2-d: a 0-d one is ``(1, 1)``,
    a 1-d one a row) down its diagonal and zeros elsewhere; dtypes promote.

    Example:
        >>> ember.block_diag(ember.tensor([[1, 2]]), ember.tensor(3))
        tensor([[1, 2, 0],
                [0, 0, 3]])
    """
    op = "block_diag"
    ts = _tensor_list(tensors, op)
    if not ts:
        return zeros((1, 0))
    mats = []
    for i, t in enumerate(ts):
        if t.ndim > 2:
            raise ShapeError(f"{op}: input tensors must have 2 or fewer dimensions; input {i} "
                             f"has shape {_shape(t)}")
        mats.append(reshape_view(t, (1, 1) if t.ndim == 0 else (1, t.shape[0]) if t.ndim == 1
                                 else _shape(t)))
    dtype = functools.reduce(dtypes.promote_types, (t.dtype for t in mats))
    dev = mats[0].device
    total = sum(m.shape[1] for m in mats)
    rows, left = [], 0
    for m in mats:
        r, c = m.shape
        parts = [cast(m, dtype)]
        if left:
            parts.insert(0, zeros((r, left), dtype=dtype, device=dev))
        if total - left - c:
            parts.append(zeros((r, total - left - c), dtype=dtype, device=dev))
        rows.append(cat(parts, 1) if len(parts) > 1 else parts[0])
        left += c
    return cat(rows, 0) if len(rows) > 1 else clone(rows[0])
