"""``as_sparse_gradcheck``: PyTorch's wrapper that lets ``gradcheck`` (or ``gradgradcheck``)
take functions of sparse tensors, by handing it each sparse input's dense ``values`` and
rebuilding the sparse tensor inside."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from ember.dtypes import bool_
from ember.layouts import sparse_coo
from ember.ops.creation import ones
from ember.sparse.tensor import BLOCKED, SparseTensor

__all__ = ["as_sparse_gradcheck"]


class _Packed:
    """A sparse input, as its pattern (gradcheck's argument after it is its values)."""

    __slots__ = ("layout", "size", "index", "coalesced")

    def __init__(self, s: SparseTensor) -> None:
        self.layout, self.size, self.index, self.coalesced = \
            s.layout, s._size, s._index, s._coalesced


def _pack(inputs: Any, masked: bool) -> tuple:
    """``inputs`` with each sparse tensor that requires grad replaced by (pattern, values):
    all its elements specified unless ``masked``, as PyTorch's."""
    out: list[Any] = []
    for x in inputs if isinstance(inputs, (list, tuple)) else (inputs,):
        if not (isinstance(x, SparseTensor) and x.requires_grad):
            out.append(x)
            continue
        if not masked:  # every element a specified one (a zero gradient is checked too)
            every = ones(*x.shape, dtype=bool_).to_sparse(
                layout=x.layout, blocksize=tuple(x._vals.shape[1:3]) if x.layout in BLOCKED
                else None, **({"sparse_dim": x.sparse_dim()} if x.layout is sparse_coo else {}))
            x = x.to_dense().detach().sparse_mask(every)
        out.extend((_Packed(x), x._vals.detach().requires_grad_(True)))
    return tuple(out)


def _unpack(args: tuple) -> list:
    out, rest = [], list(args)
    while rest:
        x = rest.pop(0)
        if isinstance(x, _Packed):
            x = SparseTensor(x.layout, x.size, x.index, rest.pop(0), x.coalesced)
        out.append(x)
    return out


def as_sparse_gradcheck(gradcheck: Callable) -> Callable:
    """``gradcheck`` (or ``gradgradcheck``, or a ``functools.partial`` of one) extended to
    functions with sparse inputs and outputs: a sparse input that requires grad is checked
    through all its elements (only its specified ones with ``masked=True``), a sparse output
    through its dense form. The wrapped check itself sees dense tensors only.

    Example:
        >>> check = ember.sparse.as_sparse_gradcheck(ember.autograd.gradcheck)
        >>> x = ember.tensor([[0.0, 1.0], [2.0, 3.0]], dtype=ember.float64).to_sparse()
        >>> check(lambda x: x.to_sparse_csr(), x.requires_grad_(True))
        True
    """
    def gradcheck_with_sparse_support(func: Callable, inputs: Any, **kwargs: Any) -> Any:
        masked = kwargs.pop("masked", False)

        def dense_func(*args: Any) -> Any:
            outputs = func(*_unpack(args))
            many = isinstance(outputs, (list, tuple))
            dense = [o.to_dense() if isinstance(o, SparseTensor) and o.requires_grad else o
                     for o in (outputs if many else (outputs,))]
            return tuple(dense) if many else dense[0]

        return gradcheck(dense_func, _pack(inputs, masked), **kwargs)

    return gradcheck_with_sparse_support
