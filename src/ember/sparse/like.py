"""``zeros_like``, ``empty_like``, ``ones_like`` and ``full_like`` of a sparse tensor, as
PyTorch's: zeros (and a COO tensor's uninitialised memory) are a tensor of the same layout
with no specified elements; ones, a fill value and ``empty_like`` keep a compressed tensor's
pattern (a COO tensor refuses a fill, as PyTorch's ``fill_`` does); ``layout=ember.strided``
gives the dense tensor (zeros of another sparse layout: that layout's tensor with no entries).
"""

from __future__ import annotations

from typing import Any

from ember.errors import ArgumentError
from ember.layouts import check_format, order_of, preserve_format, sparse_coo, strided
from ember.ops.creation import full
from ember.sparse.convert import convert, empty_sparse
from ember.sparse.tensor import SparseTensor, not_supported

__all__ = ["LIKE"]


def _like(op: str, s: SparseTensor, fill: Any, dtype: Any, device: Any,
          requires_grad: bool, layout: Any, memory_format: Any = None) -> Any:
    made = s.layout if layout is None else layout
    if memory_format is not None and made is sparse_coo:
        raise ArgumentError(f"{op}: memory format option is only supported by strided tensors "
                            f"(as PyTorch's), got memory_format={memory_format!r} for a "
                            f"{made!r} result. Hint: leave it out")
    if memory_format is preserve_format and made is s.layout and op != "zeros_like":
        raise ArgumentError(f"{op}: unsupported memory format Preserve for a {made!r} result "
                            "(a compressed tensor keeps its pattern, as PyTorch's refuses "
                            "it). Hint: leave memory_format out or pass contiguous_format")
    if memory_format is not None and check_format(op, memory_format).rank is not None:
        order_of(op, memory_format, tuple(s.shape))  # (channels_last needs a 4-d tensor)
    dtype = s.dtype if dtype is None else dtype
    device = s.device if device is None else device
    if layout is strided:
        return full(tuple(s.shape), 0 if fill is None else fill, dtype=dtype, device=device,
                    requires_grad=requires_grad)
    if layout is not None and layout is not s.layout and fill is None:  # (no entries: of
        empty = _like(op, s, None, dtype, device, requires_grad, None)  # any layout, as torch)
        return convert(empty, layout)
    if layout is not None and layout is not s.layout:
        raise ArgumentError(f"{op}: a {s.layout!r} tensor's {op} is of its layout or "
                            f"ember.strided, got layout={layout!r}. Hint: convert the result "
                            "(to_sparse_csr(), ...)")
    if fill is None and (op == "zeros_like" or s.layout is sparse_coo):  # (no entries)
        made = empty_sparse(op, s.layout, s._size, dtype, device, tuple(s._vals.shape[1:]))
        return made.requires_grad_(requires_grad)
    if s.layout is sparse_coo:
        raise not_supported(op, s)  # (as PyTorch's: "Could not run 'aten::fill_.Scalar'")
    # (a compressed tensor's pattern, each value ``fill``; empty_like's are zeros)
    index = tuple(i.to(device) for i in s._index)
    values = full(tuple(s._vals.shape), 0 if fill is None else fill, dtype=dtype, device=device)
    values.requires_grad_(requires_grad)
    return SparseTensor(s.layout, s._size, index, values, values.shape[0] == 0 or s._coalesced)


def zeros_like(s: SparseTensor, *, dtype: Any = None, device: Any = None,
               requires_grad: bool = False, layout: Any = None, memory_format: Any = None
               ) -> Any:
    """A tensor of ``s``'s layout and shape with no specified elements (all zeros).

    Example:
        >>> ember.zeros_like(ember.eye(2).to_sparse())._nnz()
        0
    """
    return _like("zeros_like", s, None, dtype, device, requires_grad, layout,
                 memory_format)


def empty_like(s: SparseTensor, *, dtype: Any = None, device: Any = None,
               requires_grad: bool = False, layout: Any = None, memory_format: Any = None
               ) -> Any:
    """A COO tensor's ``empty_like`` holds no entries; a compressed tensor's keeps its pattern
    (its values are zeros here, uninitialised in PyTorch), as PyTorch's.

    Example:
        >>> ember.empty_like(ember.eye(2).to_sparse_csr())._nnz()
        2
    """
    return _like("empty_like", s, None, dtype, device, requires_grad, layout,
                 memory_format)


def ones_like(s: SparseTensor, *, dtype: Any = None, device: Any = None,
              requires_grad: bool = False, layout: Any = None, memory_format: Any = None
              ) -> Any:
    """A compressed tensor's pattern, each specified element 1 (COO refuses, as PyTorch).

    Example:
        >>> ember.ones_like(ember.eye(2).to_sparse_csr()).values()
        tensor([1., 1.])
    """
    return _like("ones_like", s, 1, dtype, device, requires_grad, layout,
                 memory_format)


def full_like(s: SparseTensor, fill_value: Any, *, dtype: Any = None, device: Any = None,
              requires_grad: bool = False, layout: Any = None, memory_format: Any = None
              ) -> Any:
    """A compressed tensor's pattern, each specified element ``fill_value`` (COO refuses,
    as PyTorch)."""
    return _like("full_like", s, fill_value, dtype, device, requires_grad, layout,
                 memory_format)


LIKE = {f.__name__: f for f in (zeros_like, empty_like, ones_like, full_like)}
