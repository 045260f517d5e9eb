"""Batching rules of the matrix functions (ember/ops/linalg_solve.py, linalg_decomp.py,
linalg_det.py, linalg_eig.py, linalg_lu.py, linalg_ldl.py, linalg_pinv.py, linalg_legacy.py).

Each of these primitives already maps over the leading dims of its matrices, and the vmap
batch is axis 0: one call computes the whole batch. An unbatched operand of a two-operand
solve gets the batch axis as a broadcast view first, since the op takes operands of one batch
shape. The empty ``Q`` of ``qr(mode='r')`` is the one output with no leading dims.
"""

from __future__ import annotations

from typing import Any

import ember.ops.linalg_decomp  # noqa: F401 - registers the primitives named below
import ember.ops.linalg_det  # noqa: F401
import ember.ops.linalg_eig  # noqa: F401
import ember.ops.linalg_ldl  # noqa: F401
import ember.ops.linalg_legacy  # noqa: F401
import ember.ops.linalg_lu  # noqa: F401
import ember.ops.linalg_pinv  # noqa: F401
import ember.ops.linalg_solve  # noqa: F401
from ember.func.batching import batched, pad_rank, prim, reshape, rule
from ember.ops.primitive import apply

#: primitives whose operands are (…, m, n) matrices and whose outputs keep the leading dims
NATIVE = ("linalg_inv", "linalg_slogdet", "linalg_det", "linalg_solve", "linalg_solve_triangular",
          "linalg_matrix_exp", "linalg_cholesky", "linalg_eig", "linalg_eigh", "linalg_svd",
          "linalg_pinv", "linalg_lu_factor", "linalg_lu_permutation", "linalg_ldl_factor",
          "geqrf", "linalg_lstsq_residuals")


def _native_rule(name: str) -> Any:
    p = prim(name)

    def batch_matrices(b: int, xs: tuple, bs: tuple, **params: Any) -> Any:
        return apply(p, *(batched(x, b, is_b) for x, is_b in zip(xs, bs)), **params)

    return batch_matrices


for _name in NATIVE:
    rule(_name)(_native_rule(_name))


@rule("linalg_ldl_solve")
def _ldl_solve(b: int, xs: tuple, bs: tuple, *, hermitian: bool) -> Any:
    # the op broadcasts its operands' batch dims, so each gets the batch axis and the same
    # number of logical batch dims (LD and B have 2 matrix dims, the pivots 1)
    core = (2, 1, 2)
    rank = max((x.ndim - is_b) - c for x, is_b, c in zip(xs, bs, core))
    return apply(prim("linalg_ldl_solve"), *(pad_rank(batched(x, b, is_b), rank + c)
                                             for x, is_b, c in zip(xs, bs, core)),
                 hermitian=hermitian)


@rule("linalg_qr")
def _qr(b: int, xs: tuple, bs: tuple, *, mode: str) -> Any:
    q, r = apply(prim("linalg_qr"), *xs, mode=mode)
    if mode == "r":
        q = reshape(q, (b, 0))
    return q, r
