"""Memory layouts and formats, as PyTorch names them: ``ember.layout`` (``ember.strided`` for
dense tensors; ``sparse_coo``, ``sparse_csr``, ``sparse_csc``, ``sparse_bsr`` and
``sparse_bsc`` for the sparse tensors of :mod:`ember.sparse`, see docs/sparse.md;
``ember.jagged`` for :mod:`ember.nested`'s nested tensors) and ``ember.memory_format``
(``contiguous_format``, ``channels_last``, ``channels_last_3d``, ``preserve_format``).

A memory format names an order of a tensor's dimensions in memory: ``channels_last`` stores
an (N, C, H, W) tensor as N, H, W, C, so the channels of one pixel are adjacent. Ember's
arrays carry strides, so a tensor in that format is a NumPy array with those strides; NumPy's
elementwise ops keep the layout of their operands, as PyTorch's do.
"""

from __future__ import annotations

from functools import lru_cache
from typing import Any

from ember.errors import ShapeError


class layout:  # noqa: N801 - PyTorch's name
    """The kind of memory a tensor has: ``ember.strided`` (dense), a sparse layout, or
    ``ember.jagged`` for nested tensors (packed values and offsets, :mod:`ember.nested`).

    Example:
        >>> ember.zeros(2).layout, ember.zeros(2).to_sparse().layout
        (ember.strided, ember.sparse_coo)
        >>> ember.nested.nested_tensor([ember.zeros(1), ember.zeros(2)]).layout
        ember.jagged
    """

    __slots__ = ("name",)

    def __init__(self, name: str) -> None:
        self.name = name

    def __repr__(self) -> str:
        return f"ember.{self.name}"

    def __reduce__(self) -> str:
        return self.name


class memory_format:  # noqa: N801 - PyTorch's name
    """An order of dimensions in memory; ``dims`` is the order from outermost to innermost
    (None for ``preserve_format``: keep the input's).

    Example:
        >>> x = ember.zeros(1, 3, 2, 2).contiguous(memory_format=ember.channels_last)
        >>> x.stride(), x.is_contiguous(memory_format=ember.channels_last)
        ((12, 1, 6, 3), True)
    """

    __slots__ = ("name", "rank", "dims")

    def __init__(self, name: str, rank: int | None, dims: tuple[int, ...] | None) -> None:
        self.name, self.rank, self.dims = name, rank, dims

    def __repr__(self) -> str:
        return f"ember.{self.name}"

    def __reduce__(self) -> str:
        return self.name


strided = layout("strided")
jagged = layout("jagged")
sparse_coo = layout("sparse_coo")
sparse_csr = layout("sparse_csr")
sparse_csc = layout("sparse_csc")
sparse_bsr = layout("sparse_bsr")
sparse_bsc = layout("sparse_bsc")
contiguous_format = memory_format("contiguous_format", None, None)
channels_last = memory_format("channels_last", 4, (0, 2, 3, 1))
channels_last_3d = memory_format("channels_last_3d", 5, (0, 2, 3, 4, 1))
preserve_format = memory_format("preserve_format", None, None)


def check_format(op: str, fmt: object) -> memory_format:
    """``fmt`` if it is a memory format, else a clear error naming ``op``."""
    if not isinstance(fmt, memory_format):
        raise TypeError(f"{op}: memory_format must be an ember.memory_format (ember."
                        f"contiguous_format, channels_last, channels_last_3d or "
                        f"preserve_format), got {fmt!r}")
    return fmt


def dense_in_order(shape: tuple[int, ...], strides: tuple[int, ...],
                   dims: tuple[int, ...]) -> bool:
    """Whether element strides ``strides`` lay ``shape`` out densely with ``dims`` from
    outermost to innermost (dimensions of size 1 may have any stride, as in PyTorch)."""
    expected = 1
    for d in reversed(dims):
        if shape[d] != 1:
            if strides[d] != expected:
                return False
            expected *= shape[d]
    return True


def array_dense_in(a: Any, dims: tuple[int, ...] | list[int]) -> bool:
    """Whether array ``a``'s dimensions ``dims``, outermost first, lay its elements out densely
    (:func:`dense_in_order` of its strides in elements)."""
    return dense_in_order(a.shape, tuple(s // a.itemsize for s in a.strides), dims)


def format_of(x: Any) -> memory_format:
    """The format ``preserve_format`` keeps for tensor ``x``, as PyTorch's: the order of its
    dimensions in memory (``contiguous_format`` for C order, ``channels_last`` for its
    order, else an unnamed format of ``x``'s own order, e.g. a transpose's), so that a copy
    laid out in it is dense with ``x``'s strides when ``x`` is dense."""
    return array_format(x._data)


def array_format(a: Any) -> memory_format:
    """:func:`format_of` for a backend array ``a``."""
    if a.flags.c_contiguous:
        return contiguous_format
    dims = stride_order(a.shape, tuple(abs(s) // a.itemsize for s in a.strides))
    if dims == tuple(range(a.ndim)):
        return contiguous_format
    for fmt in (channels_last, channels_last_3d):
        if fmt.dims == dims:
            return fmt
    return memory_format("preserve_format", a.ndim, dims)


def suggested_format(a: Any) -> memory_format:
    """PyTorch's ``suggest_memory_format`` of array ``a``: ``channels_last(_3d)`` when its
    strides order it so (:func:`channels_last_strides`), else ``contiguous_format``."""
    fmt = channels_last if a.ndim == 4 else channels_last_3d if a.ndim == 5 else None
    if fmt is None or not channels_last_strides(a, fmt.dims):
        return contiguous_format
    return fmt


def channels_last_strides(a: Any, dims: tuple[int, ...]) -> bool:
    """PyTorch's ``is_channels_last_strides_2d/3d`` for array ``a`` and the order ``dims``
    (outermost first, channels innermost): strides that never shrink from the inside out,
    each at least the span of the dimension inside it; ambiguous size-1 dimensions and a
    broadcast batch or channel dimension count as C order, as in PyTorch."""
    strides = [s // a.itemsize for s in a.strides]
    if strides[1] == 0:
        return False
    low = 0
    for d in reversed(dims):
        if strides[d] < low or (d == 0 and low == strides[1]):
            return False
        low = strides[d] * a.shape[d] if a.shape[d] > 1 else strides[d]
    return True


def is_dense(a: Any) -> bool:
    """Whether array ``a`` is C-contiguous, or fills its memory densely in another order of
    dimensions (a transpose's, a channels-last one) with no overlap."""
    if a.flags.c_contiguous:
        return True
    strides = [abs(s) // a.itemsize for s in a.strides]
    return dense_in_order(a.shape, strides, sorted(range(a.ndim), key=strides.__getitem__,
                                                   reverse=True))


def dense_strides(shape: tuple[int, ...], order: Any, step: int = 1) -> tuple[int, ...]:
    """The strides of a dense tensor of ``shape`` whose dims run ``order`` (outermost first),
    the innermost ``step`` apart (1 for element strides, the item size for bytes); a dim of
    size 0 counts as 1, as PyTorch's ``empty_strided``."""
    strides = [0] * len(shape)
    for d in reversed(order):
        strides[d] = step
        step *= max(shape[d], 1)
    return tuple(strides)


def broadcast_strides(shape: tuple[int, ...], strides: tuple[int, ...],
                      to: tuple[int, ...]) -> tuple[int, ...]:
    """The strides of a tensor of ``shape`` (``strides``) broadcast to ``to``: 0 along the
    dims it is broadcast over."""
    lead = len(to) - len(shape)
    return (0,) * lead + tuple(0 if n == 1 and m != 1 else s
                               for n, m, s in zip(shape, to[lead:], strides))


def stride_order(shape: tuple[int, ...], *strides: tuple[int, ...]) -> tuple[int, ...]:
    """The dimensions from outermost to innermost by stride, as PyTorch orders them for
    ``preserve_format`` and for elementwise results: an insertion sort from the last dimension
    in which a dimension moves out past one of smaller stride (or of equal stride and smaller
    size); a stride of 0 (an expanded dimension) is no reason to move. With the strides of
    several operands, the first that tells two dimensions apart decides."""
    def outer(d0: int, d1: int) -> int:  # 1: d0 lies outside d1, -1: inside, 0: either
        for st in strides:
            s0, s1 = st[d0], st[d1]
            if s0 == 0 or s1 == 0:
                continue
            if s0 != s1:
                return 1 if s0 > s1 else -1
            if shape[d0] > shape[d1]:
                return 1
        return 0

    perm = list(range(len(shape) - 1, -1, -1))  # innermost first
    for i in range(1, len(perm)):
        moving = i
        for j in range(i - 1, -1, -1):
            order = outer(perm[j], perm[moving])
            if order > 0:
                perm[j], perm[moving] = perm[moving], perm[j]
                moving = j
            elif order < 0:
                break
    return tuple(reversed(perm))


def in_operands_layout(xp: Any, out: Any, *operands: Any) -> Any:
    """``out``, an elementwise result of backend arrays ``operands`` (in the op's order) that
    NumPy laid out, laid out as PyTorch lays such a result out: dense, its dimensions ordered
    by :func:`stride_order` of the operands' broadcast strides, so that where operands
    disagree the first one that tells two dimensions apart decides (NumPy keeps C order
    there: ``cl + c`` is C in NumPy, channels-last in PyTorch). ``out`` itself when it is
    laid out so already (its strides along dimensions of size 1 are not compared); else a
    copy. Callers ask only when the first operand is not C-contiguous: NumPy's layout is
    PyTorch's otherwise (a C-ordered first operand decides for C wherever it decides).

    Example:
        >>> import numpy as np
        >>> a_cl = np.zeros((2, 3, 3, 4)).transpose(0, 3, 1, 2)  # (N, C, H, W), channels-last
        >>> b = np.ones((2, 4, 3, 3))
        >>> in_operands_layout(np, np.add(a_cl, b), a_cl, b).strides  # as a_cl's
        (288, 8, 96, 32)
    """
    dims = operands_order(out, *operands)
    if dims is None:
        return out
    laid = xp.empty([out.shape[d] for d in dims], out.dtype).transpose(
        sorted(range(out.ndim), key=dims.__getitem__))
    xp.copyto(laid, out)
    return laid


def operands_order(out: Any, *operands: Any) -> tuple[int, ...] | None:
    """PyTorch's order of dimensions (outermost first) for ``out``, an elementwise result of
    arrays ``operands`` (:func:`in_operands_layout`), or None when ``out`` is laid out so
    (strides along dimensions of size 1 aside)."""
    first = operands[0]
    if first.strides == out.strides and first.shape == out.shape and \
            first.itemsize == out.itemsize:  # (a dense first operand's layout, kept)
        return None
    found = _operands_order(out.shape, out.itemsize, tuple(
        (o.shape, o.strides, o.itemsize) for o in operands if getattr(o, "ndim", 0)))
    if found is None or all(n == 1 or s == t for n, s, t in zip(out.shape, out.strides,
                                                                   found[1])):
        return None
    return found[0]


@lru_cache(maxsize=512)
def _operands_order(shape: tuple[int, ...], itemsize: int, operands: tuple) -> tuple | None:
    """PyTorch's order of dimensions (outermost first) of a dense elementwise result of
    ``shape`` for operands given as (shape, byte strides, itemsize), the byte strides it
    gives the result; None for a result without elements."""
    if not all(shape):
        return None
    element = [broadcast_strides(sh, tuple(s // size for s in st), shape)
               for sh, st, size in operands]
    dims = stride_order(shape, *element)
    return dims, dense_strides(shape, dims, itemsize)


def order_of(op: str, fmt: memory_format, shape: tuple[int, ...]) -> tuple[tuple[int, ...],
                                                                           tuple[int, ...]]:
    """``fmt``'s order of dimensions for a tensor of ``shape`` (outermost first) and its
    inverse permutation; a ShapeError naming ``op`` when ``shape`` has the wrong rank."""
    if len(shape) != fmt.rank:
        raise ShapeError(f"{op}: memory format {fmt.name} needs a {fmt.rank}-d tensor, got "
                         f"shape {tuple(shape)}")
    return fmt.dims, tuple(sorted(range(fmt.rank), key=fmt.dims.__getitem__))


def strides_key(array: Any) -> tuple[int, ...] | None:
    """A dense array's layout as a key: None when row-major (NumPy's flag ignores the strides
    of size-1 dimensions), else its byte strides as they are (with the dtype and shape beside
    them they fix the layout, and what ``x.stride()`` reads: two arrays that differ only in a
    size-1 dimension's stride get two keys). Compiled functions key their arguments and the
    tensors they reach by it, and ``Tensor.data =`` compares by it: a graph traced on one
    layout may not serve another (``reshape`` views a row-major tensor, copies a transposed one).

    Example:
        >>> x = ember.ones(3, 2).t()[:, None]
        >>> strides_key(x.contiguous().numpy()), strides_key(x.numpy())
        (None, (4, 24, 8))
    """
    flags = getattr(array, "flags", None)
    return None if flags is None or flags.c_contiguous else array.strides
