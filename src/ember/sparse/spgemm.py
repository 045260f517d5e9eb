"""A sparse matrix times a sparse matrix, sparse: COO @ COO is COO; CSR or CSC @ CSR or CSC is
CSR, except CSC @ CSC from ``sparse.mm``, which stays CSC: as PyTorch's (whose ``sparse.mm``
refuses CSR @ CSC, for want of a CPU kernel, where its ``@`` computes it).

The result's pattern is structural: element (i, j) is specified where some ``k`` has both
``a[i, k]`` and ``b[k, j]`` specified (a product that cancels to zero stays specified, as
PyTorch's). The index work pairs each entry of ``a`` with the entries of ``b``'s row ``k`` on
NumPy arrays; the values are one gather-multiply and one ``index_add`` of Ember ops, so the
product is differentiable in both operands' values (to any order).
"""

from __future__ import annotations

import numpy as np

from ember.errors import ArgumentTypeError, DTypeError, ShapeError
from ember.layouts import sparse_coo, sparse_csc, sparse_csr
from ember.ops.creation import zeros
from ember.ops.gather import index_add, index_select
from ember.sparse.convert import coalesce, long_index, to_compressed, to_coo
from ember.sparse.tensor import SparseTensor, check_numel

__all__ = ["sparse_sparse_mm"]

_COMPRESSED = (sparse_csr, sparse_csc)


def sparse_sparse_mm(a: SparseTensor, b: SparseTensor, keep_layout: bool = False
                     ) -> SparseTensor:
    """``a @ b`` for two COO matrices (COO), or two CSR or CSC ones (CSR; when
    ``keep_layout``, two CSC ones stay CSC)."""
    if not (a.layout is b.layout is sparse_coo or
            (a.layout in _COMPRESSED and b.layout in _COMPRESSED)):
        raise ArgumentTypeError(f"mm: a {a.layout!r} matrix times a {b.layout!r} matrix is not "
                                "supported (as in PyTorch: COO with COO, or CSR or CSC with CSR or "
                                "CSC). Hint: convert one, e.g. b.to_sparse(layout=a.layout)")
    if a.shape[1] != b.shape[0]:
        raise ShapeError(f"mm: mat1 and mat2 shapes cannot be multiplied ({a.shape[0]}x"
                         f"{a.shape[1]} and {b.shape[0]}x{b.shape[1]})")
    if a.dtype is not b.dtype:
        raise DTypeError(f"mm: mat1 dtype {a.dtype.name} does not match mat2 dtype "
                         f"{b.dtype.name}. Hint: convert one with .to()")
    check_numel("mm", (a.shape[0], b.shape[1]))
    target = a.layout if a.layout is sparse_coo or (keep_layout and a.layout is b.layout) \
        else sparse_csr
    a, b = coalesce(to_coo(a)), coalesce(to_coo(b))
    (rows, inner), (b_rows, cols) = a._index[0].numpy(), b._index[0].numpy()
    starts = np.searchsorted(b_rows, np.arange(b.shape[0] + 1))  # b's rows in b's entries
    counts = (starts[1:] - starts[:-1])[inner]  # how many of b's entries each a entry meets
    left = np.repeat(np.arange(len(inner)), counts)
    first = np.repeat(starts[inner] - np.cumsum(counts) + counts, counts)
    right = first + np.arange(len(left))
    width = b.shape[1]
    keys, slot = np.unique(rows[left] * width + cols[right], return_inverse=True)
    products = index_select(a._vals, 0, long_index(left)) * \
        index_select(b._vals, 0, long_index(right))
    values = index_add(zeros(len(keys), dtype=products.dtype), 0, long_index(slot.reshape(-1)),
                       products)
    index = long_index(np.stack(np.divmod(keys, max(width, 1))).reshape(2, -1))
    out = SparseTensor(sparse_coo, (a.shape[0], width), (index,), values, True)
    return out if target is sparse_coo else to_compressed(out, target)
