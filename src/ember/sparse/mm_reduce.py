"""``ember.sparse.mm(S, D, reduce)``: a CSR matrix times a dense one where each output element
reduces its row's products (``S[i, k] * D[k, j]`` over the specified ``k``) by ``"sum"``,
``"mean"``, ``"amax"``, ``"amin"`` or ``"prod"``, as PyTorch's; a row with no specified
element gives 0. Written with dense Ember ops on the values, so it is differentiable."""

from __future__ import annotations

from typing import Any

from ember.errors import ArgumentError
from ember.layouts import sparse_coo, sparse_csr
from ember.ops.creation import zeros
from ember.ops.gather import index_select
from ember.sparse.convert import convert
from ember.sparse.tensor import SparseTensor
from ember.tensor import Tensor

REDUCTIONS = ("sum", "mean", "amax", "amin", "prod")


def mm_reduce(s: SparseTensor, dense: Tensor, reduce: Any) -> Tensor:
    """``s @ dense`` with each row's products reduced by ``reduce`` (``s`` CSR, 2-D; ``dense``
    2-D with ``s``'s column count and dtype, checked by the caller)."""
    reduce = {"max": "amax", "min": "amin"}.get(reduce, reduce)  # (PyTorch's other names)
    if reduce not in REDUCTIONS:
        raise ArgumentError(f"sparse.mm: reduce must be one of {', '.join(REDUCTIONS)}, got "
                            f"{reduce!r}")
    if s.layout is not sparse_csr:
        raise NotImplementedError(f"sparse.mm: reduce={reduce!r} needs an ember.sparse_csr "
                                  f"matrix, as PyTorch's, got {s.layout}. Hint: convert it "
                                  "with .to_sparse_csr()")
    coo = convert(s, sparse_coo)  # (row-major, as CSR: the values keep their order)
    rows, cols = coo._indices()
    products = coo._values().unsqueeze(1) * index_select(dense, 0, cols)
    where = rows.unsqueeze(1).expand(-1, dense.shape[1])
    out = zeros((s.shape[0], dense.shape[1]), dtype=dense.dtype, device=dense.device)
    return out.scatter_reduce(0, where, products, reduce, include_self=False)
