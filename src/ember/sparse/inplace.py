"""In-place ops of sparse tensors, as PyTorch's: ``s.add_(t)``, ``s.mul_(2)``, ``s.neg_()``,
``s.sqrt_()``, ``s.copy_(t)``, … compute the out-of-place sparse op on ``s``. A result on
``s``'s pattern is written into ``s``'s values (as the dense in-place ops write: aliases such
as ``s.detach()`` see it, and a value saved for backward and changed so is detected); a result
on another pattern (an uncoalesced tensor's unary op, an ``add_`` of other entries) is put in
``s`` instead, its pattern and values rebound. Layout and dtype are kept, the result cast to
``s``'s dtype as the dense in-place ops cast (a float result into an integer tensor raises).
A leaf that requires grad refuses, as a dense one. PyTorch's unary ``sqrt_``, ``sin_``, …
refuse an uncoalesced COO tensor; Ember's coalesce it (the same tensor).

Example:
    >>> s = ember.sparse_coo_tensor([[0, 2]], [4.0, 9.0], (3,))
    >>> s.sqrt_().to_dense()
    tensor([2., 0., 3.])
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from ember.errors import ArgumentError, ArgumentTypeError, DTypeError, ShapeError, type_name
from ember.ops.inplace import inplace
from ember.sparse.tensor import SparseTensor
from ember.tensor import Tensor

__all__ = ["copy_", "in_place"]


def in_place(name: str, compute: Callable[..., Any]) -> Callable[..., SparseTensor]:
    """The in-place method ``name`` (``sqrt_``) of the out-of-place sparse op ``compute``."""
    def op(self: SparseTensor, *args: Any, **kwargs: Any) -> SparseTensor:
        return _become(name, self, lambda s: compute(s, *args, **kwargs))
    op.__name__ = op.__qualname__ = name
    op.__doc__ = f"``{name[:-1]}`` in place (the pattern may change)."
    return op


def copy_(self: SparseTensor, src: Any, non_blocking: bool = False) -> SparseTensor:
    """``src``'s pattern and values (cast to this dtype) in place; ``src`` sparse, of this
    layout and shape (a dense one raises, as PyTorch's).

    Example:
        >>> s = ember.sparse_coo_tensor([[0]], [1.0], (2,))
        >>> s.copy_(ember.sparse_coo_tensor([[1]], [5], (2,))).to_dense()
        tensor([0., 5.])
    """
    if not isinstance(src, SparseTensor) or src.layout is not self.layout:
        raise ArgumentTypeError(f"copy_: copies a sparse tensor into one of its layout "
                                f"({self.layout!r}), got {type_name(src)} of layout "
                                f"{getattr(src, 'layout', None)!r} (as PyTorch's). Hint: convert "
                                "it first (to_sparse / to_dense)")
    if src.shape != self.shape:
        raise ShapeError(f"copy_: shapes {tuple(self.shape)} and {tuple(src.shape)} differ")
    if self.sparse_dim() != src.sparse_dim() and self._nnz():
        raise ShapeError(f"copy_: changing the number of sparse dimensions (from "
                         f"{self.sparse_dim()} to {src.sparse_dim()}) on a non-empty sparse "
                         f"tensor of shape {tuple(self.shape)} is not supported, as in PyTorch. "
                         "Hint: convert src (to_dense().to_sparse(sparse_dim)), or make a new "
                         "tensor")
    return _become("copy_", self, lambda s: src.to(self.dtype))


class _NewPattern(Exception):
    """The result is on another pattern: the values write is abandoned, ``s`` rebound."""

    def __init__(self, out: SparseTensor) -> None:
        super().__init__()
        self.out = out


def _become(name: str, self: SparseTensor, compute: Callable[[SparseTensor], Any]
            ) -> SparseTensor:
    if self.requires_grad and self.is_leaf:
        raise ArgumentError(f"{name}: a leaf sparse tensor that requires grad cannot be "
                            "changed in place (as in PyTorch). Hint: use the out-of-place op")

    def values(old: Tensor) -> Tensor:  # (computed on an alias of the old values, as dense)
        alias = SparseTensor(self.layout, self._size, self._index, old, self._coalesced)
        out = compute(alias)
        if _kept(self, out):  # (scalar mul_, one-tensor ops of a coalesced tensor, ...)
            _cast_checked(name, self, out)
        elif not _same_pattern(self, _checked(name, self, out)):
            raise _NewPattern(out)
        return out._vals

    try:
        inplace(self._vals, name, values)
    except _NewPattern as new:  # (a copy: the op may have saved its result for backward)
        out = new.out
        self._index, self._vals = out._index, out._vals.to(self.dtype, copy=True)
        self._coalesced = out._coalesced
    return self


def _checked(name: str, self: SparseTensor, out: Any) -> SparseTensor:
    if not isinstance(out, SparseTensor) or out.layout is not self.layout:
        raise ArgumentTypeError(f"{name}: the result ({type_name(out)} of layout "
                                f"{getattr(out, 'layout', None)!r}) is not a {self.layout!r} "
                                "tensor. Hint: use the out-of-place op")
    if out.shape != self.shape:
        raise ShapeError(f"{name}: the result's shape {tuple(out.shape)} is not the tensor's "
                         f"{tuple(self.shape)}")
    _cast_checked(name, self, out)
    return out


def _cast_checked(name: str, self: SparseTensor, out: SparseTensor) -> None:
    if out.dtype.category > self.dtype.category:  # (the dense in-place ops' rule)
        raise DTypeError(f"{name}: the result type {out.dtype.name} cannot be cast to the "
                         f"tensor's {self.dtype.name} in place (as in PyTorch)")


def _kept(self: SparseTensor, out: Any) -> bool:
    """Whether ``out`` holds ``self``'s very index tensors (its pattern by construction)."""
    return isinstance(out, SparseTensor) and out._index is self._index and \
        out.layout is self.layout and out._size == self._size


def _same_pattern(self: SparseTensor, out: SparseTensor) -> bool:
    """Whether ``out``'s indices equal ``self``'s, compared where they live (no host copy)."""
    return out._vals.shape == self._vals.shape and all(
        a is b or (a.shape == b.shape and bool(a._device.xp.array_equal(a._data, b._data)))
        for a, b in zip(self._index, out._index))
