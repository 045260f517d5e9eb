"""Ops on sparse tensors, as ``torch.sparse``'s: products (``mm``, ``addmm``, ``@``),
reductions (``sum``), ``softmax``/``log_softmax`` over the specified elements,
``sparse_mask`` and ``transpose`` (the arithmetic is :mod:`ember.sparse.elementwise`'s).
Every one is written with dense Ember ops on the values, so each is differentiable in them.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ember import dtypes
from ember.errors import (
    ArgumentError,
    ArgumentTypeError,
    DeviceError,
    DTypeError,
    ShapeError,
    type_name,
)
from ember.layouts import sparse_bsc, sparse_bsr, sparse_coo, sparse_csc, sparse_csr
from ember.ops.creation import from_numpy, zeros
from ember.ops.dims import normalize_dim, normalize_dims
from ember.ops.gather import index_add, index_select
from ember.ops.linalg import mm as dense_mm
from ember.ops.linalg_scaled import scaled_sum
from ember.ops.norms import vector_norm
from ember.ops.select import where
from ember.ops.unary import exp, log
from ember.sparse.convert import (
    coalesce,
    coo_index,
    entry_values,
    linear_index,
    long_index,
    to_coo,
)
from ember.sparse.mm_reduce import mm_reduce
from ember.sparse.spgemm import sparse_sparse_mm
from ember.sparse.spmm import spmm
from ember.sparse.tensor import BLOCKED, SparseTensor, not_supported
from ember.tensor import Tensor

__all__ = ["addmm", "any_", "log_softmax", "mm", "norm", "one_device", "softmax", "sparse_mask",
           "sum", "transpose", "with_values"]


def read_dtype(op: str, dtype: Any) -> dtypes.DType | None:
    """``dtype`` read as the dense reductions read it (a name too: ``"float64"``), or an
    error naming ``op``; None stays None."""
    if dtype is None:
        return None
    try:
        return dtypes.to_dtype(dtype)
    except DTypeError as e:
        raise DTypeError(f"{op}: {e}") from None


def _sparse(op: str, s: Any) -> SparseTensor:
    """``s``, or an error naming ``op`` where it is not a sparse tensor."""
    if isinstance(s, SparseTensor):
        return s
    got = "a dense Tensor" if isinstance(s, Tensor) else type(s).__name__
    raise ArgumentTypeError(f"{op}: expected a sparse tensor, got {got}. Hint: make one with "
                            ".to_sparse() (or .to_sparse_csr())")


def one_device(op: str, a: Any, b: Any) -> None:
    """Raise ``DeviceError`` naming ``op`` where tensors ``a`` and ``b`` (sparse or dense) are
    on different devices; a 0-d dense operand on the CPU counts as a number, as in PyTorch."""
    tensors = (Tensor, SparseTensor)
    if not (isinstance(a, tensors) and isinstance(b, tensors)) or a.device == b.device or \
            any(isinstance(x, Tensor) and not x.ndim and x.device.type == "cpu"
                for x in (a, b)):
        return
    raise DeviceError(f"{op}: expected both operands on one device, got {a.device} and "
                      f"{b.device}. Hint: move one with .to({str(a.device)!r})")


def _matrix(op: str, s: Any) -> SparseTensor:
    _sparse(op, s)
    if s.ndim != 2 or s.dense_dim():
        raise ShapeError(f"{op}: expected a 2-D sparse matrix with no dense dimensions, got "
                         f"shape {tuple(s.shape)} (dense_dim {s.dense_dim()})")
    return s


def with_values(s: SparseTensor, values: Tensor) -> SparseTensor:
    """``s``'s pattern holding ``values``."""
    return SparseTensor(s.layout, s._size, s._index, values, s._coalesced)


def mm(mat1: SparseTensor, mat2: Any, reduce: str | None = None) -> Any:
    """The product of a sparse matrix (any layout) and a dense one, dense; or of two sparse
    matrices, sparse: COO @ COO in COO, CSR or CSC @ CSR or CSC in CSR (CSC @ CSC in CSC).
    Differentiable in both (a sparse operand's gradient is sparse, with its pattern).

    A dense ``mat1`` gives ``ember.mm(mat1, mat2)``, as PyTorch's. ``reduce`` (a CSR ``mat1``
    and a dense ``mat2``): each output element reduces its row's products by ``"sum"``,
    ``"mean"``, ``"amax"``, ``"amin"`` or ``"prod"`` (0 for a row with no specified element).

    Example:
        >>> s = ember.tensor([[0.0, 2.0], [3.0, 0.0]]).to_sparse()
        >>> ember.sparse.mm(s, ember.ones(2, 1))
        tensor([[2.],
                [3.]])
        >>> ember.sparse.mm(s, s).to_dense()
        tensor([[6., 0.],
                [0., 6.]])
        >>> ember.sparse.mm(s.to_sparse_csr(), ember.ones(2, 1), "mean")
        tensor([[2.],
                [3.]])
    """
    if isinstance(mat1, Tensor) and reduce is None:
        return dense_mm(mat1, mat2)
    s = _matrix("sparse.mm", mat1)
    one_device("sparse.mm", s, mat2)
    if isinstance(mat2, SparseTensor):
        if reduce is not None:
            raise ArgumentTypeError(f"sparse.mm: reduce={reduce!r} needs a dense mat2, as "
                                    f"PyTorch's, got {mat2.layout}. Hint: mat2.to_dense()")
        return sparse_sparse_mm(s, _matrix("sparse.mm", mat2), keep_layout=True)
    if not isinstance(mat2, Tensor):
        raise ArgumentTypeError(f"sparse.mm: mat2 must be a dense or sparse tensor, got "
                                f"{type_name(mat2)}. Hint: convert it with ember.tensor(...)")
    if mat2.ndim != 2 or mat2.shape[0] != s.shape[1]:
        raise ShapeError(f"sparse.mm: {tuple(s.shape)} @ {tuple(mat2.shape)}: expected a 2-D "
                         f"dense matrix with {s.shape[1]} rows")
    if mat2.dtype is not s.dtype:
        raise DTypeError(f"sparse.mm: the sparse matrix ({s.dtype.name}) and the dense one "
                         f"({mat2.dtype.name}) must have the same dtype. Hint: convert one "
                         "with .to()")
    if reduce is not None:
        return mm_reduce(s, mat2, reduce)
    rows, cols = coo_index(s)
    return spmm(from_numpy(rows), from_numpy(cols), entry_values(s), mat2, s.shape[0])


def linear(input: Tensor, weight: SparseTensor, bias: Tensor | None = None) -> Tensor:
    """``input @ weight.T + bias`` for a sparse (out_features, in_features) ``weight`` and a
    dense ``input`` (..., in_features): dense, as ``F.linear`` with a sparse weight in
    PyTorch (whose COO form refuses a bias; Ember adds it). Differentiable in the weight's
    values, the input and the bias.

    Example:
        >>> ember.nn.functional.linear(ember.ones(4, 3), ember.eye(3)[:2].to_sparse()).shape
        ember.Size([4, 2])
    """
    if not isinstance(input, Tensor):
        raise not_supported("linear", input) if isinstance(input, SparseTensor) else \
            ArgumentTypeError(f"linear: input must be a dense tensor, got {type_name(input)}")
    w = _matrix("linear", weight)
    if input.ndim == 0 or input.shape[-1] != w.shape[1]:
        raise ShapeError(f"linear: input of shape {tuple(input.shape)} has "
                         f"{input.shape[-1] if input.ndim else 0} features but weight of shape "
                         f"{tuple(w.shape)} expects {w.shape[1]}")
    rows = input.reshape((-1, w.shape[1]))
    out = mm(w, rows.t()).t().reshape((*input.shape[:-1], w.shape[0]))
    return out if bias is None else out + bias


def addmm(input: Tensor, mat1: SparseTensor, mat2: Tensor, *, beta: float = 1.0,
          alpha: float = 1.0) -> Tensor:
    """``beta * input + alpha * (mat1 @ mat2)`` for a sparse ``mat1`` (any layout); with
    ``beta == 0`` the input is not read (its NaN and inf ignored), as PyTorch's.

    Example:
        >>> s = ember.eye(2).to_sparse()
        >>> ember.sparse.addmm(ember.ones(2, 2), s, ember.ones(2, 2), beta=0.5)
        tensor([[1.5000, 1.5000],
                [1.5000, 1.5000]])
    """
    one_device("sparse.addmm", mat1, input)
    return scaled_sum("sparse.addmm", input, mm(mat1, mat2), beta, alpha)


def matmul(input: SparseTensor, other: Any) -> Any:
    """``input @ other`` for a sparse matrix and a dense matrix or vector (dense), or a
    sparse matrix (sparse: COO @ COO is COO, CSR or CSC @ CSR or CSC is CSR, as PyTorch's)."""
    one_device("matmul", input, other)
    if isinstance(other, SparseTensor):
        return sparse_sparse_mm(_matrix("matmul", input), _matrix("matmul", other))
    if isinstance(other, Tensor) and other.ndim == 1:
        return mm(input, other.unsqueeze(1)).squeeze(1)
    return mm(input, other)


def bmm(input: SparseTensor, mat2: Any) -> Tensor:
    """``ember.bmm`` of a 3-D sparse COO batch of matrices (no dense dimensions) and a dense
    3-D batch: dense, each matrix's :func:`mm` (as PyTorch's); differentiable in both.

    Example:
        >>> s = ember.sparse_coo_tensor([[0, 1], [0, 1], [1, 0]], [2.0, 3.0], (2, 2, 2))
        >>> ember.bmm(s, ember.ones(2, 2, 1)).squeeze(-1)
        tensor([[2., 0.],
                [0., 3.]])
    """
    if input.layout is not sparse_coo or input.ndim != 3 or input.dense_dim():
        raise ShapeError(f"bmm: expected a 3-D sparse COO batch of matrices with no dense "
                         f"dimensions, got a {input.layout!r} tensor of shape "
                         f"{tuple(input.shape)} (dense_dim {input.dense_dim()}), as PyTorch")
    if not isinstance(mat2, Tensor):
        raise ArgumentTypeError(f"bmm: mat2 must be a dense tensor, got {type_name(mat2)}, "
                                "as PyTorch's sparse bmm")
    if mat2.ndim != 3 or mat2.shape[:2] != (input.shape[0], input.shape[2]):
        raise ShapeError(f"bmm: {tuple(input.shape)} @ {tuple(mat2.shape)}: expected a 3-D "
                         f"dense batch of {input.shape[0]} matrices with {input.shape[2]} rows")
    (batch, n, m), p = input.shape, mat2.shape[2]
    b, i, k = coo_index(input)  # (one block-diagonal (batch*n, batch*m) matrix, same values)
    blocks = SparseTensor(sparse_coo, (batch * n, batch * m),
                          (long_index(np.stack([b * n + i, b * m + k])),), input._vals,
                          input._coalesced)
    return mm(blocks, mat2.reshape(batch * m, p)).reshape(batch, n, p)


def sum(input: SparseTensor, dim: Any = None, dtype: Any = None) -> Any:  # noqa: A001
    """The sum of the specified elements: over all (a 0-d dense tensor; a COO tensor
    coalesced first, so an element of repeated True entries counts once) or over ``dim``:
    sparse while sparse dimensions remain, else dense (as ``torch.sparse.sum``).

    Example:
        >>> s = ember.tensor([[0.0, 2.0], [3.0, 4.0]]).to_sparse()
        >>> ember.sparse.sum(s), ember.sparse.sum(s, 0).to_dense()
        (tensor(9.), tensor([3., 6.]))
    """
    _sparse("sparse.sum", input)
    dtype = read_dtype("sparse.sum", dtype)
    if dim is None:
        values = coalesce(input)._vals if input.layout is sparse_coo else input._vals
        return (values if dtype is None else values.to(dtype)).sum()
    s = to_coo(input)  # (a block layout's values, one per element, in the index's order)
    values = s._vals if dtype is None else s._vals.to(dtype)
    dims = normalize_dims(dim, s.ndim, "sparse.sum")
    k = s.sparse_dim()
    dense_dims = [d - k + 1 for d in dims if d >= k]
    if dense_dims:
        values = values.sum(dense_dims)
    sparse_dims = [d for d in dims if d < k]
    keep = [d for d in range(k) if d not in sparse_dims]
    if not keep:
        return values.sum(0)
    index = coo_index(s)[keep]
    size = tuple(n for d, n in enumerate(s._size) if d not in dims)
    return coalesce(SparseTensor(sparse_coo, size, (from_numpy(index),), values, False))


def norm(input: SparseTensor, p: Any = "fro", dim: Any = None, keepdim: bool = False,
         dtype: Any = None) -> Tensor:
    """``S.norm(p)``: the ``p``-norm of the specified elements (a COO tensor coalesced first),
    over all dimensions, as PyTorch's (which takes no ``dim`` but all of them, no ``keepdim``
    and no ``dtype``); differentiable in the values.

    Example:
        >>> ember.tensor([[0.0, 3.0], [-4.0, 0.0]]).to_sparse().norm()
        tensor(5.)
    """
    s = _sparse("norm", input)
    if dim is not None and sorted(normalize_dims(dim, s.ndim, "norm")) != list(range(s.ndim)):
        raise ArgumentError(f"norm: a sparse tensor's norm only supports full reductions (as "
                            f"PyTorch's), so dim must be None or all of {tuple(range(s.ndim))}, "
                            f"got {dim!r}. Hint: s.to_dense().norm(p, dim)")
    if keepdim or dtype is not None:
        raise ArgumentError("norm: a sparse tensor's norm does not support keepdim=True or a "
                            "'dtype' argument (as PyTorch's). Hint: convert the values with "
                            ".to(dtype) first")
    if isinstance(p, str) and p != "fro":
        raise ArgumentError(f"norm: p={p!r} is not supported for sparse tensors (only 'fro' "
                            "and numbers). Hint: s.to_dense().norm(p)")
    values = s._vals if s.layout is not sparse_coo else coalesce(s)._vals
    return vector_norm(values, 2 if p in (None, "fro") else p)


def _groups(s: SparseTensor, dim: int) -> tuple[Tensor, int]:
    """For each entry of coalesced ``s``, the id of its line along ``dim`` (the entries that
    share every other sparse index), and the number of lines."""
    index = np.delete(coo_index(s), dim, axis=0)
    shape = tuple(n for d, n in enumerate(s._size[:s.sparse_dim()]) if d != dim)
    distinct, inverse = np.unique(linear_index(index, shape), return_inverse=True)
    return from_numpy(inverse.reshape(-1).astype(np.int64)), len(distinct)


def _log_normaliser(s: SparseTensor, dim: int,
                    op: str) -> tuple[SparseTensor, Tensor, Tensor]:
    """Coalesced ``s``, its values shifted by their line's maximum, and each entry's log of
    its line's sum of exponentials (of the shifted values), for ``op`` (its errors' name).
    Along a dense dimension of a hybrid tensor each entry's values are a line of their own,
    as PyTorch's."""
    if not (s.dtype.is_floating_point or s.dtype.is_complex):
        raise NotImplementedError(f"{op}: not implemented for {s.dtype.name} values, "
                                  "as in PyTorch. Hint: pass dtype=ember.float32")
    dim = normalize_dim(dim, s.ndim, op)
    s = coalesce(to_coo(s))
    values = s._vals
    if dim >= s.sparse_dim():
        axis = dim - s.sparse_dim() + 1
        if not values.shape[axis]:  # (lines of no values: an empty result, as PyTorch's)
            return s, values, values
        shifted = values - values.detach().amax(axis, keepdim=True)
        return s, shifted, log(exp(shifted).sum(axis, keepdim=True))
    group, n = _groups(s, dim)
    peak = np.full((n, *values.shape[1:]), -np.inf, dtype=values.numpy(force=True).dtype)
    np.maximum.at(peak, group.numpy(), values.detach().numpy())
    shifted = values - index_select(from_numpy(peak), 0, group)  # a constant: no gradient
    totals = index_add(zeros(n, *values.shape[1:], dtype=values.dtype), 0, group, exp(shifted))
    return s, shifted, log(index_select(totals, 0, group))


def softmax(input: SparseTensor, dim: int, *, dtype: Any = None) -> SparseTensor:
    """Softmax over the specified elements of each line along ``dim`` (unspecified elements
    count as -inf: they stay unspecified), sparse.

    Example:
        >>> s = ember.tensor([[0.0, 1.0], [2.0, 0.0]]).to_sparse()
        >>> ember.sparse.softmax(s, 1).to_dense()
        tensor([[0., 1.],
                [1., 0.]])
    """
    _sparse("sparse.softmax", input)
    dtype = read_dtype("sparse.softmax", dtype)
    s, shifted, log_total = _log_normaliser(input if dtype is None else _cast(input, dtype), dim,
                                            "sparse.softmax")
    return with_values(s, exp(shifted - log_total))


def log_softmax(input: SparseTensor, dim: int, *, dtype: Any = None) -> SparseTensor:
    """``log`` of :func:`softmax`, computed stably.

    Example:
        >>> s = ember.tensor([[0.0, 1.0], [1.0, 1.0]]).to_sparse()
        >>> ember.sparse.log_softmax(s, 1).values()
        tensor([ 0.0000, -0.6931, -0.6931])
    """
    _sparse("sparse.log_softmax", input)
    dtype = read_dtype("sparse.log_softmax", dtype)
    s, shifted, log_total = _log_normaliser(input if dtype is None else _cast(input, dtype), dim,
                                            "sparse.log_softmax")
    return with_values(s, shifted - log_total)


def _cast(s: SparseTensor, dtype: Any) -> SparseTensor:
    return with_values(s, s._vals.to(dtype))


def sparse_mask(input: Tensor, mask: SparseTensor) -> SparseTensor:
    """The elements of dense ``input`` at ``mask``'s specified positions, with ``mask``'s
    pattern (an uncoalesced mask's repeated entries each get the element, as PyTorch's).

    Example:
        >>> m = ember.sparse_coo_tensor([[0, 1], [1, 0]], [1.0, 1.0], (2, 2))
        >>> ember.tensor([[1.0, 2.0], [3.0, 4.0]]).sparse_mask(m)._values()
        tensor([2., 3.])
    """
    pattern = _sparse("sparse_mask", mask)
    if tuple(input.shape) != tuple(mask.shape):
        raise ShapeError(f"sparse_mask: input of shape {tuple(input.shape)} and mask of shape "
                         f"{tuple(mask.shape)} differ")
    if isinstance(input, SparseTensor):
        return _sparse_masked(input, pattern)
    k = pattern.sparse_dim()
    lin = linear_index(coo_index(pattern), pattern._size[:k])
    slices = input.reshape(-1, *input.shape[k:])
    picked = index_select(slices, 0, from_numpy(lin))
    return with_values(pattern, picked.reshape(pattern._vals.shape) if pattern.layout in BLOCKED
                       else picked)


def any_(input: SparseTensor, dim: Any = None, keepdim: bool = False) -> Tensor:
    """Whether any element of sparse ``input`` is nonzero, a 0-d bool tensor (``S.any()``,
    ``ember.any(S)``; COO, without ``dim``, as PyTorch's). An uncoalesced tensor's repeated
    entries are summed first, so entries cancelling to 0 count as 0 (PyTorch reads each entry).

    Example:
        >>> ember.sparse_coo_tensor([[0, 2]], [0.0, 3.0], (4,)).any()
        tensor(True)
    """
    if input.layout is not sparse_coo or dim is not None:
        raise not_supported("any (COO tensors and no dim only, as in PyTorch; convert with "
                            ".to_sparse_coo() or .to_dense())", input)
    return coalesce(input)._vals.detach().any()


def _sparse_masked(input: SparseTensor, mask: SparseTensor) -> SparseTensor:
    """:func:`sparse_mask` of a sparse ``input``: its elements (repeated entries summed) at
    ``mask``'s entries, zero where it has none, with ``mask``'s pattern and layout."""
    if mask.layout in BLOCKED or input.layout is not sparse_coo:
        raise not_supported("sparse_mask of a sparse input (a COO input, with a COO, CSR or "
                            "CSC mask; convert with .to_sparse_coo())", input
                            if input.layout is not sparse_coo else mask)
    source = coalesce(input)
    k = mask.sparse_dim()
    if source.sparse_dim() != k:
        raise ShapeError(f"sparse_mask: the input's sparse_dim {source.sparse_dim()} differs "
                         f"from the mask's {k} (as PyTorch requires them equal)")
    keys = linear_index(coo_index(source), source._size[:k])
    wanted = linear_index(coo_index(mask), mask._size[:k])
    at = np.minimum(np.searchsorted(keys, wanted), max(keys.shape[0] - 1, 0))
    found = keys[at] == wanted if keys.shape[0] else np.zeros(wanted.shape, dtype=bool)
    values = source._vals
    if not keys.shape[0]:  # (nothing to pick from: zeros of the values' trailing shape)
        return with_values(mask, zeros((wanted.shape[0], *values.shape[1:]), dtype=values.dtype,
                                       device=values.device))
    picked = index_select(values, 0, from_numpy(at))
    keep = from_numpy(found).reshape(-1, *[1] * (values.ndim - 1))
    return with_values(mask, where(keep, picked, zeros((), dtype=values.dtype,
                                                       device=values.device)))


def transpose(input: SparseTensor, dim0: int, dim1: int) -> SparseTensor:
    """Two sparse dimensions of a COO tensor swapped (CSR becomes CSC and back).

    Example:
        >>> ember.tensor([[0.0, 1.0], [0.0, 0.0]]).to_sparse().t().to_dense()
        tensor([[0., 0.],
                [1., 0.]])
    """
    dim0, dim1 = (normalize_dim(d, input.ndim, "transpose") for d in (dim0, dim1))
    if input.layout is not sparse_coo:
        if {dim0, dim1} != {0, 1}:
            return input
        flipped = _FLIPPED[input.layout]
        values = input._vals.transpose(1, 2) if input.layout in BLOCKED else \
            _new_node(input._vals)
        return SparseTensor(flipped, input._size[::-1], input._index, values, True)
    k = input.sparse_dim()
    if dim0 >= k or dim1 >= k:
        raise not_supported("transpose of a dense dimension", input)
    order = list(range(k))
    order[dim0], order[dim1] = dim1, dim0
    size = list(input._size)
    size[dim0], size[dim1] = size[dim1], size[dim0]
    index = from_numpy(np.ascontiguousarray(coo_index(input)[order]))
    coalesced = input._coalesced if dim0 == dim1 else input._nnz() == 0  # (PyTorch's flag)
    return SparseTensor(sparse_coo, tuple(size), (index,), _new_node(input._vals), coalesced)


_FLIPPED = {sparse_csr: sparse_csc, sparse_csc: sparse_csr, sparse_bsr: sparse_bsc,
            sparse_bsc: sparse_bsr}


def _new_node(values: Tensor) -> Tensor:
    """``values`` through a recorded identity: a result made from a leaf is not a leaf."""
    return values.view(values.shape)
