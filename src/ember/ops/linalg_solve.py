"""Inverses and linear solvers: ``linalg.inv`` / ``inv_ex``, ``solve`` / ``solve_ex``,
``solve_triangular``, ``matrix_power``, ``matrix_exp`` (determinants and the factorizations
are in ``linalg_decomp.py``, LU in ``linalg_lu.py``).

Primitives: ``linalg_inv``, ``linalg_solve``, ``linalg_solve_triangular`` and
``linalg_matrix_exp``; every one takes a batch of matrices in its leading dims.
``matrix_power`` is a composite of matmuls and ``inv``. NumPy's
``numpy.linalg`` is the backend; where it raises on a singular matrix, the kernels of
``linalg_kernels.py`` give LAPACK's answer (an ``info``, inf/NaN values). A singular matrix
raises :class:`LinAlgError` (a ``RuntimeError``, as PyTorch's) naming the op and, in a batch,
the failing element, except in the ``_ex`` variants, which report it in ``info``.
"""

from __future__ import annotations

import cmath
from typing import Any

import numpy as np

from ember import dtypes, return_types
from ember.backend import trsm
from ember.errors import DTypeError, OpError, ShapeError, describe, refuse_non_tensor
from ember.ops import linalg_kernels as kernels
from ember.ops.broadcast import broadcast_shapes, expand
from ember.ops.complex_parts import Holomorphic, conj
from ember.ops.creation import eye, zeros
from ember.ops.int_args import as_int
from ember.ops.join import cat
from ember.ops.linalg import matmul
from ember.ops.primitive import DISPATCH, Primitive, TensorSpec, apply, primitive
from ember.ops.select import zero_grad_from
from ember.ops.shape import narrow
from ember.tensor import Tensor, method

__all__ = ["inverse", "matrix_power", "matrix_exp"]


class LinAlgError(OpError):
    """A matrix function failed on the input's values: a singular matrix to invert or solve
    with, a matrix that is not positive-definite for ``cholesky`` (``torch.linalg.LinAlgError``).
    """


# -- checks shared with linalg_decomp.py -----------------------------------------------------
_COMPLEX = (dtypes.complex64, dtypes.complex128)
_LOW = (dtypes.bfloat16, dtypes.float16)


def _runs_in(t: Tensor) -> dtypes.DType:
    """The dtype ``t`` reaches the op in: autocast casts low-precision floats to float32."""
    return dtypes.float32 if DISPATCH.casting and t.dtype in _LOW else t.dtype


def check_float(op: str, *tensors: Tensor, complex_ok: bool = False) -> None:
    """Refuses what PyTorch's linear algebra refuses: integer, bool and low-precision dtypes
    (outside autocast), and operands of different dtypes; complex64/complex128 pass where
    ``complex_ok``."""
    for t in tensors:
        if _runs_in(t) is dtypes.float32 or t.dtype is dtypes.float64:
            continue
        if t.dtype in _COMPLEX:
            if complex_ok:
                continue
            raise DTypeError(f"{op}: complex tensors are not supported, got "
                             f"{describe(t.shape, t.dtype)}. Hint: take .real and .imag "
                             "and work with real matrices")
        refuse_non_tensor(op, "input", t)  # (a PyTorch tensor's dtype has no Ember meaning)
        kind = "low-precision" if t.dtype.is_floating_point else "non-floating"
        also = " (or a complex64 or complex128 one)" if complex_ok else ""
        raise DTypeError(f"{op}: expected a float32 or float64 tensor{also}, got the {kind} "
                         f"{describe(t.shape, t.dtype)}. Hint: convert it with .double() or "
                         ".float()")
    if len({_runs_in(t) for t in tensors}) > 1:
        shown = " and ".join(describe(t.shape, t.dtype) for t in tensors)
        raise DTypeError(f"{op}: operands must have the same dtype, got {shown}. Hint: "
                         "convert one with .to(the other's dtype)")


def check_matrix(op: str, A: Tensor, square: bool = True, name: str = "A",  # noqa: N803
                 complex_ok: bool = False) -> None:
    """``A`` is a (batch of) matrices, square if ``square``, of a floating or complex dtype
    (complex only where ``complex_ok``)."""
    try:
        ndim = A.ndim
    except AttributeError:
        refuse_non_tensor(op, name, A)
        raise
    if ndim < 2:
        raise ShapeError(f"{op}: {name} must have at least 2 dimensions, got "
                         f"{describe(A.shape, A.dtype)}")
    if square and A.shape[-1] != A.shape[-2]:
        raise ShapeError(f"{op}: {name} must be batches of square matrices, but they are "
                         f"{A.shape[-2]} by {A.shape[-1]} matrices ({describe(A.shape, A.dtype)})")
    check_float(op, A, complex_ok=complex_ok)


def matrix_spec(op: str, a: TensorSpec, square: bool = True) -> None:
    """The ``infer`` side of :func:`check_matrix`."""
    if len(a.shape) < 2 or (square and a.shape[-1] != a.shape[-2]):
        raise ShapeError(f"{op}: expected a batch of {'square ' if square else ''}matrices, "
                         f"got {a}")


def batch_of(op: str, A: Tensor, B: Tensor, names: str = "A and B",  # noqa: N803
             b_batch: tuple[int, ...] | None = None) -> tuple[int, ...]:
    """The broadcast batch dims of the matrices ``A`` and ``B`` (``b_batch``: ``B``'s, where
    a vector ``B`` has been given a column); a ShapeError naming both shapes if they do not
    broadcast."""
    b_batch = tuple(B.shape[:-2]) if b_batch is None else b_batch
    try:
        return broadcast_shapes(A.shape[:-2], b_batch, op=op)
    except ShapeError:
        first, second = names.split(" and ")
        raise ShapeError(f"{op}: the batch dims of {first} {describe(A.shape, A.dtype)} and "
                         f"{second} {describe(B.shape, B.dtype)} do not broadcast: "
                         f"{tuple(A.shape[:-2])} and {b_batch}. Hint: batch sizes must match "
                         "or be 1") from None


def mT(x: Tensor) -> Tensor:  # noqa: N802 - PyTorch's name for the matrix transpose
    return x.transpose(-2, -1)


def mH(x: Tensor) -> Tensor:  # noqa: N802 - PyTorch's name for the conjugate transpose
    """The conjugate transpose; the transpose of a real matrix."""
    return conj(x.transpose(-2, -1))


def diag_embed(d: Tensor) -> Tensor:
    """Vectors ``(…, n)`` as diagonal matrices ``(…, n, n)``."""
    return d.unsqueeze(-1) * eye(d.shape[-1], dtype=d.dtype, device=d.device)


def first_failure(info: Any) -> tuple[str, int]:
    """``("(Batch element i): ", info[i])`` for the first nonzero ``info`` of a batch."""
    flat = np.asarray(info).reshape(-1)
    i = int(np.flatnonzero(flat)[0])
    return (f"(Batch element {i}): " if np.ndim(info) else ""), int(flat[i])


def converged(op: str, routine: Any, a: Any, **kwargs: Any) -> Any:
    """``routine(a, **kwargs)`` (a backend ``linalg`` routine: ``eig``, ``eigh``, ``svd``),
    whose failure to converge is a :class:`LinAlgError` naming ``op``, the input and the first
    matrix of the batch that holds NaN or inf, if one does (as PyTorch's)."""
    try:
        return routine(a, **kwargs)
    except np.linalg.LinAlgError:
        host = a.get() if hasattr(a, "get") else a  # (a CuPy array, on this error path)
        finite = np.isfinite(host).all(axis=(-2, -1)).reshape(-1)
        why = "the algorithm failed to converge"
        if not finite.all():
            where = f"(Batch element {int(np.flatnonzero(~finite)[0])}): " if a.ndim > 2 else ""
            why = f"{where}{why} because the input matrix contains non-finite values (NaN or inf)"
        raise LinAlgError(f"{op}: {why} ({describe(a.shape, a.dtype)})") from None


def by_lu_where_needed(xp: Any, a: Any, b: Any | None, x: Any,
                       transposed: bool = False) -> tuple[Any, Any]:
    """``(X, info)`` of ``A X = B`` (``b`` None: the identity, ``X`` the inverse) from
    NumPy's ``x`` (None where it raised: a singular matrix), its matrices redone by LU
    substitution (:func:`kernels.lu_solve`: LAPACK's ``info`` and inf/NaN) where NumPy's
    answer is not PyTorch's: all if it raised; those with inf/NaN in ``A`` (NumPy's BLAS
    skips zeros that PyTorch's multiplies by them, so a NaN did not reach all of ``X``); and
    with ``transposed`` (``a`` is ``Aᵀ``; PyTorch factors ``A``), those with inf/NaN in
    ``X``."""
    info = xp.zeros(a.shape[:-2], np.int32)
    if x is not None and _all_finite(xp, a) and not (transposed and not _all_finite(xp, x)):
        return x, info  # (the common case: one pass over A)
    if b is None:
        b = xp.broadcast_to(xp.eye(a.shape[-1], dtype=a.dtype), a.shape)
    if x is None:
        x, redo = xp.empty_like(b), xp.ones(a.shape[:-2], bool)
    else:
        redo = ~xp.isfinite(a).all(axis=(-2, -1))
        if transposed:
            redo |= ~xp.isfinite(x).all(axis=(-2, -1))
        if not redo.any():  # (a sum of squares that overflowed: every value finite)
            return x, info
    a, b = a[redo], b[redo]
    if transposed:
        x[redo], info[redo] = kernels.lu_solve(xp, xp.swapaxes(a, -1, -2), b, transpose=True)
    else:
        x[redo], info[redo] = kernels.lu_solve(xp, a, b)
    return x, info


def _all_finite(xp: Any, a: Any) -> bool:
    """Whether ``a`` holds no inf or NaN, in one BLAS pass for a NumPy array (~0.5 µs on a
    3×3, a third of ``isfinite().all()``): its sum of squares, which a huge finite value may
    overflow too (then the slower path, still right)."""
    if xp is np:
        return cmath.isfinite(np.vdot(a, a))
    return bool(xp.isfinite(a).all())


# -- inv -------------------------------------------------------------------------------------
@primitive
class Inv(Holomorphic, Primitive):
    """``(inverse, info)``; ``info`` is the 1-based index of the first zero pivot of the LU
    factorization (0 if none). A singular matrix raises if ``check_errors``, else its inverse
    is inf/NaN, as PyTorch's."""

    name = "linalg_inv"
    nout = 2
    save_inputs = False
    save_outputs = (0,)

    def forward(self, xp, a, *, check_errors, op):
        try:
            x = xp.linalg.inv(a)
        except np.linalg.LinAlgError:
            x = None
        x, info = by_lu_where_needed(xp, a, None, x)
        if check_errors and info.any():  # (LAPACK may refuse subnormal pivots this LU takes)
            where, k = first_failure(info)
            raise LinAlgError(f"{op}: {where}The diagonal element {k} is zero, the inversion "
                              f"could not be completed because the input matrix is singular "
                              f"({describe(a.shape, a.dtype)})")
        return x, info

    def infer(self, a, *, check_errors, op):
        matrix_spec(op, a)
        return a, TensorSpec(a.shape[:-2], dtypes.int32)

    def vjp(self, ctx, g, _g_info=None):
        x = mT(ctx.output(0))
        return (-matmul(matmul(x, g), x),)

    def jvp(self, ctx, da):
        x = ctx.output(0)
        return -matmul(matmul(x, da), x), None


def inv(A: Tensor) -> Tensor:  # noqa: N803 - PyTorch's argument name
    """The inverse of a square matrix (or of each in a batch); raises :class:`LinAlgError`
    for a singular one.

    Example:
        >>> ember.linalg.inv(ember.tensor([[2.0, 0.0], [0.0, 4.0]]))
        tensor([[0.5000, 0.0000],
                [0.0000, 0.2500]])
    """
    check_matrix("linalg.inv", A, complex_ok=True)
    return apply(Inv, A, check_errors=True, op="linalg.inv")[0]


def inv_ex(A: Tensor, *, check_errors: bool = False) -> return_types.linalg_inv_ex:  # noqa: N803
    """:func:`inv` that reports a singular matrix in ``info`` (the 1-based index of the
    first zero pivot of its LU factorization, 0 if none) instead of raising, unless
    ``check_errors``; the inverse of a singular matrix is then inf/NaN.

    Example:
        >>> ember.linalg.inv_ex(ember.tensor([[2.0, 0.0], [0.0, 0.0]])).info
        tensor(2, dtype=ember.int32)
    """
    check_matrix("linalg.inv_ex", A, complex_ok=True)
    return return_types.linalg_inv_ex(*apply(Inv, A, check_errors=bool(check_errors),
                                             op="linalg.inv_ex"))


@method()
def inverse(input: Tensor) -> Tensor:
    """``torch.inverse``: the same as :func:`ember.linalg.inv`.

    Example:
        >>> ember.tensor([[2.0]]).inverse()
        tensor([[0.5000]])
    """
    check_matrix("inverse", input, complex_ok=True)
    return apply(Inv, input, check_errors=True, op="inverse")[0]


# -- solve -----------------------------------------------------------------------------------
@primitive
class Solve(Holomorphic, Primitive):
    """``(X, info)`` with ``A X = B`` for ``A (…, n, n)`` and ``B (…, n, k)`` of the same
    batch; ``info`` as :class:`Inv`'s (a singular ``A`` raises if ``check_errors``). With
    ``factor_transpose`` a singular ``A``'s ``info`` and inf/NaN come from the LU of ``Aᵀ``
    (``solve(left=False)``'s ``A``, which PyTorch factors)."""

    name = "linalg_solve"
    nout = 2
    save_outputs = (0,)

    def forward(self, xp, a, b, *, check_errors, op, factor_transpose=False):
        try:
            x = xp.linalg.solve(a, b)
        except np.linalg.LinAlgError:
            x = None
        x, info = by_lu_where_needed(xp, a, b, x, transposed=factor_transpose)
        if check_errors and info.any():  # (LAPACK may refuse subnormal pivots this LU takes)
            raise LinAlgError(f"{op}: {first_failure(info)[0]}The solver failed because the "
                              f"input matrix is singular ({describe(a.shape, a.dtype)})")
        return x, info

    def infer(self, a, b, *, check_errors, op, factor_transpose=False):
        matrix_spec(op, a)
        if len(b.shape) != len(a.shape) or b.shape[:-1] != a.shape[:-1]:
            raise ShapeError(f"{op}: A {a} and B {b} do not fit A X = B")
        return b, TensorSpec(a.shape[:-2], dtypes.int32)

    def reads(self, ctx, i):
        return i == 0  # B's gradient is a solve with A; X is the saved output

    def vjp(self, ctx, g, _g_info=None):
        a, b = ctx.inputs
        p = ctx.params  # (the same matrix is factored: of mT(a), the transpose)
        gb = apply(Solve, mT(a), g, check_errors=p["check_errors"], op=p["op"],
                   factor_transpose=not p.get("factor_transpose", False))[0]
        ga = -matmul(gb, mT(ctx.output(0))) if a.requires_grad else None
        return ga, gb if b.requires_grad else None

    def jvp(self, ctx, da, db):
        a = ctx.inputs[0]
        return apply(Solve, a, db - matmul(da, ctx.output(0)), **ctx.params)[0], None


def is_vector_rhs(A: Tensor, B: Tensor) -> bool:  # noqa: N803
    """PyTorch's rule: ``B`` is a (batch of) vector(s) if 1-D, or if its shape is ``A``'s
    without the last dim."""
    return B.ndim == 1 or (B.ndim == A.ndim - 1 and B.shape == A.shape[:-1])


def _solve(A: Tensor, B: Tensor, left: bool, check_errors: bool,  # noqa: N803
           op: str) -> tuple[Tensor, Tensor]:
    check_matrix(op, A, complex_ok=True)
    check_float(op, A, B, complex_ok=True)
    vector = is_vector_rhs(A, B)
    if not left:
        if vector:  # (as in PyTorch: X A = B needs the rows of B)
            raise ShapeError(f"{op}: with left=False B must be a (batch of) matrices (…, k, n),"
                             f" got the vector {describe(B.shape, B.dtype)} (A is "
                             f"{describe(A.shape, A.dtype)}). Hint: pass B.unsqueeze(-2)")
    b = B.unsqueeze(-1) if vector else B
    n = A.shape[-1]
    if b.ndim < 2 or b.shape[-2 if left else -1] != n:
        raise ShapeError(f"{op}: incompatible shapes of A and B for the equation "
                         f"{'AX' if left else 'XA'} = B: A is {describe(A.shape, A.dtype)} and "
                         f"B {describe(B.shape, B.dtype)}")
    batch = batch_of(op, A, B, b_batch=tuple(b.shape[:-2]))  # (B's own shape in the message)
    if not left:  # X A = B is Aᵀ Xᵀ = Bᵀ (A itself factored, as PyTorch: same info)
        A, b = mT(A), mT(b)  # noqa: N806
    x, info = apply(Solve, expand(A, batch + (n, n)), expand(b, batch + tuple(b.shape[-2:])),
                    check_errors=bool(check_errors), op=op, factor_transpose=not left)
    x = x if left else mT(x)
    return (x.squeeze(-1) if vector else x), _own_batch(info, tuple(A.shape[:-2]))


def _own_batch(info: Tensor, batch: tuple[int, ...]) -> Tensor:
    """``info`` of the broadcast batch cut to ``A``'s own batch shape, as PyTorch's (which
    factors ``A`` once, so the copies ``A`` was broadcast to share one ``info``)."""
    if tuple(info.shape) == batch:
        return info
    lead = info.ndim - len(batch)
    return info[(0,) * lead + tuple(slice(None) if n == m else slice(0, 1)
                                    for n, m in zip(batch, info.shape[lead:]))]


def solve(A: Tensor, B: Tensor, *, left: bool = True) -> Tensor:  # noqa: N803
    """The solution ``X`` of ``A X = B`` (``X A = B`` with ``left=False``) for square ``A``;
    ``B`` is a matrix, or with ``left=True`` a vector (see PyTorch for when a 2-D ``B``
    counts as a batch of vectors), and the batch dims broadcast. Raises
    :class:`LinAlgError` for singular ``A``.

    Example:
        >>> ember.linalg.solve(ember.tensor([[2.0, 0.0], [0.0, 4.0]]), ember.tensor([2.0, 2.0]))
        tensor([1.0000, 0.5000])
    """
    return _solve(A, B, left, True, "linalg.solve")[0]


def solve_ex(A: Tensor, B: Tensor, *, left: bool = True,  # noqa: N803
             check_errors: bool = False) -> return_types.linalg_solve_ex:
    """:func:`solve` that reports a singular ``A`` in ``info`` (as :func:`inv_ex`) instead
    of raising, unless ``check_errors``; the solution is then inf/NaN.

    Example:
        >>> ember.linalg.solve_ex(ember.eye(2), ember.ones(2)).info
        tensor(0, dtype=ember.int32)
    """
    return return_types.linalg_solve_ex(*_solve(A, B, left, check_errors, "linalg.solve_ex"))


# -- triangular solve ------------------------------------------------------------------------
def _triangle(x: Tensor, upper: bool, unitriangular: bool) -> Tensor:
    """The part of ``x`` a triangular solve reads (its strict triangle if unitriangular)."""
    k = 1 if unitriangular else 0
    return x.triu(k) if upper else x.tril(-k)


@primitive
class SolveTriangular(Holomorphic, Primitive):
    """``X`` with ``A X = B`` (``X A = B`` if not ``left``) reading one triangle of ``A``."""

    name = "linalg_solve_triangular"
    save_outputs = True

    def forward(self, xp, a, b, *, upper, left, unitriangular):
        if not left:  # X T = B is Tᵀ Xᵀ = Bᵀ
            a, b, upper = xp.swapaxes(a, -1, -2), xp.swapaxes(b, -1, -2), not upper
        x = trsm.solve(xp, a, b, upper, unitriangular)  # (O(n² k); NumPy's LU is O(n³))
        if x is None or not xp.isfinite(x).all():
            t = xp.triu(a) if upper else xp.tril(a)
            if unitriangular:
                t[..., xp.arange(a.shape[-1]), xp.arange(a.shape[-1])] = 1
            if x is None:
                try:
                    with np.errstate(all="ignore"):
                        x = xp.linalg.solve(t, b)
                except np.linalg.LinAlgError:  # a zero on the diagonal
                    pass
            if x is None or not xp.isfinite(x).all():  # inf/NaN in A or B: substitution, as
                x = kernels.triangular(xp, t, b, upper)  # trsm (the LU solve multiplies
        return x if left else xp.swapaxes(x, -1, -2)  # structural zeros by an inf: NaN)

    def infer(self, a, b, *, upper, left, unitriangular):
        matrix_spec("linalg.solve_triangular", a)
        n = a.shape[-1]
        if len(b.shape) != len(a.shape) or b.shape[-2 if left else -1] != n:
            raise ShapeError(f"linalg.solve_triangular: A {a} and B {b} do not fit "
                             f"{'A X' if left else 'X A'} = B")
        return b

    def reads(self, ctx, i):
        return i == 0

    def vjp(self, ctx, g):
        a, b = ctx.inputs
        p = ctx.params
        gb = apply(SolveTriangular, mT(a), g, upper=not p["upper"], left=p["left"],
                   unitriangular=p["unitriangular"])
        ga = None
        if a.requires_grad:
            x = ctx.out
            ga = -matmul(gb, mT(x)) if p["left"] else -matmul(mT(x), gb)
            ga = _triangle(ga, p["upper"], p["unitriangular"])
        return ga, gb if b.requires_grad else None

    def jvp(self, ctx, da, db):
        a = ctx.inputs[0]
        p = ctx.params
        dt = _triangle(da, p["upper"], p["unitriangular"])
        x = ctx.out
        rhs = db - (matmul(dt, x) if p["left"] else matmul(x, dt))
        return apply(SolveTriangular, a, rhs, **p)


def solve_triangular(input: Tensor, B: Tensor, *, upper: bool, left: bool = True,  # noqa: N803
                     unitriangular: bool = False) -> Tensor:
    """The solution ``X`` of ``A X = B`` (``X A = B`` with ``left=False``) for triangular
    ``A``: only its upper (``upper=True``) or lower triangle is read, and with
    ``unitriangular`` its diagonal is taken as ones. Batch dims broadcast. A ``B`` whose
    dtype converts to ``A``'s without loss (real into complex, float32 into float64) is
    converted, as PyTorch does; other mixes are refused.

    Example:
        >>> A = ember.tensor([[2.0, 0.0], [1.0, 1.0]])
        >>> ember.linalg.solve_triangular(A, ember.tensor([[2.0], [3.0]]), upper=False)
        tensor([[1.],
                [2.]])
    """
    A = input  # (PyTorch's keyword name)
    op = "linalg.solve_triangular"
    check_matrix(op, A, complex_ok=True)
    if B.dtype is not A.dtype and np.can_cast(B.dtype.np, A.dtype.np, "safe"):
        B = B.to(A.dtype)  # PyTorch solves in A's dtype; Ember where no information is lost
    check_float(op, A, B, complex_ok=True)
    n = A.shape[-1]
    if B.ndim < 2 or B.shape[-2 if left else -1] != n:
        raise ShapeError(f"{op}: incompatible shapes of A and B for the equation "
                         f"{'AX' if left else 'XA'} = B: A is {describe(A.shape, A.dtype)} "
                         f"and B {describe(B.shape, B.dtype)}")
    batch = batch_of(op, A, B)
    return apply(SolveTriangular, expand(A, batch + (n, n)),
                 expand(B, batch + tuple(B.shape[-2:])), upper=bool(upper), left=bool(left),
                 unitriangular=bool(unitriangular))


# -- powers and the exponential --------------------------------------------------------------
@method()
def matrix_power(input: Tensor, n: int) -> Tensor:
    """``A`` multiplied by itself ``n`` times (by repeated squaring); the identity for
    ``n = 0``, and powers of the inverse for ``n < 0``. Integer matrices take ``n >= 0``.

    Example:
        >>> ember.linalg.matrix_power(ember.tensor([[1, 1], [0, 1]]), 3)
        tensor([[1, 3],
                [0, 1]])
    """
    A = input  # (PyTorch's keyword name)
    op = "linalg.matrix_power"
    if A.ndim < 2 or A.shape[-1] != A.shape[-2]:
        raise ShapeError(f"{op}: A must be batches of square matrices, got "
                         f"{describe(A.shape, A.dtype)}")
    n = as_int(n, op, "n")  # (a 0-d integer tensor too, as PyTorch's)
    if n == 0:  # the identity, in the graph with a zero gradient, as PyTorch's
        identity = expand(eye(A.shape[-1], dtype=A.dtype, device=A.device), A.shape)
        return zero_grad_from(A, identity.clone())
    if n == 1:  # a copy, as PyTorch's (the loop would hand A itself back: writes aliased)
        return A.clone()
    if n < 0:
        check_matrix(op, A, complex_ok=True)
        A, n = inv(A), -n
    if n == 3:  # (A A) A, as PyTorch's (the loop's A (A A) rounds otherwise)
        return matmul(matmul(A, A), A)
    result = None
    square = A
    while True:
        if n & 1:
            result = square if result is None else matmul(result, square)
        n >>= 1
        if not n:
            return result
        square = matmul(square, square)


_PADE13 = (64764752532480000.0, 32382376266240000.0, 7771770303897600.0, 1187353796428800.0,
           129060195264000.0, 10559470521600.0, 670442572800.0, 33522128640.0, 1323241920.0,
           40840800.0, 960960.0, 16380.0, 182.0, 1.0)
_THETA13 = 5.371920351148152  # Higham (2005): the 1-norm up to which Padé(13) is exact enough


def _expm(xp: Any, a: Any) -> Any:
    """exp of each matrix: scaling and squaring with the degree-13 Padé approximant (Higham
    2005), each matrix of a batch scaled by its own power of two; computed in float64."""
    dtype = a.dtype
    n = a.shape[-1]
    if n == 0 or a.size == 0:
        return a.copy()
    a = a.astype(np.complex128 if a.dtype.kind == "c" else np.float64)
    norm = xp.abs(a).sum(axis=-2).max(axis=-1)
    with np.errstate(all="ignore"):
        s = xp.ceil(xp.log2(norm / _THETA13))
    s = xp.where(xp.isfinite(s) & (s > 0), s, 0).astype(np.int64)
    a = a / (2.0 ** s)[..., None, None]
    b = _PADE13
    ident = xp.eye(n)
    a2 = a @ a
    a4 = a2 @ a2
    a6 = a4 @ a2
    u = a @ (a6 @ (b[13] * a6 + b[11] * a4 + b[9] * a2) + b[7] * a6 + b[5] * a4 + b[3] * a2
             + b[1] * ident)
    v = a6 @ (b[12] * a6 + b[10] * a4 + b[8] * a2) + b[6] * a6 + b[4] * a4 + b[2] * a2 \
        + b[0] * ident
    with np.errstate(all="ignore"):
        try:
            r = xp.linalg.solve(v - u, v + u)
        except np.linalg.LinAlgError:  # only for non-finite input
            r = xp.full(a.shape, xp.nan)
        for i in range(int(s.max(initial=0))):
            r = xp.where((i < s)[..., None, None], r @ r, r)
    return r.astype(dtype)


def _block_upper_right(A: Tensor, E: Tensor) -> Tensor:  # noqa: N803
    """The upper-right block of ``exp([[A, E], [0, A]])``: the derivative of ``exp`` at ``A``
    in direction ``E`` (Mathias 1996)."""
    n = A.shape[-1]
    top = cat([A, E], dim=-1)
    bottom = cat([zeros(A.shape, dtype=A.dtype, device=A.device), A], dim=-1)
    big = apply(MatrixExp, cat([top, bottom], dim=-2))
    return narrow(narrow(big, -2, 0, n), -1, n, n)


@primitive
class MatrixExp(Holomorphic, Primitive):
    name = "linalg_matrix_exp"

    def forward(self, xp, a):
        return _expm(xp, a)

    def infer(self, a):
        matrix_spec("linalg.matrix_exp", a)
        return a

    def vjp(self, ctx, g):
        return _block_upper_right(mT(ctx.inputs[0]), g)

    def jvp(self, ctx, da):
        a = ctx.inputs[0]
        return _block_upper_right(a, expand(da, a.shape))


@method()
def matrix_exp(input: Tensor) -> Tensor:
    """The matrix exponential ``sum_k A^k / k!`` of a square matrix (or of each in a batch).

    Example:
        >>> ember.linalg.matrix_exp(ember.zeros(2, 2))
        tensor([[1., 0.],
                [0., 1.]])
    """
    A = input  # (PyTorch's keyword name)
    check_matrix("linalg.matrix_exp", A, complex_ok=True)
    return apply(MatrixExp, A)
