"""Indexing along one dimension: gather/scatter (and scatter_add), index_select, index_add,
index_fill, index_copy, take, take_along_dim and one_hot; and ``class_index``, the class
targets of losses and one_hot, checked where the op runs (so compiled code checks too).

All are the ``index`` and ``index_put`` primitives of ``indexing.py``: along ``dim`` the user's
index tensor, and on every other dimension an ``arange`` column broadcasting against it, so
gradients (scatter-add of the output gradient, gather of it) come from those two rules.
Indices are bounds-checked up front: NumPy would wrap negative ones silently.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ember import dtypes
from ember.errors import (
    ArgumentError,
    DTypeError,
    EmberError,
    IndexOutOfRange,
    IndexShapeError,
    OpError,
    ShapeError,
    dtype_name,
)
from ember.ops.arithmetic import _scaled
from ember.ops.broadcast import broadcast_shapes, expand
from ember.ops.convert import autocast_mix, clone, promote
from ember.ops.creation import scalar_tensor, zeros
from ember.ops.fits import check_fits
from ember.ops.index_checks import (
    check_index_range,
    check_integer,
    first_out_of_range,
)
from ember.ops.indexing import FULL, Index, IndexPut, Slice, as_values
from ember.ops.inplace import bind_inplace
from ember.ops.int_args import as_int
from ember.ops.primitive import (
    DISPATCH,
    Primitive,
    TensorSpec,
    apply,
    primitive,
    refuse_limited,
    spec,
)
from ember.ops.reduce import normalize_dim
from ember.ops.select import where
from ember.ops.shape import Reshape, reshape
from ember.tensor import Tensor, _wrap, method

__all__ = ["gather", "scatter", "scatter_add", "index_select", "index_add", "index_fill",
           "index_copy", "take", "take_along_dim", "one_hot"]


def _grid(shape: tuple, dim: int, index: Tensor) -> tuple:
    """Index tensors selecting ``index`` along ``dim`` and every position elsewhere: ``arange``
    columns broadcasting to ``shape``."""
    xp, dev = index._device.xp, index._device
    out = []
    for d, n in enumerate(shape):
        if d == dim:
            out.append(index)
        else:
            view = [1] * len(shape)
            view[d] = n
            out.append(_wrap(xp.arange(n).reshape(view), dev))
    return tuple(out)


def _check_gather(op: str, input: Tensor, dim: int, index: Tensor, src: Tensor | None = None
                  ) -> tuple[int, Tensor]:
    check_integer(index, op)
    shape, ishape = input._data.shape, index._data.shape  # (tuples: cheaper than Size)
    if index._data.size == 0:  # nothing is read or written: PyTorch checks no sizes then
        return normalize_dim(dim, len(shape), op), index
    for name, t in (("input", input), ("src", src)):  # (a 0-d tensor counts as 1-d)
        if t is not None and max(t._data.ndim, 1) != max(len(ishape), 1):
            raise ShapeError(f"{op}: index {ishape} must have the same number of dimensions "
                             f"as {name} {t._data.shape}")
    dim = normalize_dim(dim, len(shape), op)
    src_shape = None if src is None else (src._data.shape or (1,))
    for d, s in enumerate(ishape):
        if d != dim and shape and s > shape[d]:
            raise ShapeError(f"{op}: index {ishape} is larger than input {shape} at dimension "
                             f"{d}; outside dimension {dim} the index may not exceed the input")
        if src_shape is not None and s > src_shape[d]:
            raise ShapeError(f"{op}: index {ishape} is larger than src {src._data.shape} at "
                             f"dimension {d}")
    return dim, check_index_range(index, shape[dim] if shape else 1, dim, op, negative=False)


def _as_1d(x: Tensor) -> Tensor:
    return apply(Slice, x, index=(None,)) if x.ndim == 0 else x


@method()
def gather(input: Tensor, dim: int, index: Tensor, *, sparse_grad: bool = False) -> Tensor:
    """``out[i][j] = input[index[i][j]][j]`` for ``dim=0`` (and alike for other dims); the
    output has ``index``'s shape. Indices must lie in ``[0, input.size(dim))``.

    Example:
        >>> ember.tensor([[1, 2], [3, 4]]).gather(1, ember.tensor([[1], [0]]))
        tensor([[2],
                [3]])
    """
    refuse_limited("gather", input.dtype)
    return take_along(input, dim, index)


def take_along(input: Tensor, dim: int, index: Tensor, wide: bool = True) -> Tensor:
    """:func:`gather` for all dtypes: the values of ``sort`` and ``topk`` at their indices
    (PyTorch sorts uint16, uint32 and uint64 tensors, but gathers none). With ``wide``
    (gather's) a half float's gradient sums in float32, rounded once; without, step by step
    in the half type (max pooling's with indices, as torch's)."""
    dim, index = _check_gather("gather", input, dim, index)
    a, i = input._data, index._data
    if i.size == 0:
        flat = apply(Reshape, input, shape=(a.size,))
        return reshape(apply(Index, flat, reshape(index, (0,)), dims=(0,)), i.shape)
    if a.ndim == 0 or i.ndim == 0:
        out = take_along(_as_1d(input), 0, _as_1d(index), wide)
        return apply(Slice, out, index=(0,)) if i.ndim == 0 else out
    # one flat take: about twice as fast as the grid; it reads the index's values, which a
    # transform (vmap, tracing) must see as ops, so it is for eager execution only
    if DISPATCH.handler is None and a.flags.c_contiguous:
        flat = apply(Reshape, input, shape=(a.size,))
        return apply(Index, flat, _flat_positions(a.shape, dim, index), dims=(0,), wide=wide)
    return apply(Index, input, *_grid(index.shape, dim, index), dims=tuple(range(input.ndim)),
                 wide=wide)


def _flat_positions(shape: tuple, dim: int, index: Tensor) -> Tensor:
    """The positions in C order of ``shape`` that :func:`gather` reads: the index times the
    stride of ``dim``, plus each other dim's offsets, added in place."""
    xp = index._device.xp
    ishape = index._data.shape
    strides = [1] * len(shape)
    for d in range(len(shape) - 1, 0, -1):
        strides[d - 1] = strides[d] * shape[d]
    pos = index._data * strides[dim]  # (a new array, so the sums below go in place)
    if pos.dtype != np.int64:
        pos = pos.astype(np.int64)
    for d, n in enumerate(ishape):
        if d != dim and n > 1:
            step = strides[d]
            pos += xp.arange(0, n * step, step).reshape((n,) + (1,) * (len(ishape) - d - 1))
    return _wrap(pos, index._device)


def _scatter(op: str, input: Tensor, dim: int, index: Tensor, src: Any, mode: str,
             wide: bool = True) -> Tensor:
    """``scatter`` by ``mode``; "add" sums a half float in float32 unless not ``wide``."""
    refuse_limited(op, input.dtype)
    src_t = src if isinstance(src, Tensor) else None
    dim, index = _check_gather(op, input, dim, index, src_t)
    if index.numel() == 0 and index.ndim != input.ndim:  # (no grid to write through)
        return clone(input)
    if src_t is not None and src_t.dtype is not input.dtype:
        raise DTypeError(f"{op}: src ({src_t.dtype.name}) must have the dtype of input "
                         f"({input.dtype.name}); convert it with .to()")
    if input.ndim == 0 or index.ndim == 0 or (src_t is not None and src_t.ndim == 0):
        out = _scatter(op, _as_1d(input), 0, _as_1d(index),
                       _as_1d(src) if src_t is not None else src, mode, wide)
        return apply(Slice, out, index=(0,)) if input.ndim == 0 else out
    if src_t is None:
        src = as_values(src, input, op)
    elif src_t.shape != index.shape:  # only the part of src that index covers is used
        src = apply(Slice, src_t, index=tuple((0, s, 1) for s in index.shape))
    return apply(IndexPut, input, src, *_grid(index.shape, dim, index), basic=(),
                 dims=tuple(range(input.ndim)), mode=mode, wide=wide)


_REDUCE_MODES = {None: "set", "add": "add", "multiply": "multiply"}


@method()
def scatter(input: Tensor, dim: int, index: Tensor, src: Any = None, *, value: Any = None,
            reduce: str | None = None) -> Tensor:
    """The inverse of :func:`gather`: a copy of ``input`` with ``out[index[i][j]][j] =
    src[i][j]`` (``dim=0``). ``src`` is a tensor or a number (or give ``value=``);
    ``reduce="add"`` or ``"multiply"`` combines with what is there instead of assigning.

    Example:
        >>> ember.zeros(2, 3).scatter(1, ember.tensor([[2], [0]]), 1.0)
        tensor([[0., 0., 1.],
                [1., 0., 0.]])
    """
    if (src is None) == (value is None):
        raise TypeError("scatter: give src (a tensor or a number) or value=, one of them")
    if src is None:
        src = value
    if reduce not in _REDUCE_MODES:
        raise ArgumentError(f"scatter: reduce must be None, 'add' or 'multiply', got {reduce!r}")
    return _scatter("scatter", input, dim, index, src, _REDUCE_MODES[reduce])


@method()
def scatter_add(input: Tensor, dim: int, index: Tensor, src: Tensor) -> Tensor:
    """:func:`scatter` that adds: ``out[index[i][j]][j] += src[i][j]`` (``dim=0``), summing
    repeated indices; the gradient of :func:`gather`.

    Example:
        >>> ember.zeros(3).scatter_add(0, ember.tensor([0, 0, 2]), ember.ones(3))
        tensor([2., 0., 1.])
    """
    return _scatter("scatter_add", input, dim, index, src, "add")


def _vector_index(op: str, input: Tensor, dim: int, index: Tensor, negative: bool = False
                  ) -> tuple[int, Tensor]:
    """Checks an ``index_*`` op's 1-D index (``negative``: entries may count from the end);
    returns the dim and the index as 1-D."""
    check_integer(index, op)
    if index.ndim > 1:  # (an IndexError in PyTorch)
        raise IndexShapeError(f"{op}: index must be a vector (0-d or 1-d), got shape "
                              f"{tuple(index.shape)}")
    dim = normalize_dim(dim, input.ndim, op)
    size = input.shape[dim] if input.ndim else 1
    return dim, _as_1d(check_index_range(index, size, dim, op, negative))


def wide_along(ndim: int, dim: int) -> bool:
    """Whether torch's index_add (and the gradient of index_select) sums a half float along
    ``dim`` of an ``ndim``-d tensor in float32, rounded once (its scatter_add path: the first
    or last of several dims) rather than step by step in the half type."""
    return ndim > 1 and dim in (0, ndim - 1)


@method()
def index_select(input: Tensor, dim: int, index: Tensor) -> Tensor:
    """The entries of ``input`` at positions ``index`` (a vector) along ``dim``.

    Example:
        >>> ember.tensor([[1, 2, 3], [4, 5, 6]]).index_select(1, ember.tensor([2, 0]))
        tensor([[3, 1],
                [6, 4]])
    """
    dim, index = _vector_index("index_select", input, dim, index)
    if input.ndim == 0 and index.shape[0] != 1:  # (one value out of a scalar, as torch)
        raise IndexShapeError(f"index_select: indexing a 0-d tensor takes exactly one index, "
                              f"got {index.shape[0]}. Hint: reshape(1) the input first")
    out = apply(Index, _as_1d(input), index, dims=(dim,), wide=wide_along(input.ndim, dim))
    return apply(Slice, out, index=(0,)) if input.ndim == 0 else out


def _index_write(op: str, input: Tensor, dim: int, index: Tensor, source: Any,
                 mode: str, wide: bool = False) -> Tensor:
    """``index_copy``/``index_fill``/``index_add`` by ``mode``; ``wide``: the sums of a half
    float may run in float32 (where :func:`wide_along` has torch's do so)."""
    refuse_limited(op, input.dtype)
    dim, index = _vector_index(op, input, dim, index, negative=mode == "fill")  # (as torch)
    if mode == "set" and autocast_mix(input.dtype, source.dtype):  # (PyTorch's promote list)
        input, source = promote(input, source)
    if mode != "fill" and input.ndim:
        if source.dtype is not input.dtype:
            raise DTypeError(f"{op}: source ({source.dtype.name}) must have the dtype of input "
                             f"({input.dtype.name}); convert it with .to()")
        want = list(input.shape)
        if want:
            want[dim] = index.shape[0]
        if tuple(source.shape) != tuple(want):
            raise ShapeError(f"{op}: source of shape {tuple(source.shape)} does not fit: "
                             f"expected {tuple(want)} (input {tuple(input.shape)} with "
                             f"dimension {dim} of the index's length {index.shape[0]})")
    if mode == "fill":
        check_fits(op, source, input.dtype)
        if isinstance(source, Tensor) and source.requires_grad:  # (a repeated index counts
            # once in value's gradient, as torch's: a mask, not IndexPut's sum over index)
            blank = zeros(input.shape, dtype=dtypes.bool, device=input.device)
            mask = _index_write(op, blank, dim, index, True, mode)
            return where(mask, source.to(input.dtype), input)
    out = apply(IndexPut, _as_1d(input), as_values(source, input, op), index, basic=(),
                dims=(dim,), mode="set" if mode == "fill" else mode,
                wide=wide and wide_along(input.ndim, dim))
    return apply(Slice, out, index=(0,)) if input.ndim == 0 else out


@method()
def index_add(input: Tensor, dim: int, index: Tensor, source: Tensor, *,
              alpha: float = 1) -> Tensor:
    """A copy of ``input`` with ``alpha * source`` added at positions ``index`` along ``dim``
    (repeated indices accumulate).

    Example:
        >>> ember.zeros(3).index_add(0, ember.tensor([0, 0, 2]), ember.ones(3))
        tensor([2., 0., 1.])
    """
    if alpha != 1:  # (torch's sums a half float step by step then, along any dim)
        source = _scaled("index_add", "alpha", source, alpha, input, source)
    return _index_write("index_add", input, dim, index, source, "add", wide=alpha == 1)


@method()
def index_fill(input: Tensor, dim: int, index: Tensor, value: Any) -> Tensor:
    """A copy of ``input`` with ``value`` (a number or 0-d tensor) at positions ``index``
    along ``dim``.

    Example:
        >>> ember.zeros(2, 3).index_fill(1, ember.tensor([0, 2]), 7.0)
        tensor([[7., 0., 7.],
                [7., 0., 7.]])
    """
    if isinstance(value, Tensor) and value.ndim:
        raise ShapeError(f"index_fill: value must be a number or a 0-d tensor, got shape "
                         f"{tuple(value.shape)}")
    return _index_write("index_fill", input, dim, index, value, "fill")


@method()
def index_copy(input: Tensor, dim: int, index: Tensor, source: Tensor) -> Tensor:
    """A copy of ``input`` with the slices of ``source`` written at positions ``index``
    along ``dim``.

    Example:
        >>> ember.zeros(3).index_copy(0, ember.tensor([2, 0]), ember.tensor([1.0, 2.0]))
        tensor([2., 0., 1.])
    """
    return _index_write("index_copy", input, dim, index, source, "set")


# -- flat and data-dependent ---------------------------------------------------------------------
@method()
def take(input: Tensor, index: Tensor) -> Tensor:
    """The entries of ``input`` read as 1-D at ``index`` (negative entries count from the end);
    the output has ``index``'s shape.

    Example:
        >>> ember.tensor([[1, 2], [3, 4]]).take(ember.tensor([0, -1]))
        tensor([1, 4])
    """
    refuse_limited("take", input.dtype)
    check_integer(index, "take")
    index = check_index_range(index, input.numel(), 0, "take", negative=True)
    return apply(Index, reshape(input, (-1,)), index, dims=(0,))


@method()
def take_along_dim(input: Tensor, indices: Tensor, dim: int | None = None) -> Tensor:
    """:func:`gather` with broadcasting of ``input`` and ``indices`` outside ``dim``;
    ``dim=None`` reads both as 1-D.

    Example:
        >>> x = ember.tensor([[10, 30, 20]])
        >>> x.take_along_dim(x.argsort(dim=1), dim=1)
        tensor([[10, 20, 30]])
    """
    if dim is None:
        return gather(reshape(input, (-1,)), 0, reshape(indices, (-1,)))
    dim = normalize_dim(dim, input.ndim, "take_along_dim")
    if input.ndim != indices.ndim:
        raise ShapeError(f"take_along_dim: input {tuple(input.shape)} and indices "
                         f"{tuple(indices.shape)} must have the same number of dimensions")
    a, b = list(input.shape), list(indices.shape)
    a[dim] = b[dim] = 1
    common = list(broadcast_shapes(tuple(a), tuple(b), op="take_along_dim"))
    x_shape, i_shape = list(common), list(common)
    x_shape[dim], i_shape[dim] = input.shape[dim], indices.shape[dim]
    return gather(expand(input, tuple(x_shape)), dim, expand(indices, tuple(i_shape)))


@primitive
class ClassIndex(Primitive):
    """Class indices as int64, checked against ``[0, classes)`` where the op runs (eagerly
    and in compiled code alike: NumPy would wrap a negative index silently), with entries
    equal to ``ignore_index`` (None: none) replaced by 0, so that they can be gathered at."""

    name = "class_index"
    differentiable = False
    allocates = True

    def forward(self, xp, target, *, op, what, classes, ignore_index):
        out = target if ignore_index is None else xp.where(target == ignore_index, 0, target)
        out = out.astype(np.int64, copy=ignore_index is None)
        bad = first_out_of_range(out, classes)
        if bad is not None:
            raise class_out_of_range(op, what, bad, classes, ignore_index)
        return out

    def infer(self, target, *, op, what, classes, ignore_index):
        if target.dtype.category != dtypes.INT:
            raise DTypeError(f"{op}: class indices must be integers, got {target.dtype.name}")
        return TensorSpec(target.shape, dtypes.int64)


def class_out_of_range(op: str, what: str, bad: int, classes: int,
                       ignore_index: int | None) -> IndexOutOfRange:
    """The error for a class index ``bad`` outside ``[0, classes)``."""
    skip = "" if ignore_index is None else f" or ignore_index={ignore_index}"
    return IndexOutOfRange(
        f"{op}: {what} {bad} is out of range for {classes} classes; expected values in "
        f"[0, {classes - 1}]{skip}. Hint: class indices count from 0 (shift 1-based "
        f"labels down by one){skip and '; targets to skip must equal ignore_index'}")


def class_indices(target: Tensor, classes: int, op: str, what: str = "target class",
                  ignore_index: int | None = None) -> Tensor:
    """``target`` as int64 class indices, each checked to lie in ``[0, classes)`` unless it
    equals ``ignore_index`` (then it reads 0)."""
    return apply(ClassIndex, target, op=op, what=what, classes=classes,
                 ignore_index=ignore_index)


def _class_count(tensor: Tensor) -> int:
    """``tensor.max() + 1``: a size read from the data, which a transform may not give."""
    top = tensor.max()
    try:
        return int(top.item()) + 1
    except EmberError as err:  # jit tracing or vmap: Python cannot see the value of this call
        where = getattr(err, "where", "")  # the user's line, where the jit names it
        raise OpError(f"one_hot: the output size depends on the data of {spec(tensor)} "
                      "(num_classes=-1 takes its max + 1), so it has no shape rule in a "
                      f"compiled or vmapped function{'; the call' + where if where else ''}. "
                      "Hint: pass num_classes, e.g. F.one_hot(y, num_classes=10)") from None


def one_hot(input: Tensor, num_classes: int = -1) -> Tensor:
    """int64 one-hot codes: ``out[..., c] = 1`` where ``input == c``; ``num_classes=-1``
    takes ``input.max() + 1`` (which a compiled function cannot: pass ``num_classes``).

    Example:
        >>> ember.one_hot(ember.tensor([0, 2]), 3)
        tensor([[1, 0, 0],
                [0, 0, 1]])
    """
    if input.dtype is not dtypes.int64:
        raise DTypeError(f"one_hot: only applicable to index tensors of dtype int64, got "
                         f"{dtype_name('one_hot', 'input', input)}")
    num_classes = as_int(num_classes, "one_hot", "num_classes")
    if input.numel() == 0 and num_classes <= 0:  # (PyTorch's rule: 0 too)
        raise ShapeError(f"one_hot: cannot infer the number of classes from an empty "
                         f"tensor (num_classes={num_classes}); pass num_classes > 0")
    if num_classes < -1:
        raise ArgumentError(f"one_hot: num_classes must be -1 (one more than the largest "
                            f"class value) or a count of classes, got {num_classes}")
    if num_classes == 0:  # (a non-empty input: no class can hold its values)
        raise IndexOutOfRange("one_hot: num_classes=0 leaves no class for the values of a "
                              f"non-empty input of shape {tuple(input.shape)}; class values must "
                              "be smaller than num_classes. Hint: pass the number of classes, "
                              "or -1 to take input.max() + 1")
    if num_classes == -1:
        num_classes = _class_count(input)
        if num_classes <= 0:  # (else "out of range for 0 classes, expected [0, -1]")
            raise IndexOutOfRange(f"one_hot: class values must be non-negative, got a "
                                  f"largest value of {num_classes - 1}")
    checked = class_indices(input, num_classes, "one_hot", what="class value")
    shape = tuple(input.shape) + (num_classes,)
    out = zeros(shape, dtype=dtypes.int64, device=input.device)
    index = apply(Slice, checked, index=(FULL,) * input.ndim + (None,))
    return apply(IndexPut, out, scalar_tensor(1, dtypes.int64, input.device),
                 *_grid(index.shape, input.ndim, index), basic=(),
                 dims=tuple(range(len(shape))), mode="set")


bind_inplace(scatter_=scatter, scatter_add_=scatter_add, index_add_=index_add,
             index_fill_=index_fill, index_copy_=index_copy)
