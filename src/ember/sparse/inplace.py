"""In-place ops of sparse tensors, as PyTorch's: ``s.add_(t)``, ``s.mul_(2)``, ``s.neg_()``,
``s.sqrt_()``, ``s.copy_(t)``, … compute the out-of-place sparse op and put its pattern and
values in ``s`` (its layout and dtype kept: a result of another dtype raises, as PyTorch's).
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
from ember.sparse.tensor import SparseTensor

__all__ = ["copy_", "in_place"]


def in_place(name: str, compute: Callable[..., Any]) -> Callable[..., SparseTensor]:
    """The in-place method ``name`` (``sqrt_``) of the out-of-place sparse op ``compute``."""
    def op(self: SparseTensor, *args: Any, **kwargs: Any) -> SparseTensor:
        return _become(name, self, compute(self, *args, **kwargs))
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
    return _become("copy_", self, src.to(self.dtype), cast=True)


def _become(name: str, self: SparseTensor, out: Any, cast: bool = False) -> SparseTensor:
    if self.requires_grad and self.is_leaf:
        raise ArgumentError(f"{name}: a leaf sparse tensor that requires grad cannot be "
                            "changed in place (as in PyTorch). Hint: use the out-of-place op")
    if not isinstance(out, SparseTensor) or out.layout is not self.layout:
        raise ArgumentTypeError(f"{name}: the result ({type_name(out)} of layout "
                                f"{getattr(out, 'layout', None)!r}) is not a {self.layout!r} "
                                "tensor. Hint: use the out-of-place op")
    if out.shape != self.shape:
        raise ShapeError(f"{name}: the result's shape {tuple(out.shape)} is not the tensor's "
                         f"{tuple(self.shape)}")
    if out.dtype != self.dtype and not cast:
        raise DTypeError(f"{name}: the result type {out.dtype.name} cannot be cast to the "
                         f"tensor's {self.dtype.name} in place (as in PyTorch)")
    self._index, self._vals, self._coalesced = out._index, out._vals, out._coalesced
    return self
