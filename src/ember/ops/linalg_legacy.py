"""PyTorch's pre-``torch.linalg`` spellings, at top level and as Tensor methods: ``lu`` (with
``get_infos``), ``lu_solve``, ``triangular_solve`` and the Householder trio ``geqrf``,
``orgqr``, ``ormqr``; and the functions PyTorch 2 removed but still defines so that calling
them says what replaces them (``solve``, ``eig``, ``lstsq``, ``symeig``, ``matrix_rank``).

Each one is a composite of the ``linalg`` ops, so values and gradients are theirs; ``geqrf``
is a primitive (NumPy's ``qr(mode="raw")``, LAPACK's ``geqrf``) without a derivative, as in
PyTorch.

Example:
    >>> A = ember.tensor([[2.0, 0.0], [1.0, 1.0]])
    >>> ember.triangular_solve(ember.tensor([[2.0], [3.0]]), A, upper=False).solution
    tensor([[1.],
            [2.]])
"""

from __future__ import annotations

import warnings
from typing import Any

from ember import return_types
from ember.errors import DerivativeNotImplemented, OpError, ShapeError, describe
from ember.ops.convert import float32_under_autocast
from ember.ops.creation import zeros
from ember.ops.join import cat
from ember.ops.linalg import matmul
from ember.ops.linalg_composite import householder_product
from ember.ops.linalg_lu import _lu_factor
from ember.ops.linalg_lu import lu_solve as _linalg_lu_solve
from ember.ops.linalg_solve import (
    check_float,
    check_matrix,
    matrix_spec,
    mH,
    mT,
    solve_triangular,
)
from ember.ops.primitive import Primitive, TensorSpec, apply, primitive
from ember.ops.shape import narrow
from ember.tensor import Tensor, method

__all__ = ["lu", "lu_solve", "triangular_solve", "geqrf", "orgqr", "ormqr", "solve", "eig",
           "lstsq", "symeig", "matrix_rank"]


# -- LU --------------------------------------------------------------------------------------


@method()
def lu(A: Tensor, pivot: bool = True, get_infos: bool = False) -> Any:  # noqa: N803
    """``(LU, pivots)`` of :func:`ember.linalg.lu_factor`, with ``info`` (a named tuple) when
    ``get_infos``; a singular matrix is no error either way. Deprecated in PyTorch in favour
    of ``linalg.lu_factor``/``lu_factor_ex``, and warns so here too.

    Example:
        >>> LU, pivots = ember.lu(ember.tensor([[1.0, 2.0], [3.0, 4.0]]))
        >>> pivots
        tensor([2, 2], dtype=ember.int32)
    """
    warnings.warn("lu is deprecated (as in PyTorch) in favor of linalg.lu_factor / "
                  "linalg.lu_factor_ex: LU, pivots = ember.lu(A) should be replaced with "
                  "LU, pivots = ember.linalg.lu_factor(A)", UserWarning, stacklevel=2)
    result = return_types._lu_with_info(*_lu_factor(A, pivot, False, "lu"))
    return result if get_infos else (result.LU, result.pivots)


@method()
def lu_solve(input: Tensor, LU_data: Tensor, LU_pivots: Tensor) -> Tensor:  # noqa: N803
    """The solution ``x`` of ``A x = b`` (``b`` passed as ``input``, PyTorch's keyword name)
    given ``lu(A)``: :func:`ember.linalg.lu_solve` with its arguments in the old order.

    Example:
        >>> LU, pivots = ember.linalg.lu_factor(ember.tensor([[2.0, 0.0], [0.0, 4.0]]))
        >>> ember.lu_solve(ember.tensor([[2.0], [4.0]]), LU, pivots)
        tensor([[1.],
                [1.]])
    """
    return _linalg_lu_solve(LU_data, LU_pivots, input)


# -- triangular_solve ------------------------------------------------------------------------


@method()
@float32_under_autocast  # (on PyTorch's CPU autocast float32 list)
def triangular_solve(input: Tensor, A: Tensor, upper: bool = True,  # noqa: N803
                     transpose: bool = False,
                     unitriangular: bool = False) -> return_types.triangular_solve:
    """``(X, A')`` with ``op(A) X = input`` for triangular ``A`` (``op`` the transpose when
    ``transpose``), only the ``upper`` (default) or lower triangle read, and ``A'`` a copy of
    ``A`` broadcast to the batch shape. :func:`ember.linalg.solve_triangular` with its
    arguments in the old order.

    Example:
        >>> A = ember.tensor([[2.0, 1.0], [0.0, 1.0]])
        >>> ember.triangular_solve(ember.tensor([[4.0], [2.0]]), A).solution
        tensor([[1.],
                [2.]])
    """
    op = "triangular_solve"
    check_matrix(op, A, complex_ok=True)
    check_float(op, A, input, complex_ok=True)
    if input.ndim < 2:
        raise ShapeError(f"{op}: input (B) must have at least 2 dims, got "
                         f"{describe(input.shape, input.dtype)}")
    coefficient = mT(A) if transpose else A
    solution = solve_triangular(coefficient, input, upper=bool(upper) != bool(transpose),
                                unitriangular=unitriangular)
    batch = tuple(solution.shape[:-2])
    return return_types.triangular_solve(solution, A.expand(batch + tuple(A.shape[-2:])).clone())


# -- Householder QR --------------------------------------------------------------------------


@primitive
class Geqrf(Primitive):
    """LAPACK's ``geqrf``: ``R`` on and above the diagonal, the Householder vectors below it,
    and their scales ``tau``; no derivative, as in PyTorch."""

    name = "geqrf"
    nout = 2

    def forward(self, xp, a):
        h, tau = xp.linalg.qr(a, mode="raw")  # (h is LAPACK's column-major array, transposed)
        return xp.ascontiguousarray(xp.swapaxes(h, -1, -2)).astype(a.dtype, copy=False), \
            tau.astype(a.dtype, copy=False)

    def infer(self, a):
        matrix_spec("geqrf", a, square=False)
        return (TensorSpec(a.shape, a.dtype),
                TensorSpec(a.shape[:-2] + (min(a.shape[-2:]),), a.dtype))

    def vjp(self, ctx, *grads):
        raise DerivativeNotImplemented("geqrf: the derivative for 'geqrf' is not implemented "
                                       "(as in PyTorch). Hint: differentiate through linalg.qr "
                                       "instead")

    jvp = vjp


@method()
def geqrf(input: Tensor) -> return_types.geqrf:
    """The QR factorization in LAPACK's compact form ``(a, tau)``: ``R`` on and above the
    diagonal of ``a``, the Householder vectors below it; :func:`orgqr` makes ``Q`` from them.
    Real or complex; not differentiable (as in PyTorch); use :func:`ember.linalg.qr` for
    gradients.

    Example:
        >>> a, tau = ember.geqrf(ember.tensor([[3.0, 1.0], [4.0, 2.0]]))
        >>> a.triu()
        tensor([[-5.0000, -2.2000],
                [ 0.0000,  0.4000]])
    """
    check_matrix("geqrf", input, square=False, name="input", complex_ok=True)
    return return_types.geqrf(*apply(Geqrf, input))


@method()
def orgqr(input: Tensor, input2: Tensor) -> Tensor:
    """``Q`` from :func:`geqrf`'s ``(a, tau)``: :func:`ember.linalg.householder_product`;
    ``tau`` is passed as ``input2``, PyTorch's keyword name.

    Example:
        >>> A = ember.tensor([[3.0, 1.0], [4.0, 2.0]])
        >>> (ember.orgqr(*ember.geqrf(A)) @ ember.geqrf(A).a.triu() - A).abs().max() < 1e-6
        tensor(True)
    """
    return householder_product(input, input2)


def _check_ormqr_shapes(input: Tensor, tau: Tensor, other: Tensor, left: bool) -> None:
    """PyTorch's shape rules for ``ormqr``: no broadcasting (equal batch dims for all three)
    and one ``tau`` per reflector that ``other``'s multiplied side can take."""
    side = -2 if left else -1
    shapes = (f"input {describe(input.shape, input.dtype)}, tau "
              f"{describe(tau.shape, tau.dtype)}, other {describe(other.shape, other.dtype)}")
    rules = [
        (other.ndim == input.ndim, "expected other to have the same number of dimensions as "
                                   "input"),
        (tau.ndim == input.ndim - 1, "expected tau to have one dimension less than input"),
        (tuple(other.shape[:-2]) == tuple(input.shape[:-2]),
         "expected batch dimensions of other to be equal to input.shape[:-2]"),
        (tuple(tau.shape[:-1]) == tuple(input.shape[:-2]),
         "expected batch dimensions of tau to be equal to input.shape[:-2]"),
        (other.shape[side] == input.shape[-2],
         f"other.shape[{side}] must be equal to input.shape[-2]"),
        (tau.shape[-1] == min(other.shape[side], input.shape[-1]),
         f"tau.shape[-1] must be equal to min(other.shape[{side}], input.shape[-1])")]
    for ok, rule in rules:
        if not ok:
            raise ShapeError(f"ormqr: {rule}; got {shapes}. Hint: pass geqrf's (a, tau) of a "
                             "matrix batch shaped like other's")


@method()
@float32_under_autocast  # (on PyTorch's CPU autocast float32 list)
def ormqr(input: Tensor, input2: Tensor, input3: Tensor, left: bool = True,
          transpose: bool = False) -> Tensor:
    """``Q @ other`` (``other @ Q`` when not ``left``; ``Qᴴ`` when ``transpose``) for the full
    ``mn × mn`` ``Q = H_1 ⋯ H_k`` of :func:`geqrf`'s ``(input, tau)``, ``mn`` being ``other``'s
    size on the multiplied side; ``tau`` and ``other`` are passed as ``input2`` and
    ``input3``, PyTorch's keyword names. Differentiable in all three.

    Example:
        >>> a, tau = ember.geqrf(ember.tensor([[3.0], [4.0]]))
        >>> ember.ormqr(a, tau, ember.eye(2))
        tensor([[-0.6000, -0.8000],
                [-0.8000,  0.6000]])
    """
    op = "ormqr"
    tau, other = input2, input3  # (PyTorch's keyword names)
    check_matrix(op, input, square=False, name="input", complex_ok=True)
    check_float(op, input, tau, other, complex_ok=True)
    if other.ndim < 2:
        raise ShapeError(f"{op}: other must have at least 2 dims, got "
                         f"{describe(other.shape, other.dtype)}")
    _check_ormqr_shapes(input, tau, other, left)
    mn, k = input.shape[-2], input.shape[-1]
    if k >= mn:
        square = narrow(input, -1, 0, mn)
    else:  # zero columns past the reflectors: householder_product then gives all of Q
        square = cat([input, zeros(tuple(input.shape[:-1]) + (mn - k,), dtype=input.dtype,
                                   device=input.device)], dim=-1)
    q = householder_product(square, tau)
    if transpose:
        q = mH(q)
    return matmul(q, other) if left else matmul(other, q)


# -- removed in PyTorch 2, kept as pointers to what replaced them -----------------------------
_REPLACEMENTS = {
    "solve": "ember.linalg.solve (its arguments are reversed and it does not return the LU "
             "factorization: X = ember.solve(B, A).solution becomes "
             "X = ember.linalg.solve(A, B))",
    "eig": "ember.linalg.eig (complex results: L, V = ember.eig(A, eigenvectors=True) "
           "becomes L, V = ember.linalg.eig(A), and the eigenvalues alone are "
           "ember.linalg.eigvals(A))",
    "lstsq": "ember.linalg.lstsq (its arguments are reversed: ember.lstsq(B, A).solution "
             "becomes ember.linalg.lstsq(A, B).solution)",
    "symeig": "ember.linalg.eigh (which reads the lower triangle by default: "
              "L, V = ember.linalg.eigh(A, UPLO='U' if upper else 'L'), and "
              "ember.linalg.eigvalsh for the eigenvalues only)",
    "matrix_rank": "ember.linalg.matrix_rank (the parameter 'symmetric' was renamed "
                   "'hermitian')",
}


def _removed(name: str) -> Any:
    def removed(*args: Any, **kwargs: Any) -> Any:
        raise OpError(f"{name}: this function was deprecated since PyTorch 1.9 and is now "
                      f"removed. Hint: use {_REPLACEMENTS[name]}")
    removed.__name__ = removed.__qualname__ = name
    removed.__doc__ = (f"Removed (as in PyTorch 2): raises an error that points to "
                       f"{_REPLACEMENTS[name].split(' ')[0]}.\n\n    Example:\n"
                       f"        >>> ember.{name}(ember.eye(2))\n"
                       f"        Traceback (most recent call last):\n"
                       f"        ember.errors.OpError: {name}: this function was deprecated "
                       f"since PyTorch 1.9 and is now removed. Hint: use ...\n")
    return removed


solve = method()(_removed("solve"))
eig = method()(_removed("eig"))
lstsq = method()(_removed("lstsq"))
symeig = method()(_removed("symeig"))
matrix_rank = _removed("matrix_rank")  # (no Tensor method in PyTorch 2)
