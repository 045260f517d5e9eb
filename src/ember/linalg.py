"""``ember.linalg``: the ``torch.linalg`` namespace (norms, matmul, vecdot, multi_dot, cross;
inverses, determinants, solvers and factorizations).

Example:
    >>> ember.linalg.norm(ember.tensor([3.0, 4.0]))
    tensor(5.)
"""

from ember.ops.construct import linalg_cross as cross
from ember.ops.linalg import matmul, multi_dot, vecdot
from ember.ops.linalg_decomp import eigh, eigvalsh, svdvals
from ember.ops.linalg_decomp import linalg_cholesky as cholesky
from ember.ops.linalg_decomp import linalg_qr as qr
from ember.ops.linalg_decomp import linalg_svd as svd
from ember.ops.linalg_lu import lu_factor, lu_solve
from ember.ops.linalg_pinv import lstsq, matrix_rank, pinv
from ember.ops.linalg_solve import (
    LinAlgError,
    det,
    inv,
    matrix_exp,
    matrix_power,
    slogdet,
    solve,
    solve_triangular,
)
from ember.ops.norms import linalg_norm as norm
from ember.ops.norms import matrix_norm, vector_norm

__all__ = ["norm", "vector_norm", "matrix_norm", "matmul", "vecdot", "multi_dot", "cross",
           "inv", "det", "slogdet", "solve", "solve_triangular", "matrix_power", "matrix_exp",
           "cholesky", "qr", "eigh", "eigvalsh", "svd", "svdvals", "pinv", "lstsq",
           "matrix_rank", "lu_factor", "lu_solve", "LinAlgError"]
