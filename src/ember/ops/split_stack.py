"""Splitting, stacking and repeating, as compositions of views, ``cat`` and indexing:
``split_with_sizes``, ``hsplit``/``vsplit``/``dsplit``, ``column_stack``, ``dstack``,
``atleast_3d``, ``ravel``, ``repeat_interleave``, ``diagflat``, ``diag_embed`` and
``fill_diagonal_``. Their gradients come from the ops they are made of.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any

import numpy as np

from ember import dtypes
from ember.errors import (
    ArgumentError,
    ArgumentTypeError,
    DTypeError,
    ShapeError,
    refuse_non_tensor,
    refuse_non_tensors,
    type_name,
)
from ember.ops.construct import one_given, tensor_split
from ember.ops.creation import zeros
from ember.ops.diagonal import diagonal_scatter
from ember.ops.gather import index_select
from ember.ops.int_args import as_int, as_ints
from ember.ops.join import cat, hstack
from ember.ops.reduce import normalize_dim
from ember.ops.shape import for_each, reshape, split
from ember.tensor import Tensor, _wrap, method

__all__ = ["split_with_sizes", "hsplit", "vsplit", "dsplit", "column_stack", "dstack",
           "atleast_3d", "ravel", "repeat_interleave", "diagflat", "diag_embed"]


@method()
def split_with_sizes(input: Tensor, split_sizes: Sequence[int], dim: int = 0
                     ) -> tuple[Tensor, ...]:
    """Views of ``input`` cut along ``dim`` into pieces of the given sizes, which must add up
    to the dimension's size.

    Example:
        >>> [p.tolist() for p in ember.arange(5).split_with_sizes([2, 3])]
        [[0, 1], [2, 3, 4]]
    """
    d = normalize_dim(dim, input.ndim, "split_with_sizes")
    sizes = list(as_ints(split_sizes, "split_with_sizes", "split_sizes"))
    if any(s < 0 for s in sizes) or sum(sizes) != input.shape[d]:
        raise ShapeError(f"split_with_sizes: expects split_sizes {sizes} to sum exactly to "
                         f"{input.shape[d]} (input tensor's size at dimension {d})")
    return tuple(split(input, sizes, d))


def _split_along(op: str, input: Tensor, specs: tuple, dim: int, least: int
                 ) -> tuple[Tensor, ...]:
    """``input`` split along ``dim`` by the one of ``specs`` given: ``(indices_or_sections,
    sections, indices)``, PyTorch's three spellings."""
    spec = one_given(op, indices_or_sections=specs[0], sections=specs[1], indices=specs[2])
    if input.ndim < least:
        raise ShapeError(f"{op} requires a tensor with at least {least} dimension"
                         f"{'s' if least > 1 else ''}, but got a tensor with {input.ndim} "
                         "dimensions!")
    if isinstance(spec, int) and not isinstance(spec, bool):
        size = input.shape[dim]
        if spec == 0 or size % spec:
            raise ShapeError(f"{op} attempted to split along dimension {dim}, but the size of "
                             f"the dimension {size} is not divisible by the split_size {spec}!")
    return tensor_split(input, spec if isinstance(spec, int) else
                        list(as_ints(spec, op, "indices_or_sections")), dim)


@method()
def hsplit(input: Tensor, indices_or_sections: int | Sequence[int] | None = None, *,
           sections: int | None = None, indices: Sequence[int] | None = None
           ) -> tuple[Tensor, ...]:
    """Splits column-wise: along dim 1, or dim 0 of a 1-d tensor; an int must divide the
    size evenly.

    Example:
        >>> [p.shape for p in ember.zeros(2, 4).hsplit(2)]
        [ember.Size([2, 2]), ember.Size([2, 2])]
    """
    dim = 0 if input.ndim == 1 else 1
    specs = (indices_or_sections, sections, indices)
    return _split_along("torch.hsplit", input, specs, dim, 1)


@method()
def vsplit(input: Tensor, indices_or_sections: int | Sequence[int] | None = None, *,
           sections: int | None = None, indices: Sequence[int] | None = None
           ) -> tuple[Tensor, ...]:
    """Splits row-wise (along dim 0) a tensor of at least 2 dimensions.

    Example:
        >>> [p.shape for p in ember.zeros(4, 2).vsplit([1])]
        [ember.Size([1, 2]), ember.Size([3, 2])]
    """
    specs = (indices_or_sections, sections, indices)
    return _split_along("torch.vsplit", input, specs, 0, 2)


@method()
def dsplit(input: Tensor, indices_or_sections: int | Sequence[int] | None = None, *,
           sections: int | None = None, indices: Sequence[int] | None = None
           ) -> tuple[Tensor, ...]:
    """Splits depth-wise (along dim 2) a tensor of at least 3 dimensions.

    Example:
        >>> [p.shape for p in ember.zeros(1, 2, 4).dsplit(2)]
        [ember.Size([1, 2, 2]), ember.Size([1, 2, 2])]
    """
    specs = (indices_or_sections, sections, indices)
    return _split_along("torch.dsplit", input, specs, 2, 3)


def column_stack(tensors: Sequence[Tensor]) -> Tensor:
    """Joins tensors as columns: 0-d and 1-d tensors become columns, then ``hstack``.

    Example:
        >>> ember.column_stack([ember.tensor([1, 2]), ember.tensor([3, 4])])
        tensor([[1, 3],
                [2, 4]])
    """
    tensors = _check_tensors("column_stack", tensors)
    return hstack([t.reshape(t.numel(), 1) if t.ndim <= 1 else t for t in tensors])


def atleast_3d(*tensors: Tensor) -> Tensor | tuple[Tensor, ...]:
    """Each tensor with at least 3 dimensions: ``()`` → ``(1, 1, 1)``, ``(n,)`` →
    ``(1, n, 1)``, ``(m, n)`` → ``(m, n, 1)``.

    Example:
        >>> ember.atleast_3d(ember.zeros(2, 3)).shape
        ember.Size([2, 3, 1])
    """
    shapes = {0: lambda s: (1, 1, 1), 1: lambda s: (1, *s, 1), 2: lambda s: (*s, 1)}
    return for_each(tensors, lambda t: t.reshape(shapes[t.ndim](t.shape)) if t.ndim < 3 else t)


def dstack(tensors: Sequence[Tensor]) -> Tensor:
    """Joins tensors depth-wise (along dim 2, after :func:`atleast_3d`).

    Example:
        >>> ember.dstack([ember.tensor([1, 2]), ember.tensor([3, 4])]).shape
        ember.Size([1, 2, 2])
    """
    tensors = _check_tensors("dstack", tensors)
    return cat([atleast_3d(t) for t in tensors], 2)


@method()
def ravel(input: Tensor) -> Tensor:
    """The elements as a 1-d tensor (a view when the memory allows it).

    Example:
        >>> ember.tensor([[1, 2], [3, 4]]).ravel()
        tensor([1, 2, 3, 4])
    """
    return reshape(input, (-1,))


# -- repeat_interleave ---------------------------------------------------------------------------
def _repeat_counts(repeats: Any, op: str) -> np.ndarray:
    """The repeat counts as a host int64 array (read from the data: eager mode only)."""
    if isinstance(repeats, Tensor):
        if repeats.dtype.category != dtypes.INT:
            raise DTypeError(f"{op}: repeats must have an integer dtype, got "
                             f"{repeats.dtype.name}")
        if repeats.ndim > 1:
            raise ShapeError(f"{op}: repeats must be 0-dim or 1-dim tensor, got shape "
                             f"{tuple(repeats.shape)}")
        counts = np.asarray(repeats.detach().numpy(force=True), dtype=np.int64).reshape(-1)
    else:
        counts = np.asarray([as_int(repeats, op, "repeats")], dtype=np.int64)
    if (counts < 0).any():
        raise ArgumentError(f"{op}: repeats can not be negative")
    return counts


def repeat_interleave(input: Tensor, repeats: Any = None, dim: int | None = None, *,
                      output_size: int | None = None) -> Tensor:
    """Repeats each element (or slice along ``dim``) ``repeats`` times in place, unlike
    ``repeat``, which tiles. ``repeats`` is an int or a tensor (one count per slice, or one
    for all); ``dim=None`` flattens first. ``repeat_interleave(counts)`` alone gives
    ``arange(len(counts))`` repeated by ``counts``.

    Example:
        >>> ember.tensor([1, 2]).repeat_interleave(2)
        tensor([1, 1, 2, 2])
        >>> ember.repeat_interleave(ember.tensor([2, 0, 1]))
        tensor([0, 0, 2])
    """
    op = "repeat_interleave"
    if repeats is None:  # repeat_interleave(repeats): the indices repeated
        counts = _repeat_counts(input, op)
        if input.ndim != 1:
            raise ShapeError(f"{op}: repeats must be a 1-dim tensor, got shape "
                             f"{tuple(input.shape)}")
        index = np.repeat(np.arange(counts.size, dtype=input.dtype.np), counts)
        _check_output_size(op, index.size, output_size)
        return _wrap(input.device.xp.asarray(index), input.device)  # (of the counts' dtype)
    if dim is None:
        input = reshape(input, (-1,))
        dim = 0
    d = normalize_dim(dim, input.ndim, op)
    n = input.shape[d] if input.ndim else 1
    counts = _repeat_counts(repeats, op)
    if counts.size == 1:
        counts = np.broadcast_to(counts, (n,))
    elif counts.size != n:
        raise ShapeError(f"{op}: repeats must have the same size as input along dim, got "
                         f"{counts.size} repeats for size {n}")
    index = np.repeat(np.arange(n, dtype=np.int64), counts)
    _check_output_size(op, index.size, output_size)
    if input.ndim == 0:
        input = reshape(input, (1,))
    return index_select(input, d, _wrap(input.device.xp.asarray(index), input.device))


def _check_output_size(op: str, size: int, output_size: int | None) -> None:
    if output_size is not None and output_size != size:
        raise ShapeError(f"{op}: output_size {output_size} does not match the sum of repeats "
                         f"{size}")


@method("repeat_interleave")
def _repeat_interleave_method(self: Tensor, repeats: Any = None, dim: int | None = None, *,
                              output_size: int | None = None) -> Tensor:
    """``x.repeat_interleave(repeats, dim)``; see :func:`repeat_interleave`."""
    if repeats is None:
        return repeat_interleave(self, output_size=output_size)
    return repeat_interleave(self, repeats, dim, output_size=output_size)


# -- diagonals -----------------------------------------------------------------------------------
@method()
def diagflat(input: Tensor, offset: int = 0) -> Tensor:
    """The flattened ``input`` on diagonal ``offset`` of a square matrix.

    Example:
        >>> ember.tensor([[1, 2]]).diagflat()
        tensor([[1, 0],
                [0, 2]])
    """
    offset = as_int(offset, "diagflat", "offset")
    flat = reshape(input, (-1,))
    n = flat.shape[0] + abs(offset)
    return diagonal_scatter(zeros((n, n), dtype=input.dtype, device=input.device), flat,
                            offset=offset, dim1=0, dim2=1)


@method()
def diag_embed(input: Tensor, offset: int = 0, dim1: int = -2, dim2: int = -1) -> Tensor:
    """Matrices whose diagonal (``offset``, in the plane of ``dim1`` and ``dim2`` of the
    output) holds the last dimension of ``input``; zeros elsewhere.

    Example:
        >>> ember.diag_embed(ember.tensor([[1, 2]]))
        tensor([[[1, 0],
                 [0, 2]]])
    """
    if not isinstance(input, Tensor):  # (a torch tensor's device would be judged first)
        refuse_non_tensor("diag_embed", "input", input)
    offset = as_int(offset, "diag_embed", "offset")
    nd = input.ndim + 1
    d1, d2 = normalize_dim(dim1, nd, "diag_embed"), normalize_dim(dim2, nd, "diag_embed")
    if d1 == d2:
        raise ShapeError(f"diag_embed: diagonal dimensions cannot be identical {dim1}, {dim2}")
    if input.ndim == 0:
        raise ShapeError("diag_embed: expects a tensor with at least 1 dimension")
    n = input.shape[-1] + abs(offset)
    rest = iter(input.shape[:-1])
    shape = tuple(n if d in (d1, d2) else next(rest) for d in range(nd))
    base = zeros(shape, dtype=input.dtype, device=input.device)
    return diagonal_scatter(base, input, offset=offset, dim1=d1, dim2=d2)


@method()
def fill_diagonal_(self: Tensor, fill_value: Any, wrap: bool = False) -> Tensor:
    """Fills the main diagonal of a 2-d tensor (or of an n-d one with all sizes equal) with
    ``fill_value``, in place; ``wrap`` restarts the diagonal below a tall matrix every
    ``cols + 1`` rows, as NumPy's ``fill_diagonal``.

    Example:
        >>> ember.zeros(2, 3).fill_diagonal_(5.0)
        tensor([[5., 0., 0.],
                [0., 5., 0.]])
    """
    if self.ndim < 2:
        raise ShapeError("fill_diagonal_: dimensions must larger than 1")
    if self.ndim > 2 and len(set(self.shape)) != 1:
        raise ShapeError("fill_diagonal_: all dimensions of input must be of equal length")
    # writes through diagonal views (every dtype fill_ takes, as PyTorch's); a tall matrix
    # with ``wrap`` has one diagonal per block of ``cols`` rows, a row left between blocks
    cols = self.shape[-1]
    starts = range(0, self.shape[0], cols + 1) if wrap and self.ndim == 2 else (0,)
    for start in starts:
        diagonal = self[start:start + cols] if self.ndim == 2 else self
        while diagonal.ndim > 1:
            diagonal = diagonal.diagonal(0, 0, -1)
        diagonal.fill_(fill_value)
    return self


def _check_tensors(op: str, tensors: Iterable[Tensor]) -> list[Tensor]:
    """``tensors`` (any iterable, as ``stack`` takes) as a list; refuses a whole tensor or
    array (PyTorch's TypeError), an empty one, or one holding a NumPy array, PyTorch tensor or
    Python value (by length and element type: ``not tensors`` of a PyTorch tensor raises)."""
    if hasattr(tensors, "ndim"):
        raise ArgumentTypeError(f"{op}(): argument 'tensors' must be a sequence of Tensors, not "
                                f"{type_name(tensors)}. Hint: pass a list or tuple of them")
    tensors = list(tensors)
    if len(tensors) == 0:
        raise ArgumentError(f"{op} expects a non-empty TensorList")
    refuse_non_tensors(op, "tensors", tensors)
    return tensors
