"""Sparse tensors (``ember.sparse_coo``, ``sparse_csr``, ``sparse_csc``, ``sparse_bsr``,
``sparse_bsc``) and ``torch.sparse``'s ops on them: see docs/sparse.md.

Sparse tensors belong to the core (beside ``ember.ops``, which they are written with); the
dense ``Tensor`` methods that make or read them (``to_sparse``, ``to_dense``,
``sparse_mask``) are bound here.

Example:
    >>> s = ember.tensor([[0.0, 2.0], [3.0, 0.0]]).to_sparse()
    >>> s._nnz(), s.layout
    (2, ember.sparse_coo)
"""

from __future__ import annotations

from typing import Any

from ember.dtypes import int64
from ember.errors import ArgumentError, ArgumentTypeError, ShapeError, type_name
from ember.layouts import (
    layout,
    sparse_bsc,
    sparse_bsr,
    sparse_coo,
    sparse_csc,
    sparse_csr,
    strided,
)
from ember.ops.creation import NO_SIZE, given_size, zeros
from ember.ops.dims import normalize_dims
from ember.ops.shape import read_sizes
from ember.sparse import convert as _convert
from ember.sparse import elementwise as _elementwise
from ember.sparse.construct import (
    sparse_bsc_tensor,
    sparse_bsr_tensor,
    sparse_compressed_tensor,
    sparse_coo_tensor,
    sparse_csc_tensor,
    sparse_csr_tensor,
)
from ember.sparse.elementwise import add
from ember.sparse.gradcheck import as_sparse_gradcheck
from ember.sparse.inplace import copy_, in_place
from ember.sparse.invariants import check_sparse_tensor_invariants
from ember.sparse.ops import (
    addmm,
    any_,
    bmm,
    log_softmax,
    matmul,
    mm,
    norm,
    softmax,
    sparse_mask,
    sum,
    with_values,
)
from ember.sparse.ops import read_dtype as _read_dtype
from ember.sparse.ops import transpose as _transpose
from ember.sparse.patterned import sampled_addmm, spdiags
from ember.sparse.row_products import smm as _smm
from ember.sparse.row_products import sspaddmm as _sspaddmm
from ember.sparse.select import index_select, movedim, narrow_copy, permute, select, unsqueeze
from ember.sparse.tensor import SparseTensor, not_supported
from ember.sparse.unary import UNARY, same_pattern
from ember.tensor import Tensor

__all__ = ["SparseTensor", "addmm", "as_sparse_gradcheck", "check_sparse_tensor_invariants",
           "log_softmax", "mm", "sampled_addmm", "softmax", "spdiags", "sparse_bsc_tensor",
           "sparse_bsr_tensor", "sparse_compressed_tensor", "sparse_coo_tensor",
           "sparse_csc_tensor", "sparse_csr_tensor", "sum"]


def to_sparse(self: Any, sparse_dim: int | None = None, *, layout: layout | None = None,
              blocksize: Any = None, dense_dim: int | None = None) -> Any:
    """This tensor in a sparse layout (COO by default; ``sparse_dim`` leading sparse
    dimensions, or ``dense_dim`` trailing dense ones, for a hybrid COO tensor; ``blocksize``
    (R, C) for BSR/BSC); ``layout=ember.strided`` gives the dense tensor.

    Example:
        >>> ember.tensor([[0.0, 1.0]]).to_sparse(layout=ember.sparse_csr).col_indices()
        tensor([1])
        >>> ember.ones(2, 3).to_sparse(dense_dim=1).values().shape
        ember.Size([2, 3])
    """
    target = sparse_coo if layout is None else layout
    if target not in (strided, sparse_coo, sparse_csr, sparse_csc, sparse_bsr, sparse_bsc):
        raise ArgumentError(f"to_sparse: layout must be ember.strided, sparse_coo, sparse_csr, "
                            f"sparse_csc, sparse_bsr or sparse_bsc, got {target!r}")
    if blocksize is not None and target not in (sparse_bsr, sparse_bsc):
        raise ArgumentError(f"to_sparse: blocksize is for the block layouts (ember.sparse_bsr, "
                            f"sparse_bsc), got layout {target!r} (as in PyTorch)")
    if dense_dim and target not in (strided, sparse_coo):
        raise NotImplementedError("to_sparse: dense_dim (hybrid compressed layouts) is not "
                                  "supported. Hint: use layout=ember.sparse_coo")
    if dense_dim is not None and target is sparse_coo:
        if not 0 <= dense_dim <= self.ndim:
            raise ArgumentError(f"to_sparse: dense_dim must be in [0, {self.ndim}] for a tensor "
                                f"of shape {tuple(self.shape)}, got {dense_dim}")
        if sparse_dim is not None and sparse_dim + dense_dim != self.ndim:
            raise ArgumentError(f"to_sparse: sparse_dim {sparse_dim} and dense_dim {dense_dim} "
                                f"must add up to the tensor's {self.ndim} dimensions")
        sparse_dim = self.ndim - dense_dim
    return _convert.convert(self, target, sparse_dim, blocksize)


def to_dense(self: Any, dtype: Any = None, *, masked_grad: bool | None = None) -> Tensor:
    """The dense tensor (itself for a dense tensor); its gradient reaches the values.

    Example:
        >>> ember.sparse_coo_tensor([[1]], [2.0], (3,)).to_dense()
        tensor([0., 2., 0.])
    """
    dtype = _read_dtype("to_dense", dtype)
    out = _convert.convert(self, strided)
    return out if dtype is None else out.to(dtype)


def _to(target: layout) -> Any:
    def convert(self: Any, dense_dim: int | None = None) -> SparseTensor:
        if dense_dim:
            raise NotImplementedError(f"to_{target.name}: dense_dim is not supported")
        return _convert.convert(self, target)
    convert.__name__ = convert.__qualname__ = f"to_{target.name}"
    convert.__doc__ = f"This tensor in layout ``ember.{target.name}``."
    return convert


def _to_blocks(target: layout) -> Any:
    def convert(self: Any, blocksize: Any, dense_dim: int | None = None) -> SparseTensor:
        if dense_dim:
            raise NotImplementedError(f"to_{target.name}: dense_dim is not supported")
        return _convert.convert(self, target, blocksize=blocksize)
    convert.__name__ = convert.__qualname__ = f"to_{target.name}"
    convert.__doc__ = (f"This tensor in layout ``ember.{target.name}``, of ``blocksize`` (R, C) "
                       "blocks (an int for square ones); the shape must be a multiple of it.")
    return convert


def _refused(fn_name: str) -> Any:
    """An operator that raises naming ``fn_name``, as PyTorch's on sparse tensors (a
    comparison rather than Python's identity test, ``%`` or ``&`` rather than a bare
    TypeError)."""
    def op(self: SparseTensor, other: Any = None) -> Any:
        raise not_supported(fn_name, self)
    op.__name__ = f"__{fn_name}__"
    return op


def _moved(name: str) -> Any:
    """``S.to`` / ``S.cpu`` / ``S.cuda`` / ``S.float`` and the other dtype methods: the dense
    method applied to the values (the indices follow a device move); ``S`` itself when
    nothing changes, as PyTorch's."""
    def move(self: SparseTensor, *args: Any, **kwargs: Any) -> SparseTensor:
        values = getattr(self._vals, name)(*args, **kwargs)
        if values is self._vals:
            return self
        index = self._index if values.device == self._vals.device else \
            tuple(i.to(values.device) for i in self._index)
        return SparseTensor(self.layout, self._size, index, values, self._coalesced)
    move.__name__ = move.__qualname__ = name
    return move


def _t(self: SparseTensor) -> SparseTensor:
    if self.sparse_dim() > 2 or self.dense_dim():
        raise ShapeError(f"t() expects a tensor with <= 2 sparse and 0 dense dimensions, but "
                         f"got {self.sparse_dim()} sparse and {self.dense_dim()} dense "
                         "dimensions (as PyTorch). Hint: use transpose(dim0, dim1)")
    return self if self.ndim < 2 else _transpose(self, 0, 1)


for _name, _fn in {
    "to_sparse": to_sparse, "to_dense": to_dense, "to_sparse_coo": _to(sparse_coo),
    "to_sparse_csr": _to(sparse_csr), "to_sparse_csc": _to(sparse_csc),
    "to_sparse_bsr": _to_blocks(sparse_bsr), "to_sparse_bsc": _to_blocks(sparse_bsc),
}.items():
    setattr(Tensor, _name, _fn)
    setattr(SparseTensor, _name, _fn)
Tensor.sparse_mask = sparse_mask
SparseTensor.coalesce = lambda self: _convert.coalesce(self)
SparseTensor.__mul__ = SparseTensor.__rmul__ = SparseTensor.mul = _elementwise.mul
SparseTensor.__truediv__ = SparseTensor.div = _elementwise.div
SparseTensor.__rtruediv__ = lambda self, other: _elementwise.div(other, self)
SparseTensor.__rfloordiv__ = lambda self, other: _elementwise.floor_divide(other, self)
SparseTensor.__floordiv__ = SparseTensor.floor_divide = _elementwise.floor_divide
SparseTensor.__pow__ = SparseTensor.pow = _elementwise.pow
SparseTensor.__neg__ = SparseTensor.negative = UNARY["neg"]
SparseTensor.__pos__ = UNARY["positive"]
for _name, _fn in UNARY.items():
    setattr(SparseTensor, _name, property(_fn) if _name in ("real", "imag") else _fn)
SparseTensor.abs = SparseTensor.__abs__ = _elementwise.abs
SparseTensor.__add__ = SparseTensor.add = _elementwise.add
SparseTensor.__sub__ = SparseTensor.sub = _elementwise.sub
SparseTensor.__radd__ = lambda self, other: _elementwise.add(other, self)
SparseTensor.__rsub__ = lambda self, other: _elementwise.sub(other, self)
SparseTensor.transpose = _transpose
SparseTensor.permute, SparseTensor.index_select = permute, index_select
SparseTensor.narrow_copy, SparseTensor.unsqueeze = narrow_copy, unsqueeze
SparseTensor.select = select
SparseTensor.movedim = SparseTensor.moveaxis = movedim
SparseTensor.sparse_mask = sparse_mask
SparseTensor.t = _t
SparseTensor.mT = property(lambda self: _transpose(self, -2, -1),  # noqa: N802 - torch's name
                           doc="The last two dimensions swapped.")
SparseTensor.mH = property(lambda self: _transpose(self.conj(), -2, -1),  # noqa: N802
                           doc="The last two dimensions swapped, conjugated.")


def _reversed_dims(self: SparseTensor) -> SparseTensor:
    """``S.T``: a COO tensor's dimensions reversed (another layout has none, as PyTorch's)."""
    return permute(self, tuple(reversed(range(self.ndim))))


SparseTensor._conditional.update(
    T=(lambda s: s.layout is sparse_coo, _reversed_dims),  # ``S.H``: a matrix's adjoint
    H=(lambda s: s.ndim == 2, lambda s: s.mH))
SparseTensor.to, SparseTensor.cpu, SparseTensor.cuda = _moved("to"), _moved("cpu"), _moved("cuda")
SparseTensor.clone = same_pattern("clone")
for _name in ("double", "float", "half", "bfloat16", "cfloat", "cdouble", "bool", "byte", "char",
              "short", "int", "long"):
    setattr(SparseTensor, _name, _moved(_name))
for _name in ("eq", "ne", "lt", "le", "gt", "ge"):  # (__hash__ stays the identity's)
    setattr(SparseTensor, f"__{_name}__", _refused(_name))
for _op, _name in (("mod", "remainder"), ("and", "bitwise_and"), ("or", "bitwise_or"),
                   ("xor", "bitwise_xor"), ("lshift", "bitwise_left_shift"),
                   ("rshift", "bitwise_right_shift")):  # (both sides, as PyTorch refuses)
    setattr(SparseTensor, f"__{_op}__", _refused(_name))
    setattr(SparseTensor, f"__r{_op}__", _refused(_name))
SparseTensor.__invert__ = _refused("bitwise_not")
SparseTensor.__rpow__ = _refused("pow")  # (a number to a sparse power)
SparseTensor.__matmul__ = SparseTensor.matmul = SparseTensor.mm = matmul
for _name in (*UNARY, "abs", "add", "sub", "mul", "div", "pow"):
    if _name not in ("real", "imag", "conj", "positive"):
        setattr(SparseTensor, f"{_name}_", in_place(f"{_name}_", getattr(SparseTensor, _name)))
SparseTensor.copy_ = copy_


def _mv(self: SparseTensor, vec: Tensor) -> Tensor:
    """``S.mv(v)``: a 2-D sparse matrix times a 1-D dense vector of its column count."""
    if not isinstance(vec, Tensor):
        raise ArgumentTypeError(f"mv: vec must be a dense tensor, got {type_name(vec)}")
    if self.ndim != 2 or tuple(vec.shape) != self.shape[1:]:
        raise ShapeError(f"mv: expected a 2-D sparse matrix and a 1-D vector of its column "
                         f"count, got shapes {tuple(self.shape)} and {tuple(vec.shape)}")
    return matmul(self, vec)


SparseTensor.mv, SparseTensor.bmm = _mv, bmm


def _item(self: SparseTensor) -> Any:
    """``S.item()``: the one element of a one-element sparse tensor, as PyTorch's (0 when it is
    not specified)."""
    if self.numel() != 1:
        raise ArgumentError(f"item(): a tensor with {self.numel()} elements cannot be converted "
                            "to a Python scalar; index it first")
    return self.to_dense().item()


SparseTensor.item = _item


def _new_zeros(self: SparseTensor, *sizes: Any, size: Any = NO_SIZE, dtype: Any = None,
               device: Any = None, requires_grad: bool = False, layout: Any = None,
               pin_memory: bool = False) -> Any:
    """``S.new_zeros(size)``: a sparse tensor of ``size`` with no specified elements, in
    ``S``'s layout (a block layout keeps ``S``'s blocksize) or ``layout`` (``ember.strided``:
    dense zeros), ``S``'s dtype and device unless given, as PyTorch's.

    Example:
        >>> s = ember.eye(2).to_sparse()
        >>> s.new_zeros(2, 3)._nnz(), tuple(s.new_zeros(size=(2, 3)).shape)
        (0, (2, 3))
    """
    size = tuple(read_sizes(given_size("new_zeros", sizes, size)))
    dtype = dtype or self.dtype
    device, made = device or self.device, self.layout if layout is None else layout
    if not isinstance(made, type(strided)):
        raise ArgumentTypeError(f"new_zeros: layout must be an ember layout (ember.strided, "
                                f"ember.sparse_coo, ...), got {type_name(made)}")
    if made is strided:
        return zeros(size, dtype=dtype, device=device, requires_grad=requires_grad,
                     pin_memory=pin_memory)
    if pin_memory:
        raise ArgumentError(f"new_zeros: only dense CPU tensors can be pinned, got "
                            f"pin_memory=True for a {made!r} result (as PyTorch)")
    blocked = (sparse_bsr, sparse_bsc)
    if made in blocked and self.layout not in blocked:
        raise ArgumentError(f"new_zeros: a {made!r} result needs a blocksize, which a "
                            f"{self.layout!r} tensor has not. Hint: convert the result with "
                            "to_sparse(layout=..., blocksize=...)")
    blocks = tuple(self._vals.shape[1:3]) if made in blocked else ()
    made = _convert.empty_sparse("new_zeros", made, size, dtype, device, blocks)
    return made.requires_grad_(requires_grad)


def _is_same_size(self: SparseTensor, other: Any) -> bool:
    """``S.is_same_size(other)``: whether the shapes match (any layout, as PyTorch's)."""
    if not isinstance(other, (Tensor, SparseTensor)):
        raise ArgumentTypeError(f"is_same_size(): argument 'other' (position 1) must be a "
                                f"tensor (dense or sparse), not {type_name(other)}")
    return tuple(self.shape) == tuple(other.shape)


_new_zeros.__name__, _new_zeros.__qualname__ = "new_zeros", "SparseTensor.new_zeros"
SparseTensor.new_zeros, SparseTensor.is_same_size = _new_zeros, _is_same_size


def _type(self: SparseTensor, dtype: Any = None, non_blocking: bool = False,
          **kwargs: Any) -> Any:
    """``S.type()``: a COO tensor's type name (``'ember.sparse.FloatTensor'``, as PyTorch's
    ``'torch.sparse.FloatTensor'``); ``S.type(dtype)`` (a dtype, a legacy type or its name,
    sparse or not): ``S`` in that dtype, still sparse.

    Example:
        >>> s = ember.ones(2).to_sparse()
        >>> s.type(), s.type("torch.sparse.DoubleTensor").dtype
        ('ember.sparse.FloatTensor', ember.float64)
    """
    if dtype is None:
        if self.layout is not sparse_coo:  # (PyTorch's raises "Unimplemented backend")
            raise not_supported("type", self)
        return self._vals.type().replace("ember.", "ember.sparse.", 1)
    if isinstance(dtype, str):
        dtype = dtype.replace(".sparse.", ".", 1)
    dtype = self._vals.detach()[:0].type(dtype, non_blocking, **kwargs).dtype  # (no values cast)
    return self if dtype == self.dtype else self.to(dtype)  # (``self`` as PyTorch's)


SparseTensor.type = _type
SparseTensor.norm = norm
SparseTensor.any = any_
SparseTensor.smm, SparseTensor.sspaddmm = _smm, _sspaddmm  # (``s.smm(d)``, as PyTorch's)


def _sum_method(self: SparseTensor, dim: Any = None, keepdim: bool = False,
                dtype: Any = None) -> Any:
    """``s.sum(dim)``: as :func:`ember.sparse.sum`, with the dense sum's dtype (integers and
    bools add up in int64, entry by entry, as PyTorch's method does: repeated True entries
    count each; ``torch.sparse.sum`` keeps the dtype over a dim, over all coalesces first);
    ``keepdim`` keeps each summed dimension with size 1 (uncoalesced, as PyTorch's)."""
    dtype = _read_dtype("sparse.sum", dtype)
    if keepdim:
        kept = _kept(self, _sum_method(self, dim, dtype=dtype), dim)
        return kept if self.layout is not sparse_csr else _as_csr(kept, self._nnz() > 0)
    if dim is None and dtype is not None and dtype != self.dtype:  # (each entry cast first,
        return _sum_method(self.to(dtype))  # as torch's method: no int8 wrap, no bool merge)
    if dtype is None and not (self.dtype.is_floating_point or self.dtype.is_complex):
        return self._vals.to(int64).sum() if dim is None else sum(self, dim, int64)
    return sum(self, dim, dtype)


def _kept(s: SparseTensor, out: Any, dim: Any) -> Any:
    """``out``, ``s`` summed over ``dim``, with the summed dimensions back as size 1, as
    PyTorch's: ``unsqueeze``d in ascending order (so a dense one, where no dense dimension
    is left, comes back sparse)."""
    for d in normalize_dims(dim, s.ndim, "sum"):
        out = unsqueeze(out, d) if isinstance(out, SparseTensor) else out.unsqueeze(d)
    return out


def _as_csr(kept: Any, specified: bool) -> SparseTensor:
    """A CSR matrix's ``sum(dim, keepdim=True)`` in CSR, as PyTorch's (a full sum: one entry
    where the matrix had ``specified`` ones)."""
    if isinstance(kept, SparseTensor):
        return kept.to_sparse_csr()
    n = int(specified)
    return sparse_csr_tensor(Tensor([0, n]).to(int64), Tensor([0] * n).to(int64),
                             kept.reshape(1)[:n], (1, 1))


SparseTensor.sum = _sum_method
