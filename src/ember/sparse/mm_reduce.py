"""``ember.sparse.mm(S, D, reduce)``: a CSR matrix times a dense one where each output element
reduces its row's products (``S[i, k] * D[k, j]`` over the specified ``k``) by ``"sum"``,
``"mean"``, ``"amax"``, ``"amin"`` or ``"prod"``, as PyTorch's; a row with no specified
element gives 0. Written with dense Ember ops on the values, so it is differentiable; an
``"amax"``/``"amin"`` element's gradient goes to one winning product, as PyTorch's (see
``_winners``)."""

from __future__ import annotations

from typing import Any

import numpy as np

from ember.errors import ArgumentError
from ember.layouts import sparse_csr
from ember.ops.creation import from_numpy, zeros
from ember.ops.gather import index_select
from ember.ops.join import cat
from ember.ops.select import where
from ember.sparse.convert import coo_index, entry_values
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
    rows, cols = coo_index(s)  # (in stored order, which picks amax/amin's winners)
    values = entry_values(s)
    like = {"dtype": dense.dtype, "device": dense.device}
    if reduce in ("amax", "amin"):
        return _extreme(values, dense, rows, cols, s.shape[0], reduce)
    products = values.unsqueeze(1) * index_select(dense, 0, from_numpy(cols).to(dense.device))
    where = from_numpy(rows).to(dense.device).unsqueeze(1).expand(-1, dense.shape[1])
    out = zeros((s.shape[0], dense.shape[1]), **like)
    return out.scatter_reduce(0, where, products, reduce, include_self=False)


def _extreme(values: Tensor, dense: Tensor, rows: np.ndarray, cols: np.ndarray, m: int,
             reduce: str) -> Tensor:
    """``"amax"``/``"amin"``: each element is its winning value times its dense element,
    gathered, so the gradient reaches those two alone (a non-winning infinite factor gives
    no NaN)."""
    picked = dense.detach()[from_numpy(cols).to(dense.device)]
    products = (values.detach().unsqueeze(1) * picked).numpy()
    winners, fill = _winners(products, rows, m, reduce)
    won = from_numpy(winners < len(cols)).to(dense.device)
    at = from_numpy(np.minimum(winners, len(cols))).to(dense.device)  # (len: a 0 appended)
    value = cat([values, zeros(1, dtype=values.dtype, device=dense.device)])[at.flatten()]
    factor = dense.gather(0, from_numpy(np.append(cols, 0)).to(dense.device)[at])
    return where(won, value.reshape(at.shape) * factor, from_numpy(fill).to(dense.device))


def _winners(products: np.ndarray, rows: np.ndarray, m: int, reduce: str) -> tuple:
    """For each output element, the position in ``products`` (stored order) of the product
    PyTorch's kernel keeps: scanning from the identity (-inf for amax), it takes a strictly
    better product or any NaN, so the last NaN wins, else the first extreme. Returned with
    the values where none wins: 0 for an empty row, else the identity (``len(products)`` marks
    those positions)."""
    nnz = len(products)
    identity = -np.inf if reduce == "amax" else np.inf
    if products.dtype.kind in "iu":
        info = np.iinfo(products.dtype)
        identity = info.min if reduce == "amax" else info.max
    best = np.full((m, products.shape[1]), identity, products.dtype)
    (np.fmax if reduce == "amax" else np.fmin).at(best, rows, products)  # (NaN-blind)
    position = np.arange(nnz)[:, None]
    extreme = (products == best[rows]) & (products != identity)
    winners = np.full(best.shape, nnz)
    np.minimum.at(winners, rows, np.where(extreme, position, nnz))
    nan = np.full(best.shape, -1)
    np.maximum.at(nan, rows, np.where(np.isnan(products), position, -1))
    best[np.bincount(rows, minlength=m) == 0] = 0
    return np.where(nan >= 0, nan, winners), best
