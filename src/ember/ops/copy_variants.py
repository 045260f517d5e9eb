"""PyTorch's ``*_copy`` ops: each view op's result as a fresh contiguous tensor that shares
no memory with its input (``torch.permute_copy(x, dims)`` is ``x.permute(dims).clone()``), and
the ``unsafe_`` splits, which PyTorch offers for code that writes into the pieces in place.

Gradients flow through the view and the copy, so none of these needs its own rules.

Example:
    >>> x = ember.arange(6.0).reshape(2, 3)
    >>> y = ember.t_copy(x)
    >>> y.is_contiguous(), y.data_ptr() != x.data_ptr()
    (True, True)
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from ember.dtypes import DType
from ember.errors import ArgumentError
from ember.layouts import contiguous_format
from ember.ops.complex_parts import view_as_complex, view_as_real
from ember.ops.convert import clone
from ember.ops.diagonal import diagonal
from ember.ops.forwarding import hands_over
from ember.ops.reduce import normalize_dim
from ember.ops.shape import chunk, split
from ember.ops.split_stack import split_with_sizes
from ember.ops.storage import as_strided
from ember.tensor import Tensor, method

__all__ = ["alias_copy", "as_strided_copy", "detach_copy", "diagonal_copy", "expand_copy",
           "permute_copy", "select_copy", "slice_copy", "split_copy", "split_with_sizes_copy",
           "squeeze_copy", "t_copy", "transpose_copy", "unbind_copy", "unfold_copy",
           "unsqueeze_copy", "view_copy", "view_as_real_copy", "view_as_complex_copy",
           "narrow_copy", "unsafe_chunk", "unsafe_split", "unsafe_split_with_sizes"]


def _copy(x: Tensor) -> Tensor:
    """A C-contiguous copy of ``x`` (PyTorch's ``*_copy`` ops return contiguous tensors)."""
    return clone(x, memory_format=contiguous_format)


def _copies(pieces: Sequence[Tensor]) -> tuple[Tensor, ...]:
    return tuple(_copy(p) for p in pieces)


def alias_copy(input: Tensor) -> Tensor:
    """A copy of ``input`` (PyTorch's copy of its ``alias`` view).

    Example:
        >>> ember.alias_copy(ember.tensor([1.0, 2.0]))
        tensor([1., 2.])
    """
    return _copy(input)


def as_strided_copy(input: Tensor, size: Any, stride: Any, storage_offset: int | None = None
                    ) -> Tensor:
    """:func:`ember.as_strided` as a copy.

    Example:
        >>> ember.as_strided_copy(ember.arange(4.0), (2, 2), (1, 1))
        tensor([[0., 1.],
                [1., 2.]])
    """
    return _copy(as_strided(input, size, stride, storage_offset))


def detach_copy(input: Tensor) -> Tensor:
    """A copy of ``input`` with no history (``input.detach().clone()``).

    Example:
        >>> ember.detach_copy(ember.ones(2, requires_grad=True)).requires_grad
        False
    """
    return _copy(input.detach())


def diagonal_copy(input: Tensor, offset: int = 0, dim1: int = 0, dim2: int = 1) -> Tensor:
    """:func:`ember.diagonal` as a copy.

    Example:
        >>> ember.diagonal_copy(ember.eye(2))
        tensor([1., 1.])
    """
    return _copy(diagonal(input, offset, dim1, dim2))


def expand_copy(input: Tensor, size: Sequence[int], *, implicit: bool = False) -> Tensor:
    """``input.expand(size)`` as a copy (``implicit`` is accepted for PyTorch's signature and
    changes nothing).

    Example:
        >>> ember.expand_copy(ember.tensor([1.0, 2.0]), (2, 2))
        tensor([[1., 2.],
                [1., 2.]])
    """
    return _copy(input.expand(*size))


def permute_copy(input: Tensor, dims: Sequence[int]) -> Tensor:
    """``input.permute(dims)`` as a contiguous copy.

    Example:
        >>> ember.permute_copy(ember.zeros(2, 3, 4), (2, 0, 1)).shape
        ember.Size([4, 2, 3])
    """
    return _copy(input.permute(*dims))


def select_copy(input: Tensor, dim: int, index: int) -> Tensor:
    """``input.select(dim, index)`` as a copy.

    Example:
        >>> ember.select_copy(ember.arange(6.0).reshape(2, 3), 1, 2)
        tensor([2., 5.])
    """
    return _copy(input.select(dim, index))


def slice_copy(input: Tensor, dim: int = 0, start: int | None = None, end: int | None = None,
               step: int = 1) -> Tensor:
    """``input[..., start:end:step]`` along ``dim``, as a copy; ``step`` must be positive.

    Example:
        >>> ember.slice_copy(ember.arange(6.0), 0, 1, None, 2)
        tensor([1., 3., 5.])
    """
    if step <= 0:
        raise ArgumentError(f"slice_copy: slice step must be positive, got {step}")
    dim = normalize_dim(dim, input.ndim, "slice_copy")
    return _copy(input[(slice(None),) * dim + (slice(start, end, step),)])


def split_copy(input: Tensor, split_size: int, dim: int = 0) -> tuple[Tensor, ...]:
    """``input.split(split_size, dim)`` with each piece a copy.

    Example:
        >>> [p.shape for p in ember.split_copy(ember.zeros(5), 2)]
        [ember.Size([2]), ember.Size([2]), ember.Size([1])]
    """
    if isinstance(split_size, bool) or not isinstance(split_size, int):
        raise TypeError(f"split_copy: split_size must be an int (as in PyTorch), got "
                        f"{split_size!r}. Hint: split_with_sizes_copy takes a list of sizes")
    return _copies(split(input, split_size, dim))


def split_with_sizes_copy(input: Tensor, split_sizes: Sequence[int], dim: int = 0
                          ) -> tuple[Tensor, ...]:
    """:func:`ember.split_with_sizes` with each piece a copy.

    Example:
        >>> [p.shape for p in ember.split_with_sizes_copy(ember.zeros(5), [1, 4])]
        [ember.Size([1]), ember.Size([4])]
    """
    return _copies(split_with_sizes(input, split_sizes, dim))


def squeeze_copy(input: Tensor, dim: int | Sequence[int] | None = None) -> Tensor:
    """:func:`ember.squeeze` as a copy.

    Example:
        >>> ember.squeeze_copy(ember.zeros(1, 2, 1)).shape
        ember.Size([2])
    """
    return _copy(input.squeeze(dim))


def t_copy(input: Tensor) -> Tensor:
    """:func:`ember.t` as a contiguous copy.

    Example:
        >>> ember.t_copy(ember.zeros(2, 3)).shape
        ember.Size([3, 2])
    """
    return _copy(input.t())


def transpose_copy(input: Tensor, dim0: int, dim1: int) -> Tensor:
    """:func:`ember.transpose` as a contiguous copy.

    Example:
        >>> ember.transpose_copy(ember.zeros(2, 3, 4), 0, 2).shape
        ember.Size([4, 3, 2])
    """
    return _copy(input.transpose(dim0, dim1))


def unbind_copy(input: Tensor, dim: int = 0) -> tuple[Tensor, ...]:
    """:func:`ember.unbind` with each slice a copy.

    Example:
        >>> ember.unbind_copy(ember.arange(4.0).reshape(2, 2))
        (tensor([0., 1.]), tensor([2., 3.]))
    """
    return _copies(input.unbind(dim))


def unfold_copy(input: Tensor, dimension: int, size: int, step: int) -> Tensor:
    """``input.unfold(dimension, size, step)`` (the windows along ``dimension``) as a copy.

    Example:
        >>> ember.unfold_copy(ember.arange(4.0), 0, 2, 2)
        tensor([[0., 1.],
                [2., 3.]])
    """
    return _copy(input.unfold(dimension, size, step))


def unsqueeze_copy(input: Tensor, dim: int) -> Tensor:
    """:func:`ember.unsqueeze` as a copy.

    Example:
        >>> ember.unsqueeze_copy(ember.zeros(2), 0).shape
        ember.Size([1, 2])
    """
    return _copy(input.unsqueeze(dim))


def view_copy(input: Tensor, size: Sequence[int]) -> Tensor:
    """``input`` in shape ``size`` (one size may be -1), as a copy. As in PyTorch, any layout
    works, also one that ``view`` itself refuses: the copy needs no shared memory.

    Example:
        >>> ember.view_copy(ember.arange(4.0), (2, -1))
        tensor([[0., 1.],
                [2., 3.]])
    """
    if isinstance(size, DType):  # the bytes read as another dtype
        return _copy(input.view(size))
    return _copy(input.reshape(*size))


def view_as_real_copy(input: Tensor) -> Tensor:
    """:func:`ember.view_as_real` as a copy: a complex tensor's (…, 2) real and imaginary
    parts.

    Example:
        >>> ember.view_as_real_copy(ember.tensor([1 + 2j]))
        tensor([[1., 2.]])
    """
    return _copy(view_as_real(input))


def view_as_complex_copy(input: Tensor) -> Tensor:
    """:func:`ember.view_as_complex` as a copy: (…, 2) real pairs as complex numbers.
    Differentiable, as the view is (PyTorch 2.13 has no derivative for the copy).

    Example:
        >>> ember.view_as_complex_copy(ember.tensor([[1.0, 2.0]]))
        tensor([1.+2.j])
    """
    return _copy(view_as_complex(input))


@method()
@hands_over
def narrow_copy(input: Tensor, dim: int, start: int, length: int) -> Tensor:
    """:func:`ember.narrow` as a copy.

    Example:
        >>> ember.narrow_copy(ember.arange(5.0), 0, 1, 3)
        tensor([1., 2., 3.])
    """
    return _copy(input.narrow(dim, start, length))


@method()
def unsafe_chunk(input: Tensor, chunks: int, dim: int = 0) -> tuple[Tensor, ...]:
    """:func:`ember.chunk`: views sharing ``input``'s memory. PyTorch's ``unsafe_`` splits
    differ from the plain ones only in autograd's view bookkeeping, which Ember's in-place
    machinery keeps correct either way.

    Example:
        >>> ember.unsafe_chunk(ember.arange(4.0), 2)
        (tensor([0., 1.]), tensor([2., 3.]))
    """
    return chunk(input, chunks, dim)


@method()
def unsafe_split(input: Tensor, split_size: int | Sequence[int], dim: int = 0
                 ) -> tuple[Tensor, ...]:
    """:func:`ember.split` (see :func:`unsafe_chunk`), under PyTorch's argument names.

    Example:
        >>> ember.unsafe_split(ember.arange(3.0), split_size=2)
        (tensor([0., 1.]), tensor([2.]))
    """
    return split(input, split_size, dim)


@method()
def unsafe_split_with_sizes(input: Tensor, split_sizes: Sequence[int], dim: int = 0
                            ) -> tuple[Tensor, ...]:
    """:func:`ember.split_with_sizes` (see :func:`unsafe_chunk`).

    Example:
        >>> ember.unsafe_split_with_sizes(ember.arange(3.0), [1, 2])
        (tensor([0.]), tensor([1., 2.]))
    """
    return split_with_sizes(input, split_sizes, dim)
