"""Matrix functions written as compositions of other ops (no rules of their own, so they
differentiate, run forward mode and vmap through their parts): ``linalg.cond``,
``linalg.diagonal``, ``linalg.vander``, ``linalg.householder_product``, and
``cholesky_solve`` / ``cholesky_inverse``.

``cholesky_solve`` reads one triangle of its factor, as LAPACK's ``potrs``: the other triangle
gets a zero gradient (PyTorch's formula gives it the full-matrix gradient of ``L Lᵀ``; the two
agree on the triangle that is read).
"""

from __future__ import annotations

from ember import dtypes
from ember.errors import ArgumentError, DTypeError, ShapeError, describe, refuse_non_tensor
from ember.ops.broadcast import expand
from ember.ops.compare import isnan
from ember.ops.convert import float32_under_autocast
from ember.ops.creation import arange, eye, ones, zeros
from ember.ops.diagonal import diagonal as _diagonal
from ember.ops.int_args import as_int
from ember.ops.join import cat
from ember.ops.linalg import matmul
from ember.ops.linalg_decomp import svdvals
from ember.ops.linalg_solve import (
    Inv,
    batch_of,
    check_float,
    check_matrix,
    inv_ex,
    mH,
    solve_triangular,
)
from ember.ops.norms import matrix_norm
from ember.ops.primitive import apply
from ember.ops.scan import cumprod
from ember.ops.select import no_grad_from, where
from ember.ops.shape import narrow
from ember.tensor import Tensor, method

__all__ = ["cholesky_solve", "cholesky_inverse"]

_INF = float("inf")


def cond(input: Tensor, p: float | str | None = None) -> Tensor:
    """The condition number of a matrix (or of each in a batch) in the norm ``p``: ``None``
    or ``2`` (``σ_max / σ_min``, any shape), ``-2`` (its inverse), or ``'fro'``, ``'nuc'``,
    ``inf``, ``-inf``, ``1``, ``-1`` (``‖A‖ ‖A⁻¹‖``, square matrices; inf when singular, and
    where that product is NaN, as PyTorch's: a matrix holding NaN has condition number inf).

    Example:
        >>> ember.linalg.cond(ember.tensor([[1.0, 0.0], [0.0, 4.0]]))
        tensor(4.)
    """
    A = input  # (PyTorch's keyword name)
    op = "linalg.cond"
    by_svd = p is None or (not isinstance(p, str) and p in (2, -2))
    if not by_svd and p not in ("fro", "nuc") and (isinstance(p, str) or
                                                   p not in (_INF, -_INF, 1, -1)):
        raise ArgumentError(f"{op}: p must be None, 2, -2, 'fro', 'nuc', inf, -inf, 1 or -1, "
                            f"got {p!r}")
    where_ = op if by_svd else f"{op}(p={p!r})"
    check_matrix(where_, A, square=p in ("fro", "nuc"), complex_ok=True)
    if not A.numel():  # 0, as PyTorch's (NumPy leaves empty matrices undefined)
        return zeros(tuple(A.shape[:-2]), dtype=A.dtype.to_real(), device=A.device)
    if by_svd:
        s = svdvals(A)
        big, small = narrow(s, -1, 0, 1), narrow(s, -1, s.shape[-1] - 1, 1)
        return (big / small if p != -2 else small / big).squeeze(-1)
    check_matrix(where_, A, complex_ok=True)
    if p == "nuc":  # ‖A‖_* ‖A⁻¹‖_* from the singular values
        s = svdvals(A)
        return s.sum(dim=-1) * (1 / s).sum(dim=-1)
    inverse, info = inv_ex(A)
    value = matrix_norm(A, p) * matrix_norm(inverse, p)
    return where((info > 0) | isnan(value), _INF, value)


def diagonal(A: Tensor, *, offset: int = 0, dim1: int = -2, dim2: int = -1) -> Tensor:  # noqa: N803
    """``ember.diagonal`` with the defaults of ``torch.linalg.diagonal``: the diagonals of the
    matrices in the last two dims.

    Example:
        >>> ember.linalg.diagonal(ember.eye(2).expand(3, 2, 2)).shape
        ember.Size([3, 2])
    """
    return _diagonal(A, offset, dim1, dim2)


def vander(x: Tensor, *, N: int | None = None) -> Tensor:  # noqa: N803
    """The Vandermonde matrix of the last dim of ``x``: ``out[..., i, j] = x[..., i] ** j`` for
    ``j < N`` (``N`` defaults to ``x.shape[-1]``); integers give int64, as PyTorch's.

    Example:
        >>> ember.linalg.vander(ember.tensor([1, 2, 3]))
        tensor([[1, 1, 1],
                [1, 2, 4],
                [1, 3, 9]])
    """
    op = "linalg.vander"
    if not isinstance(x, Tensor):  # (a NumPy array passes the checks below)
        refuse_non_tensor(op, "x", x)
    if x.ndim < 1:
        raise ShapeError(f"{op}: x must have at least 1 dimension, got "
                         f"{describe(x.shape, x.dtype)}")
    if x.dtype is dtypes.bool_:
        raise DTypeError(f"{op}: x must be a floating or integer tensor, got bool. Hint: "
                         "call .long() on it")
    if x.dtype in (dtypes.float16, dtypes.bfloat16):  # (PyTorch's has no half kernel)
        raise DTypeError(f"{op}: x must be a float32/float64, complex or integer tensor, got "
                         f"{describe(x.shape, x.dtype)}. Hint: call .float() on it")
    N = x.shape[-1] if N is None else as_int(N, op, "N")  # noqa: N806
    if N < 2:
        raise ArgumentError(f"{op}: N must be greater than 1, got {N} (for x of shape "
                            f"{tuple(x.shape)})")
    column = x.unsqueeze(-1)
    powers = cumprod(expand(column, tuple(column.shape[:-1]) + (N - 1,)), -1)
    return cat([ones(column.shape, dtype=powers.dtype, device=x.device), powers], dim=-1)


@float32_under_autocast  # (on PyTorch's CPU autocast float32 list)
def householder_product(input: Tensor, tau: Tensor) -> Tensor:
    """The first ``n`` columns of ``H_1 ⋯ H_k``, ``H_i = I - tau_i v_i v_iᴴ``, where ``v_i`` is
    column ``i`` of ``A`` below the diagonal with a 1 on it (LAPACK's ``orgqr``; ``A`` and
    ``tau`` as ``torch.geqrf`` returns them): ``A (…, m, n)``, ``tau (…, k)``, ``k <= n <= m``.

    Example:
        >>> ember.linalg.householder_product(ember.zeros(2, 2), ember.tensor([2.0, 0.0]))
        tensor([[-1.,  0.],
                [ 0.,  1.]])
    """
    A = input  # (PyTorch's keyword name)
    op = "linalg.householder_product"
    check_matrix(op, A, square=False, complex_ok=True)
    check_float(op, A, tau, complex_ok=True)
    *batch, m, n = A.shape
    k = tau.shape[-1] if tau.ndim else -1
    if not (0 <= k <= n <= m) or tuple(tau.shape[:-1]) != tuple(batch):
        raise ShapeError(f"{op}: needs A (…, m, n) and tau (…, k) with the same batch dims and "
                         f"k <= n <= m, got {describe(A.shape, A.dtype)} and "
                         f"{describe(tau.shape, tau.dtype)}")
    q = expand(eye(m, n, dtype=A.dtype, device=A.device), tuple(batch) + (m, n))
    if k == 0:  # [I; 0], still in the graph of A and tau (no gradients), as PyTorch's
        return no_grad_from(q, A, tau)
    rows = arange(m, device=A.device).unsqueeze(-1)
    identity = eye(m, dtype=A.dtype, device=A.device)
    for i in reversed(range(k)):  # H_i (H_{i+1} ⋯ H_k [I; 0])
        v = where(rows > i, narrow(A, -1, i, 1), narrow(identity, -1, i, 1))
        t = narrow(tau, -1, i, 1).unsqueeze(-1)
        q = q - t * matmul(v, matmul(mH(v), q))
    return q


@method()
def cholesky_solve(input: Tensor, input2: Tensor, upper: bool = False) -> Tensor:
    """``X`` with ``A X = B`` given the Cholesky factor of ``A``: ``B`` is ``input``, the
    factor (lower ``L`` with ``A = L Lᴴ``, or upper ``U`` with ``A = Uᴴ U``) is ``input2``;
    batch dims broadcast. Only the factor's triangle is read, so the other triangle's gradient
    is 0 (PyTorch's backward fills it in).

    Example:
        >>> L = ember.tensor([[2.0, 0.0], [1.0, 1.0]])
        >>> ember.cholesky_solve(ember.tensor([[4.0], [2.0]]), L)
        tensor([[1.],
                [0.]])
    """
    op = "cholesky_solve"
    check_matrix(op, input2, name="the factor", complex_ok=True)
    check_float(op, input, input2, complex_ok=True)
    if input.ndim < 2 or input.shape[-2] != input2.shape[-1]:
        raise ShapeError(f"{op}: B {describe(input.shape, input.dtype)} does not fit the "
                         f"factor {describe(input2.shape, input2.dtype)}: B must be (…, n, k)")
    batch_of(op, input2, input, names="the factor and B")
    if upper:  # A = Uᴴ U
        y = solve_triangular(mH(input2), input, upper=False)
        return solve_triangular(input2, y, upper=True)
    y = solve_triangular(input2, input, upper=False)
    return solve_triangular(mH(input2), y, upper=True)


@method()
@float32_under_autocast  # (on PyTorch's CPU autocast float32 list)
def cholesky_inverse(input: Tensor, upper: bool = False) -> Tensor:
    """``A⁻¹ = U⁻¹ U⁻ᴴ`` given the Cholesky factor ``input`` of ``A = Uᴴ U`` (lower
    ``L = Uᴴ``, or upper ``U`` with ``upper=True``), as LAPACK's potri; a zero on the factor's
    diagonal raises :class:`LinAlgError`, as PyTorch.

    Example:
        >>> ember.cholesky_inverse(ember.tensor([[2.0, 0.0], [0.0, 1.0]]))
        tensor([[0.2500, 0.0000],
                [0.0000, 1.0000]])
    """
    check_matrix("cholesky_inverse", input, name="the factor", complex_ok=True)
    u = input.triu() if upper else mH(input.tril())
    # (the LU of a triangular U does not pivot: info is its first zero diagonal element)
    u_inv = apply(Inv, u, check_errors=True, op="cholesky_inverse")[0]
    return matmul(u_inv, mH(u_inv))

