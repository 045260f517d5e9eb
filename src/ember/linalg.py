"""``ember.linalg``: the ``torch.linalg`` namespace (norms, matmul, vecdot, multi_dot, cross;
inverses, determinants, solvers and factorizations, with their ``_ex`` variants; the tensor
inverse and solve).

Example:
    >>> ember.linalg.norm(ember.tensor([3.0, 4.0]))
    tensor(5.)
"""

from ember.ops.construct import linalg_cross as cross
from ember.ops.linalg import matmul, vecdot
from ember.ops.linalg_composite import cond, diagonal, householder_product, vander
from ember.ops.linalg_decomp import cholesky_ex, eigh, eigvalsh, svdvals
from ember.ops.linalg_decomp import linalg_cholesky as cholesky
from ember.ops.linalg_decomp import linalg_qr as qr
from ember.ops.linalg_decomp import linalg_svd as svd
from ember.ops.linalg_det import linalg_det as det
from ember.ops.linalg_det import linalg_slogdet as slogdet
from ember.ops.linalg_eig import eig, eigvals
from ember.ops.linalg_ldl import ldl_factor, ldl_factor_ex, ldl_solve
from ember.ops.linalg_lu import lu, lu_factor, lu_factor_ex, lu_solve
from ember.ops.linalg_pinv import lstsq, matrix_rank, pinv
from ember.ops.linalg_solve import (
    LinAlgError,
    inv,
    inv_ex,
    matrix_exp,
    matrix_power,
    solve,
    solve_ex,
    solve_triangular,
)
from ember.ops.linalg_tensor import tensorinv, tensorsolve
from ember.ops.multi_dot import multi_dot
from ember.ops.norms import linalg_norm as norm
from ember.ops.norms import matrix_norm, vector_norm
from ember.ops.numpy_names import add_numpy_names
from ember.ops.out_arg import add_out_arguments
from ember.ops.out_names import LINALG

__all__ = ["norm", "vector_norm", "matrix_norm", "matmul", "vecdot", "multi_dot", "cross",
           "inv", "inv_ex", "det", "slogdet", "solve", "solve_ex", "solve_triangular",
           "matrix_power", "matrix_exp", "cholesky", "cholesky_ex", "qr", "eig", "eigvals",
           "eigh", "eigvalsh", "svd", "svdvals", "pinv", "lstsq", "matrix_rank", "lu",
           "lu_factor", "lu_factor_ex", "lu_solve", "ldl_factor", "ldl_factor_ex", "ldl_solve",
           "tensorinv", "tensorsolve", "cond", "diagonal", "vander", "householder_product",
           "LinAlgError"]


add_out_arguments(globals(), LINALG)  # torch's out= keyword
add_numpy_names(globals())  # axis= and keepdims=
