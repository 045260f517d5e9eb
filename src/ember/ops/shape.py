"""Shape ops that are views: reshape/view, squeeze/unsqueeze, flatten/unflatten,
permute/transpose/movedim, narrow/select/split/chunk/unbind, atleast_1d/2d (matrix transposes,
``t``/``adjoint`` and the ``T``/``H``/``mT``/``mH`` properties, are in :mod:`ember.ops.transposes`).

Primitives: ``reshape`` and ``permute``, both views sharing their input's memory and version
counter; the splitting ops are the ``slice`` view of ``indexing.py``. ``reshape`` returns a
view when the layout allows one and copies otherwise, as PyTorch does; ``view`` never copies
and raises PyTorch's error (with the hint) when it would have to.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from ember.autograd.graph import name_node
from ember.errors import ArgumentError, IndexOutOfRange, OpError, ShapeError, refuse_non_tensor
from ember.layouts import contiguous_format
from ember.ops.convert import clone
from ember.ops.forwarding import not_a_tensor
from ember.ops.indexing import FULL, Slice
from ember.ops.int_args import as_int, as_ints
from ember.ops.overrides import TENSOR_LIKE, TensorLikeOperand, calling_op, handle
from ember.ops.primitive import Primitive, TensorSpec, apply, apply_view, primitive
from ember.ops.reduce import normalize_dim
from ember.ops.target_shape import numel_of, resolve_shape
from ember.tensor import Tensor, method

__all__ = ["reshape", "permute", "transpose", "swapdims", "movedim", "moveaxis",
           "squeeze", "unsqueeze", "flatten", "unflatten", "atleast_1d", "atleast_2d", "split",
           "chunk", "unbind", "narrow", "select"]


def read_sizes(args: tuple) -> tuple:
    """Reads ``f(2, 3)`` and ``f((2, 3))`` alike."""
    if len(args) == 1 and isinstance(args[0], (tuple, list)):
        return tuple(args[0])
    return args


# -- reshape and view ----------------------------------------------------------------------------
@primitive
class Reshape(Primitive):
    name = "reshape"
    backward_name = "ViewBackward0"  # PyTorch's for view/reshape/flatten (free: a class name;
    # squeeze, which reshapes too, says View where PyTorch says Squeeze; a copying reshape
    # renames its node UnsafeViewBackward0)
    complex_grad = True  # moves, copies or sums elements: real coefficients
    view = True
    save_inputs = False

    def forward(self, xp, a, *, shape):
        return a.reshape(shape)

    def infer(self, a, *, shape):
        if numel_of(shape) != numel_of(a.shape):
            raise ShapeError(f"reshape: shape {list(shape)} is invalid for input of size "
                             f"{numel_of(a.shape)} (shape {a.shape})")
        return TensorSpec(shape, a.dtype)

    def vjp(self, ctx, g):
        return reshape(g, ctx.inputs[0].shape)

    def jvp(self, ctx, da):
        return reshape(da, ctx.params["shape"])


def _viewable(x: Tensor, shape: tuple) -> bool:
    a = x._data
    if a.flags.c_contiguous:
        return True
    try:
        a.reshape(shape, copy=False)
    except (ValueError, TypeError):
        return False
    return True


@method()
def reshape(input: Tensor, *sizes: Any, shape: Any = None) -> Tensor:
    """``input`` with a new shape and the same elements (one size may be -1); a view when the
    memory layout allows, else a copy. The shape comes as sizes or as ``shape=`` (PyTorch's
    keyword).

    Example:
        >>> ember.arange(6).reshape(2, -1)
        tensor([[0, 1, 2],
                [3, 4, 5]])
    """
    if shape is not None:
        if sizes:
            raise TypeError("reshape: the shape was given twice, as sizes and as shape=")
        sizes = (shape,)
    try:
        shape = resolve_shape(input.shape, read_sizes(sizes), "reshape")
        if not _viewable(input, shape):  # (reads the memory: a DTensor raises here)
            # (a C-ordered copy, as PyTorch's: a layout-keeping clone reshaped could give a
            # non-contiguous result, or copy twice; PyTorch's node: UnsafeView)
            copy = apply(Reshape, clone(input, memory_format=contiguous_format), shape=shape)
            return name_node(copy, "UnsafeViewBackward0")
    except TensorLikeOperand:  # an ember.fx Proxy, a DTensor
        return handle(reshape, (input, *sizes), {})
    except AttributeError as error:
        not_a_tensor("reshape", {"input": input}, error)
        raise
    return apply(Reshape, input, shape=shape)


_CHANNELS_LAST_NOTE = (". This tensor is channels-last in memory, as Ember's convolutions and "
                       "pooling leave their results (PyTorch's are C-ordered there), so a view "
                       "that flattens channels with pixels cannot share its memory")


def _channels_last(x: Tensor) -> bool:
    return x.ndim in (4, 5) and x.stride(1) == 1 and x.shape[1] > 1


@method()
def view(self: Tensor, *shape: Any, size: Any = None, dtype: Any = None) -> Tensor:
    """A view of ``self`` with a new shape (one size may be -1); never copies. ``view(dtype)``
    reads the same memory as another dtype (:func:`ember.ops.view_dtype.view_dtype`).

    Example:
        >>> ember.zeros(2, 3).view(-1).shape
        ember.Size([6])
    """
    if size is not None or dtype is not None:
        if shape or (size is not None and dtype is not None):
            raise TypeError("view() takes either sizes or a dtype, given once: view(*size), "
                            "view(size=...), view(dtype) or view(dtype=...)")
        shape = (size if dtype is None else dtype,)
    shape = read_sizes(shape)
    if len(shape) == 1 and not isinstance(shape[0], int):
        from ember.ops.view_dtype import view_dtype  # (it imports this module)

        return view_dtype(self, shape[0])
    shape = resolve_shape(self.shape, shape, "view")
    if not _viewable(self, shape):
        raise OpError(f"view: view size is not compatible with input tensor's size and stride "
                      f"(at least one dimension spans across two contiguous subspaces): shape "
                      f"{tuple(self.shape)} with strides {self.stride()} cannot be viewed as "
                      f"{shape}. Use .reshape(...) or .flatten(...) instead (they copy when "
                      f"they must){_CHANNELS_LAST_NOTE if _channels_last(self) else ''}")
    return apply(Reshape, self, shape=shape)


@method()
def view_as(self: Tensor, other: Tensor) -> Tensor:
    """``self.view(other.shape)``."""
    return view(self, other.shape)


@method()
def reshape_as(self: Tensor, other: Tensor) -> Tensor:
    """``self.reshape(other.shape)``."""
    return reshape(self, other.shape)


def reshape_view(x: Tensor, shape: tuple) -> Tensor:
    """A reshape known to be a view (inserting or removing size-1 dims)."""
    return apply(Reshape, x, shape=shape)


@method()
def squeeze(input: Tensor, dim: int | Sequence[int] | None = None, *more: int) -> Tensor:
    """``input`` without its size-1 dimensions (all, or those of ``dim``: a sequence, or the
    dims one by one, ``x.squeeze(0, 1)``); a view.

    Example:
        >>> ember.zeros(2, 1, 3, 1).squeeze(1).shape
        ember.Size([2, 3, 1])
    """
    if more:
        dim = (dim, *more)
    try:
        return reshape_view(input, squeezed_shape(input.shape, dim))
    except TensorLikeOperand:  # an ember.fx Proxy, a DTensor
        return handle(squeeze, (input, dim), {})


def squeezed_shape(shape: Sequence[int], dim: int | Sequence[int] | None) -> tuple[int, ...]:
    """``shape`` without its size-1 dimensions (all, or those of ``dim``)."""
    if dim is None:
        dims: Any = range(len(shape))
    elif isinstance(dim, (tuple, list)):
        dims = [normalize_dim(d, len(shape), "squeeze") for d in dim]
        if len(set(dims)) != len(dims):
            twice = next(d for d in dims if dims.count(d) > 1)
            raise ShapeError(f"squeeze: dim {twice} appears multiple times in the list of dims "
                             f"{tuple(dim)} (shape {tuple(shape)})")
    else:
        dims = (normalize_dim(dim, len(shape), "squeeze"),)
    return tuple(s for i, s in enumerate(shape) if s != 1 or i not in dims)


@method()
def unsqueeze(input: Tensor, dim: int) -> Tensor:
    """``input`` with a size-1 dimension inserted at ``dim``; a view.

    Example:
        >>> ember.zeros(2, 3).unsqueeze(-1).shape
        ember.Size([2, 3, 1])
    """
    try:  # (as x[:, None]: the new dim strided as PyTorch's, which a reshape may not be)
        dim = normalize_dim(dim, len(input.shape) + 1, "unsqueeze")
        return apply_view(Slice, input, index=(FULL,) * dim + (None,))
    except TensorLikeOperand:  # an ember.fx Proxy, a DTensor
        return handle(unsqueeze, (input, dim), {})


def unsqueezed_shape(shape: Sequence[int], dim: int) -> tuple[int, ...]:
    """``shape`` with a 1 inserted at ``dim``."""
    dim = normalize_dim(dim, len(shape) + 1, "unsqueeze")
    return (*shape[:dim], 1, *shape[dim:])


@method()
def flatten(input: Tensor, start_dim: int = 0, end_dim: int = -1) -> Tensor:
    """``input`` with dimensions ``start_dim`` … ``end_dim`` merged into one.

    Example:
        >>> ember.zeros(2, 3, 4).flatten(1).shape
        ember.Size([2, 12])
    """
    try:
        shape = input.shape
    except TensorLikeOperand:  # (an ember.fx Proxy)
        return handle(flatten, (input, start_dim, end_dim), {})
    except AttributeError as error:
        not_a_tensor("flatten", {"input": input}, error)
        raise
    shape = tuple(shape)  # (a plain tuple's slices and sums: a Size's cost a call each)
    if not shape:  # (as PyTorch, a 0-d tensor takes dims -1 and 0)
        normalize_dim(start_dim, 0, "flatten")
        normalize_dim(end_dim, 0, "flatten")
        return reshape(input, (1,))
    s = normalize_dim(start_dim, len(shape), "flatten")
    e = normalize_dim(end_dim, len(shape), "flatten")
    if s > e:
        raise ShapeError(f"flatten: start_dim ({start_dim}) cannot come after end_dim "
                         f"({end_dim}) for shape {tuple(shape)}")
    if s == e:  # (nothing to merge: the tensor itself, as PyTorch's, not a view of it)
        return input
    return reshape(input, shape[:s] + (numel_of(shape[s:e + 1]),) + shape[e + 1:])


@method()
def unflatten(input: Tensor, dim: int, sizes: Sequence[int]) -> Tensor:
    """``input`` with dimension ``dim`` split into ``sizes`` (one may be -1).

    Example:
        >>> ember.zeros(2, 12).unflatten(1, (3, -1)).shape
        ember.Size([2, 3, 4])
    """
    shape = input.shape
    if not shape:  # (PyTorch's too: no dimension to split, not even the 0 or -1 others allow)
        raise IndexOutOfRange(f"unflatten: dimension {dim} is out of range: the tensor is 0-d "
                              "and has no dimension to split. Hint: reshape(sizes) it instead")
    dim = normalize_dim(dim, len(shape), "unflatten")
    sizes = as_ints(sizes, "unflatten", "each size")
    if not sizes:
        raise ShapeError(f"unflatten: sizes must be non-empty, got () for dimension {dim} of "
                         f"shape {tuple(shape)}")
    inner = resolve_shape((shape[dim],), sizes, "unflatten")
    return reshape(input, shape[:dim] + inner + shape[dim + 1:])


# -- permutations --------------------------------------------------------------------------------
@primitive
class Permute(Primitive):
    name = "permute"
    complex_grad = True  # moves, copies or sums elements: real coefficients
    view = True
    save_inputs = False

    def forward(self, xp, a, *, dims):
        return xp.transpose(a, dims)

    def infer(self, a, *, dims):
        if sorted(dims) != list(range(len(a.shape))):
            raise ShapeError(f"permute: dims {dims} are not a permutation of the "
                             f"{len(a.shape)} dimensions of {a}")
        return TensorSpec(tuple(a.shape[d] for d in dims), a.dtype)

    def vjp(self, ctx, g):
        dims = ctx.params["dims"]
        inverse = [0] * len(dims)
        for i, d in enumerate(dims):
            inverse[d] = i
        return apply(Permute, g, dims=tuple(inverse))

    def jvp(self, ctx, da):
        return apply(Permute, da, **ctx.params)


def _permutation(dims: tuple, shape: tuple, error: type[Exception] = ShapeError) -> \
        tuple[int, ...]:
    """``permute``'s ``dims`` (``f(2, 0, 1)`` or ``f((2, 0, 1))``) for a tensor of ``shape``,
    each non-negative; ``error`` when they are not a permutation of its dimensions (for the
    dense and the sparse ``permute``; private, so that its errors name the op called).

    Example:
        >>> _permutation((-1, 0), (2, 3))
        (1, 0)
    """
    dims, n = read_sizes(dims), len(shape)
    if len(dims) != n:
        raise error(f"permute: {len(dims)} dims given for a tensor with {n} dimensions "
                    f"(shape {shape})")
    dims = tuple(normalize_dim(d, n, "permute") for d in dims)
    if len(set(dims)) != n:
        raise error(f"permute: duplicate dims are not allowed, got {dims}")
    return dims


@method()
def permute(input: Tensor, *order: Any, dims: Sequence[int] | None = None) -> Tensor:
    """A view of ``input`` with its dimensions reordered: ``x.permute(2, 0, 1)``, or
    ``permute(x, dims=(2, 0, 1))`` (PyTorch's keyword).

    Example:
        >>> ember.zeros(2, 3, 4).permute(2, 0, 1).shape
        ember.Size([4, 2, 3])
    """
    if dims is not None:
        if order:
            raise TypeError("permute: the dims were given twice, positionally and as dims=")
        order = (dims,)
    order = _permutation(order, tuple(input.shape))
    try:
        return apply(Permute, input, dims=order)
    except TensorLikeOperand:
        return handle(permute, (input, *order), {})


@method("transpose", "swapdims")
def transpose(input: Tensor, dim0: int, dim1: int) -> Tensor:
    """A view of ``input`` with dimensions ``dim0`` and ``dim1`` swapped.

    Example:
        >>> ember.zeros(2, 3, 4).transpose(0, -1).shape
        ember.Size([4, 3, 2])
    """
    try:
        n = input._data.ndim
    except TensorLikeOperand:
        return handle(transpose, (input, dim0, dim1), {})
    except AttributeError:
        refuse_non_tensor(calling_op(), "input", input)
        raise
    dims = list(range(n))
    a, b = normalize_dim(dim0, n, "transpose"), normalize_dim(dim1, n, "transpose")
    if n:
        dims[a], dims[b] = dims[b], dims[a]
    return apply(Permute, input, dims=tuple(dims))


swapdims = transpose  # (swapaxes, NumPy's names: ember.ops.transposes)


@method("movedim", "moveaxis")
def movedim(input: Tensor, source: int | Sequence[int], destination: int | Sequence[int]
            ) -> Tensor:
    """A view of ``input`` with dimensions ``source`` moved to positions ``destination``.

    Example:
        >>> ember.zeros(2, 3, 4).movedim(0, -1).shape
        ember.Size([3, 4, 2])
    """
    try:
        n = input._data.ndim
    except TensorLikeOperand:
        return handle(movedim, (input, source, destination), {})
    except AttributeError:
        refuse_non_tensor(calling_op(), "input", input)
        raise
    return apply(Permute, input, dims=movedim_order(n, source, destination))


def movedim_order(n: int, source: int | Sequence[int], destination: int | Sequence[int]
                  ) -> tuple[int, ...]:
    """The permutation ``movedim(source, destination)`` applies to ``n`` dimensions (also
    the sparse ``movedim``'s).

    Example:
        >>> movedim_order(3, 0, -1)
        (1, 2, 0)
    """
    src, dst = as_ints(source, "movedim", "source"), as_ints(destination, "movedim", "destination")
    if len(src) != len(dst):
        raise ShapeError(f"movedim: source {tuple(src)} and destination {tuple(dst)} must have "
                         "the same number of dimensions")
    src = [normalize_dim(d, n, "movedim") for d in src]
    dst = [normalize_dim(d, n, "movedim") for d in dst]
    if len(set(src)) != len(src) or len(set(dst)) != len(dst):
        raise ShapeError(f"movedim: repeated dims in source {tuple(src)} or destination "
                         f"{tuple(dst)}")
    if n == 0:  # (0 and -1 name a 0-d tensor's only "dim")
        return ()
    order: list = [None] * n
    for s, d in zip(src, dst, strict=True):
        order[d] = s
    rest = iter(d for d in range(n) if d not in src)
    return tuple(o if o is not None else next(rest) for o in order)


moveaxis = movedim


# -- splitting (views) ---------------------------------------------------------------------------
def dim_of(x: Tensor, dim: int, op: str) -> int:
    """``dim`` normalized for an op that needs a real one, which a 0-d tensor does not have."""
    try:
        ndim = x.ndim
    except AttributeError:
        refuse_non_tensor(op, "input", x)
        raise
    if ndim == 0:
        raise IndexOutOfRange(f"{op}: dimension {dim} is out of range for a 0-d tensor; "
                              "expects at least one dimension. Hint: reshape it to (1,)")
    return normalize_dim(dim, ndim, op)


def slice_dim(x: Tensor, dim: int, start: int, length: int) -> Tensor:
    return apply(Slice, x, index=(FULL,) * dim + ((start, start + length, 1),))


@method()
def narrow(input: Tensor, dim: int, start: int, length: int) -> Tensor:
    """The view ``input[..., start:start + length]`` along ``dim`` (``start`` may be negative).

    Example:
        >>> ember.arange(5).narrow(0, 1, 3)
        tensor([1, 2, 3])
    """
    if type(input) in TENSOR_LIKE:  # (a nested tensor's dims are no plain sizes)
        return handle(narrow, (input, dim, start, length), {})
    _refuse_0d(input, "narrow")
    dim = normalize_dim(dim, input.ndim, "narrow")
    n = input.shape[dim]
    start, length = as_int(start, "narrow", "start"), as_int(length, "narrow", "length")
    if not -n <= start <= n:
        raise IndexOutOfRange(f"narrow: start {start} is out of range for dimension {dim} "
                              f"of size {n}")
    if start < 0:
        start += n
    if length < 0:
        raise ShapeError(f"narrow: length must be non-negative, got {length}")
    if start + length > n:
        raise IndexOutOfRange(f"narrow: start ({start}) + length ({length}) exceeds dimension "
                              f"{dim} of size {n}")
    return slice_dim(input, dim, start, length)


def split(tensor: Tensor, split_size_or_sections: int | Sequence[int], dim: int = 0
          ) -> tuple[Tensor, ...]:
    """Views of ``tensor`` cut along ``dim``: pieces of ``split_size`` (the last may be
    smaller) or of the given sizes.

    Example:
        >>> [p.shape for p in ember.zeros(5, 2).split([2, 3])]
        [ember.Size([2, 2]), ember.Size([3, 2])]
    """
    if type(tensor) in TENSOR_LIKE:
        return handle(split, (tensor, split_size_or_sections, dim), {})
    dim = dim_of(tensor, dim, "split")
    n = tensor.shape[dim]
    if hasattr(split_size_or_sections, "__index__"):
        size = as_int(split_size_or_sections, "split", "split_size")
        if size < 0 or (size == 0 and n):
            raise ShapeError(f"split: split_size must be positive (0 only for an empty "
                             f"dimension), got {size} for dimension {dim} of size {n}")
        # (an empty dimension gives one empty piece, as PyTorch's, whatever the size)
        sizes = [min(size, n - s) for s in range(0, n, size)] if n else [0]
    else:
        sizes = list(as_ints(split_size_or_sections, "split", "each split size"))
        if sum(sizes) != n or any(s < 0 for s in sizes):
            raise ShapeError(f"split: split sizes {sizes} must be non-negative and sum to "
                             f"{n}, the size of dimension {dim} of shape {tuple(tensor.shape)}")
    out, start = [], 0
    for s in sizes:
        out.append(slice_dim(tensor, dim, start, s))
        start += s
    return tuple(out)


@method("split")
def split_method(self: Tensor, split_size: int | Sequence[int], dim: int = 0
                 ) -> tuple[Tensor, ...]:
    """``x.split(split_size, dim)``: :func:`split` under the method's argument names, as
    PyTorch's ``Tensor.split``.

    Example:
        >>> [p.shape for p in ember.zeros(5, 2).split(split_size=3)]
        [ember.Size([3, 2]), ember.Size([2, 2])]
    """
    return split(self, split_size, dim)


@method()
def chunk(input: Tensor, chunks: int, dim: int = 0) -> tuple[Tensor, ...]:
    """``input`` cut into at most ``chunks`` views of equal size along ``dim`` (the last may
    be smaller, and there may be fewer).

    Example:
        >>> [c.shape for c in ember.zeros(5).chunk(3)]
        [ember.Size([2]), ember.Size([2]), ember.Size([1])]
    """
    if type(input) in TENSOR_LIKE:
        return handle(chunk, (input, chunks, dim), {})
    chunks = as_int(chunks, "chunk", "chunks")
    if chunks <= 0:
        raise ArgumentError(f"chunk: expects chunks to be greater than 0, got {chunks}")
    dim = dim_of(input, dim, "chunk")
    n = input.shape[dim]
    if n == 0:
        return tuple(slice_dim(input, dim, 0, 0) for _ in range(chunks))
    return split(input, -(-n // chunks), dim)


@method()
def unbind(input: Tensor, dim: int = 0) -> tuple[Tensor, ...]:
    """The views ``input.select(dim, i)`` for every ``i``.

    Example:
        >>> [r.tolist() for r in ember.tensor([[1, 2], [3, 4]]).unbind(1)]
        [[1, 3], [2, 4]]
    """
    if type(input) in TENSOR_LIKE:  # (a nested tensor: its sequences)
        return handle(unbind, (input, dim), {})
    dim = dim_of(input, dim, "unbind")
    return tuple(apply(Slice, input, index=(FULL,) * dim + (i,))
                 for i in range(input.shape[dim]))


@method("select")
def _select(input: Tensor, dim: int, index: int) -> Tensor:
    """The view ``input[..., index]`` along ``dim`` (one dimension fewer).

    Example:
        >>> ember.select(ember.arange(6).reshape(2, 3), 1, -1)
        tensor([2, 5])
    """
    _refuse_0d(input, "select")
    dim, index = normalize_dim(dim, input.ndim, "select"), as_int(index, "select", "index")
    n = input.shape[dim]
    if not -n <= index < n:
        raise IndexOutOfRange(f"select: index {index} is out of bounds for dimension {dim} "
                              f"with size {n}")
    return apply(Slice, input, index=(FULL,) * dim + (index,))


def _refuse_0d(input: Tensor, op: str) -> None:
    if input.ndim == 0:
        raise IndexOutOfRange(f"{op}() cannot be applied to a 0-dim tensor. Hint: reshape it "
                              "to (1,) first")


select = _select  # ember.select, as torch.select (the module ember.ops.select holds where)


# -- at least n dimensions ----------------------------------------------------------------------
def for_each(tensors: tuple, fn: Any) -> Tensor | tuple[Tensor, ...]:
    """``fn`` of each tensor, for the ``atleast_nd`` family: a tensor for one tensor given, a
    tuple for several or for a list or tuple of them (even of one), as in PyTorch."""
    if len(tensors) == 1 and isinstance(tensors[0], (list, tuple)):
        return tuple(fn(t) for t in tensors[0])
    out = tuple(fn(t) for t in tensors)
    return out[0] if len(out) == 1 else out


def atleast_1d(*tensors: Tensor) -> Tensor | tuple[Tensor, ...]:
    """Each tensor with at least one dimension (0-d ones become shape ``(1,)``).

    Example:
        >>> ember.atleast_1d(ember.tensor(1.0))
        tensor([1.])
    """
    return for_each(tensors, lambda t: t.reshape(1) if t.ndim == 0 else t)


def atleast_2d(*tensors: Tensor) -> Tensor | tuple[Tensor, ...]:
    """Each tensor with at least two dimensions (new ones go in front).

    Example:
        >>> ember.atleast_2d((ember.zeros(3),))[0].shape
        ember.Size([1, 3])
    """
    return for_each(tensors, lambda t: t.reshape((1,) * (2 - t.ndim) + t.shape)
                    if t.ndim < 2 else t)
