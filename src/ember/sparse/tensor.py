"""The sparse tensor: index tensors saying where the specified elements are, and a dense
``values`` tensor holding them, in one of five layouts, as PyTorch's.

- ``ember.sparse_coo``: ``indices`` (sparse_dim, nnz) and ``values`` (nnz, *dense_shape);
  indices may repeat (uncoalesced: the element is the sum of its entries) until
  :meth:`SparseTensor.coalesce` sorts them and sums the repeats.
- ``ember.sparse_csr`` / ``ember.sparse_csc``: a 2-D matrix as ``crow_indices`` (rows + 1)
  and ``col_indices`` (nnz), or ``ccol_indices`` and ``row_indices`` by columns.
- ``ember.sparse_bsr`` / ``ember.sparse_bsc``: the same over a grid of (R, C) blocks, each
  specified block a dense (R, C) slice of ``values`` (nnz, R, C).

A :class:`SparseTensor` is its own class, not an :class:`ember.Tensor`: dense tensors' ops
never look at it, so the dense eager path pays nothing for it. Gradients flow through its
``values`` tensor (every sparse op is written with dense Ember ops on the values), and a sparse
leaf made with ``requires_grad=True`` reads its ``grad`` as PyTorch does: a sparse tensor
with the coalesced pattern of the leaf, holding the gradient at each specified element.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

import numpy as np

from ember.errors import ArgumentError, ArgumentTypeError, OpError, ShapeError, type_name
from ember.layouts import layout, sparse_bsc, sparse_bsr, sparse_coo, sparse_csc, sparse_csr
from ember.ops.dims import normalize_dim
from ember.ops.overrides import TensorLikeOperand, calling_op, outermost_op
from ember.ops.public_op import _NO_OP
from ember.size import Size
from ember.tensor import Tensor

__all__ = ["BLOCKED", "BY_COLUMNS", "BY_ROWS", "SparseOperand", "SparseTensor",
           "SparseUnsupported", "SparseUnsupportedAttribute", "check_numel", "not_supported"]

BY_ROWS = (sparse_csr, sparse_bsr)  # compressed rows: crow_indices, col_indices
BY_COLUMNS = (sparse_csc, sparse_bsc)  # compressed columns: ccol_indices, row_indices
BLOCKED = (sparse_bsr, sparse_bsc)  # values (nnz, R, C): one dense block per entry


def check_numel(op: str, size: tuple[int, ...]) -> None:
    """Refuses a sparse ``size`` of more elements than an int64 counts, as PyTorch does
    ("numel: integer multiplication overflow"): an element's row-major position (the key
    coalescing sorts by) is an int64, which would wrap and merge distinct elements."""
    if math.prod(size) > 2**63 - 1:
        raise ShapeError(f"{op}: size {tuple(size)} has {math.prod(size)} elements, more than "
                         "an int64 counts (2**63 - 1), as PyTorch refuses ('numel: integer "
                         "multiplication overflow')")


class SparseOperand(TensorLikeOperand, NotImplementedError, AttributeError):
    """A sparse tensor met where a dense array or tensor internals were needed: the ops that
    take sparse operands (``add``, ``sub``, ``mul``, ``div``, ``floor_divide``, ``matmul``)
    hand the call to :mod:`ember.sparse.elementwise`, the others raise
    :func:`not_supported`'s error; met outside an op, it is the error (naming the op). An
    AttributeError too, so ``hasattr(s, "_data")`` answers False."""

    def __str__(self) -> str:
        op = outermost_op(self.__traceback__)
        return (f"{op}: not supported for sparse tensors. Hint: call .to_dense() first, or see "
                "docs/sparse.md for the sparse ops Ember has")


class SparseUnsupported(TensorLikeOperand, NotImplementedError):
    """:func:`not_supported`'s error: a dense op called with a sparse tensor. Met inside an op
    that hands sparse operands over (``narrow`` in ``ember.narrow_copy``), the op is handed
    over. Not an AttributeError: ``hasattr(s, "stride")`` is True, as PyTorch's."""


class SparseUnsupportedAttribute(SparseUnsupported, AttributeError):
    """A dense property read on a sparse tensor (``s.H``): an AttributeError too, so
    ``hasattr(s, name)`` and ``getattr(s, name, default)`` answer rather than raise."""


class SparseTensor:
    """A sparse tensor in layout ``ember.sparse_coo``, ``sparse_csr``, ``sparse_csc``,
    ``sparse_bsr`` or ``sparse_bsc``.

    Example:
        >>> s = ember.sparse_coo_tensor(ember.tensor([[0, 1], [2, 0]]),
        ...                             ember.tensor([3.0, 4.0]), (2, 3))
        >>> s.to_dense()
        tensor([[0., 0., 3.],
                [4., 0., 0.]])
    """

    __slots__ = ("layout", "_size", "_index", "_vals", "_coalesced", "__weakref__")
    is_quantized = False
    #: attributes some sparse tensors have (``T``: COO; ``H``: 2-D): name -> (whether
    #: ``s`` has it, its value); filled by :mod:`ember.sparse`, read by ``__getattr__``
    _conditional: dict[str, tuple[Callable[[Any], bool], Callable[[Any], Any]]] = {}

    def __init__(self, layout: layout, size: tuple[int, ...], index: tuple[Tensor, ...],
                 values: Tensor, coalesced: bool) -> None:
        self.layout, self._size, self._index = layout, tuple(size), index
        self._vals, self._coalesced = values, coalesced

    # -- what it is --------------------------------------------------------------------------
    @property
    def is_sparse(self) -> bool:
        """True for the COO layout (PyTorch's meaning: ``is_sparse_csr`` names CSR)."""
        return self.layout is sparse_coo

    @property
    def is_sparse_csr(self) -> bool:
        return self.layout is sparse_csr

    @property
    def shape(self) -> Size:
        return Size(self._size)

    def size(self, dim: int | None = None) -> Any:
        return self.shape if dim is None else self._size[normalize_dim(dim, self.ndim, "size")]

    def dim(self) -> int:
        return len(self._size)

    @property
    def ndim(self) -> int:
        return len(self._size)

    def numel(self) -> int:
        return int(np.prod(self._size, dtype=np.int64))

    @property
    def dtype(self) -> Any:
        return self._vals.dtype

    @property
    def device(self) -> Any:
        return self._vals.device


    def sparse_dim(self) -> int:
        return self._index[0].shape[0] if self.layout is sparse_coo else 2

    def dense_dim(self) -> int:
        return self._vals.ndim - (3 if self.layout in BLOCKED else 1)

    def _nnz(self) -> int:
        return self._vals.shape[0]

    # -- its parts -----------------------------------------------------------------------------
    def _indices(self) -> Tensor:
        self._need("_indices", sparse_coo)
        return self._index[0]

    def indices(self) -> Tensor:
        self._need("indices", sparse_coo)
        if not self._coalesced:
            raise ArgumentError("indices: cannot get the indices of an uncoalesced sparse tensor "
                                "(as in PyTorch). Hint: call .coalesce() first, or ._indices()")
        return self._index[0]

    def values(self) -> Tensor:
        if self.layout is sparse_coo and not self._coalesced:
            raise ArgumentError("values: cannot get the values of an uncoalesced sparse tensor "
                                "(as in PyTorch). Hint: call .coalesce() first, or ._values()")
        return self._vals

    def _values(self) -> Tensor:
        return self._vals

    def crow_indices(self) -> Tensor:
        self._need("crow_indices", *BY_ROWS)
        return self._index[0]

    def col_indices(self) -> Tensor:
        self._need("col_indices", *BY_ROWS)
        return self._index[1]

    def ccol_indices(self) -> Tensor:
        self._need("ccol_indices", *BY_COLUMNS)
        return self._index[0]

    def row_indices(self) -> Tensor:
        self._need("row_indices", *BY_COLUMNS)
        return self._index[1]

    def _need(self, op: str, *want: layout) -> None:
        if self.layout not in want:
            names = " or ".join(map(repr, want))
            raise ArgumentTypeError(f"{op}: expected a {names} tensor, got layout {self.layout!r}")

    def is_coalesced(self) -> bool:
        self._need("is_coalesced", sparse_coo)
        return self._coalesced

    # -- autograd ------------------------------------------------------------------------------
    @property
    def requires_grad(self) -> bool:
        return self._vals.requires_grad

    @requires_grad.setter
    def requires_grad(self, value: bool) -> None:  # (checked as a tensor's: a leaf, a bool)
        self._vals.requires_grad = value

    @property
    def is_leaf(self) -> bool:
        return self._vals._node is None

    @property
    def grad_fn(self) -> Any:
        return self._vals.grad_fn

    @property
    def data(self) -> SparseTensor:
        """The same pattern and values, cut from the graph (as :meth:`detach`)."""
        return self.detach()

    @data.setter
    def data(self, value: Any) -> None:
        """``value``'s pattern and values put in this tensor, which keeps its autograd state
        (PyTorch's ``set_data``: a sparse tensor of this layout, any shape and dtype)."""
        if not isinstance(value, SparseTensor) or value.layout is not self.layout:
            raise ArgumentTypeError(f"data: a {self.layout!r} tensor's data must be a "
                                    f"{self.layout!r} tensor, got {type_name(value)} of layout "
                                    f"{getattr(value, 'layout', None)!r} (as PyTorch's "
                                    "set_data). Hint: convert it first (to_sparse / to_dense)")
        self._vals.data = value._vals
        self._index, self._size, self._coalesced = value._index, value._size, value._coalesced

    def requires_grad_(self, requires_grad: bool = True) -> SparseTensor:
        self._vals.requires_grad_(requires_grad)
        return self

    def detach(self) -> SparseTensor:
        return SparseTensor(self.layout, self._size, self._index, self._vals.detach(),
                            self._coalesced)

    @property
    def grad(self) -> SparseTensor | None:
        """The gradient of a sparse leaf: sparse, with the leaf's coalesced pattern (PyTorch's
        masked gradient; repeated entries all carry the element's gradient)."""
        return self.gradient_of(self._vals.grad)

    def gradient_of(self, g: Tensor | None) -> SparseTensor | None:
        """The sparse gradient whose values' gradient is ``g`` (None for None), as
        :attr:`grad` gives it."""
        if g is None:
            return None
        if self.layout is not sparse_coo or self._coalesced:
            return SparseTensor(self.layout, self._size, self._index, g, self._coalesced)
        from ember.sparse.convert import coalesced_order

        unique, first = coalesced_order(self)
        return SparseTensor(sparse_coo, self._size, (unique,), g[first], True)

    @grad.setter
    def grad(self, value: Any) -> None:
        if value is not None:
            raise ArgumentError("grad: only None can be assigned to a sparse tensor's grad")
        self._vals.grad = None

    # -- in place ------------------------------------------------------------------------------
    def zero_(self) -> SparseTensor:
        """No specified elements left (PyTorch's ``zero_`` of a sparse tensor), in place."""
        from ember.sparse.convert import empty_index

        self._index = empty_index(self.layout, self._size, tuple(self._vals.shape[1:]),
                                  self._vals.device)
        self._vals = self._vals[:0].detach()
        self._coalesced = True
        return self

    def fill_(self, value: Any) -> SparseTensor:
        """Every specified element set to ``value``, in place (the pattern kept); compressed
        layouts only, as PyTorch's (a COO tensor refuses).

        Example:
            >>> ember.eye(2).to_sparse_csr().fill_(5).values()
            tensor([5., 5.])
        """
        if self.layout is sparse_coo:
            raise SparseUnsupported(f"fill_: not supported for {self.layout!r} tensors (as in "
                                    "PyTorch: compressed layouts only). Hint: s.to_sparse_csr()"
                                    ".fill_(v), or s.coalesce().values().fill_(v)")
        self._vals.fill_(value)
        return self

    # -- everything else -------------------------------------------------------------------------
    def __len__(self) -> int:
        return self._size[0]

    def __repr__(self) -> str:
        from ember.sparse.printing import sparse_repr

        return sparse_repr(self)

    def __float__(self) -> float:  # (how an op meets an operand that is not a tensor)
        raise SparseOperand()

    __int__ = __complex__ = __float__

    def __getitem__(self, index: Any) -> Any:
        """``s[i]``, ``s[i, j]``, ``s[:, j]``: see :func:`ember.sparse.select.getitem`."""
        if calling_op() != _NO_OP:  # (a dense op reading it as an array: ``dense.copy_(s)``)
            raise SparseOperand()
        from ember.sparse.select import getitem

        return getitem(self, index)

    __bool__ = __float__  # (else NumPy's bool conversion finds __len__: a true scalar)

    def __getattr__(self, name: str) -> Any:
        if name in ("_data", "_device"):  # a dense op reading a tensor's internals
            raise SparseOperand()
        has, read = self._conditional.get(name, (None, None))
        if has is not None and has(self):
            return read(self)
        if isinstance(getattr(SparseTensor, name, None), property):
            _property_failed(self, name)
        if hasattr(Tensor, name) and not name.startswith("_"):  # a dense op: say so
            if callable(getattr(Tensor, name)):  # (a method: it exists, calling it raises)
                return _refusing(name, self)
            raise SparseUnsupportedAttribute(*not_supported(name, self).args)
        raise AttributeError(f"'SparseTensor' object has no attribute {name!r}")


# read from the values, as PyTorch's sparse tensors answer them
_FROM_VALUES = ("is_cpu", "is_cuda", "is_meta", "is_nested", "is_mkldnn", "is_xpu", "is_mps",
                "is_ipu", "is_xla", "is_vulkan", "is_maia", "is_mtia", "itemsize",
                "retains_grad", "name", "volatile")
for _name in _FROM_VALUES:
    setattr(SparseTensor, _name, property(lambda self, _n=_name: getattr(self._vals, _n)))
for _name in ("element_size", "get_device"):  # (methods read from the values, as PyTorch's)
    setattr(SparseTensor, _name, lambda self, _n=_name: getattr(self._vals, _n)())
SparseTensor.nelement = SparseTensor.numel


def _is_contiguous(self: SparseTensor, memory_format: Any = None) -> bool:
    """``S.is_contiguous()``: False for a COO tensor, as PyTorch's (other layouts raise)."""
    if self.layout is not sparse_coo:
        raise not_supported("is_contiguous", self)
    return False


SparseTensor.is_contiguous = _is_contiguous


def _property_failed(s: SparseTensor, name: str) -> None:
    """A property of ``s`` raised AttributeError (Python then calls ``__getattr__``): a bug
    in it, surfaced rather than read as "not supported"."""
    try:
        getattr(SparseTensor, name).fget(s)
    except AttributeError as bug:
        raise OpError(f"SparseTensor.{name}: its getter raised {bug!r} (an internal error; "
                      "please report it)") from bug


def not_supported(op: str, s: SparseTensor) -> SparseUnsupported:
    """The error of a dense op given a sparse tensor: names the op and layout, hints
    ``.to_dense()`` (a :class:`SparseUnsupported`)."""
    return SparseUnsupported(f"{op}: not supported for {s.layout!r} tensors (shape "
                             f"{tuple(s.shape)}, nnz={s._nnz()}). Hint: call .to_dense() "
                             "first, or see docs/sparse.md for the sparse ops Ember has")


def _refusing(name: str, s: SparseTensor) -> Any:
    """The dense method ``name`` read on ``s``: a function raising :func:`not_supported`."""
    def refuse(*args: Any, **kwargs: Any) -> Any:
        raise not_supported(name, s)
    refuse.__name__ = refuse.__qualname__ = name
    return refuse
