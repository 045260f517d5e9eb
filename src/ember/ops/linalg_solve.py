"""Inverses, determinants and linear solvers: ``linalg.inv``, ``det``, ``slogdet``, ``solve``,
``solve_triangular``, ``matrix_power``, ``matrix_exp``, ``lu_factor`` / ``lu_solve``
(factorizations are in ``linalg_decomp.py``).

Primitives: ``linalg_inv``, ``linalg_slogdet``, ``linalg_solve``, ``linalg_solve_triangular``,
``linalg_matrix_exp`` and ``linalg_lu_factor``; every one takes a batch of matrices in its
leading dims. ``det`` and ``logdet`` are composites of ``slogdet``, ``matrix_power`` of
matmuls and ``inv``, ``lu_solve`` of two triangular solves. NumPy's ``numpy.linalg`` is the
backend (it has no triangular solver, so ``solve_triangular`` solves with the triangle
masked). A failed factorization raises :class:`LinAlgError` (a ``RuntimeError``, as PyTorch's)
naming the op and, in a batch, the failing element.
"""

from __future__ import annotations

from typing import Any, NamedTuple

import numpy as np

from ember import dtypes
from ember.errors import DTypeError, OpError, ShapeError, describe
from ember.ops.broadcast import broadcast_shapes, expand
from ember.ops.creation import eye, zeros
from ember.ops.join import cat
from ember.ops.linalg import matmul
from ember.ops.primitive import Primitive, TensorSpec, apply, primitive
from ember.ops.select import zero_grad_from
from ember.ops.shape import narrow
from ember.ops.unary import exp, log
from ember.tensor import Tensor, method

__all__ = ["inverse", "det", "logdet", "slogdet", "matrix_power", "matrix_exp"]


class LinAlgError(OpError):
    """A matrix function failed on the input's values: a singular matrix to invert or solve
    with, a matrix that is not positive-definite for ``cholesky`` (``torch.linalg.LinAlgError``).
    """


# -- checks shared with linalg_decomp.py -----------------------------------------------------
def check_float(op: str, *tensors: Tensor) -> None:
    """Refuses what PyTorch's linear algebra refuses: integer, bool and low-precision dtypes,
    and operands of different dtypes."""
    for t in tensors:
        if t.dtype is not dtypes.float32 and t.dtype is not dtypes.float64:
            kind = "low-precision" if t.dtype.is_floating_point else "non-floating"
            raise DTypeError(f"{op}: expected a float32 or float64 tensor, got the {kind} "
                             f"{describe(t.shape, t.dtype)}. Hint: convert it with .double() "
                             "or .float()")
    if len({t.dtype for t in tensors}) > 1:
        shown = " and ".join(describe(t.shape, t.dtype) for t in tensors)
        raise DTypeError(f"{op}: operands must have the same dtype, got {shown}")


def check_matrix(op: str, A: Tensor, square: bool = True, name: str = "A") -> None:  # noqa: N803
    """``A`` is a (batch of) matrices, square if ``square``, of float32/float64."""
    if A.ndim < 2:
        raise ShapeError(f"{op}: {name} must have at least 2 dimensions, got "
                         f"{describe(A.shape, A.dtype)}")
    if square and A.shape[-1] != A.shape[-2]:
        raise ShapeError(f"{op}: {name} must be batches of square matrices, but they are "
                         f"{A.shape[-2]} by {A.shape[-1]} matrices ({describe(A.shape, A.dtype)})")
    check_float(op, A)


def matrix_spec(op: str, a: TensorSpec, square: bool = True) -> None:
    """The ``infer`` side of :func:`check_matrix`."""
    if len(a.shape) < 2 or (square and a.shape[-1] != a.shape[-2]):
        raise ShapeError(f"{op}: expected a batch of {'square ' if square else ''}matrices, "
                         f"got {a}")


def mT(x: Tensor) -> Tensor:  # noqa: N802 - PyTorch's name for the matrix transpose
    return x.transpose(-2, -1)


def diag_embed(d: Tensor) -> Tensor:
    """Vectors ``(…, n)`` as diagonal matrices ``(…, n, n)``."""
    return d.unsqueeze(-1) * eye(d.shape[-1], dtype=d.dtype, device=d.device)


def failing_element(xp: Any, a: Any, fn: Any) -> str:
    """``"(Batch element i): "`` for the first matrix of a batch on which ``fn`` fails."""
    if a.ndim <= 2:
        return ""
    flat = a.reshape((-1,) + a.shape[-2:])
    for i in range(flat.shape[0]):
        try:
            fn(flat[i])
        except np.linalg.LinAlgError:
            return f"(Batch element {i}): "
    return ""


# -- inv -------------------------------------------------------------------------------------
@primitive
class Inv(Primitive):
    name = "linalg_inv"
    save_inputs = False
    save_outputs = True

    def forward(self, xp, a):
        try:
            return xp.linalg.inv(a)
        except np.linalg.LinAlgError:
            where = failing_element(xp, a, xp.linalg.inv)
            raise LinAlgError(f"linalg.inv: {where}the inversion could not be completed because "
                              f"the input matrix is singular ({describe(a.shape, a.dtype)})"
                              ) from None

    def infer(self, a):
        matrix_spec("linalg.inv", a)
        return a

    def vjp(self, ctx, g):
        x = mT(ctx.out)
        return -matmul(matmul(x, g), x)

    def jvp(self, ctx, da):
        x = ctx.out
        return -matmul(matmul(x, da), x)


def inv(A: Tensor) -> Tensor:  # noqa: N803 - PyTorch's argument name
    """The inverse of a square matrix (or of each in a batch); raises :class:`LinAlgError`
    for a singular one.

    Example:
        >>> ember.linalg.inv(ember.tensor([[2.0, 0.0], [0.0, 4.0]]))
        tensor([[0.5000, 0.0000],
                [0.0000, 0.2500]])
    """
    check_matrix("linalg.inv", A)
    return apply(Inv, A)


@method()
def inverse(input: Tensor) -> Tensor:
    """``torch.inverse``: the same as :func:`ember.linalg.inv`.

    Example:
        >>> ember.tensor([[2.0]]).inverse()
        tensor([[0.5000]])
    """
    check_matrix("inverse", input)
    return apply(Inv, input)


# -- determinants ----------------------------------------------------------------------------
class SlogdetResult(NamedTuple):
    sign: Tensor
    logabsdet: Tensor


@primitive
class Slogdet(Primitive):
    """``(sign, log|det|)``; only ``logabsdet`` has a gradient, ``A^-T`` times its own."""

    name = "linalg_slogdet"
    nout = 2

    def forward(self, xp, a):
        sign, logabsdet = xp.linalg.slogdet(a)
        return xp.asarray(sign, dtype=a.dtype), xp.asarray(logabsdet, dtype=a.dtype)

    def infer(self, a):
        matrix_spec("linalg.slogdet", a)
        out = TensorSpec(a.shape[:-2], a.dtype)
        return out, out

    def vjp(self, ctx, g_sign, g_logabsdet):
        if g_logabsdet is None:
            return (None,)
        return (g_logabsdet.unsqueeze(-1).unsqueeze(-1) * mT(inv(ctx.inputs[0])),)

    def jvp(self, ctx, da):
        d = (mT(inv(ctx.inputs[0])) * da).sum(dim=(-2, -1))
        return zeros(d.shape, dtype=d.dtype, device=d.device), d


@method()
def slogdet(A: Tensor) -> SlogdetResult:  # noqa: N803
    """The sign and the log of the absolute value of the determinant, ``(sign, logabsdet)``:
    ``(0, -inf)`` for a singular matrix.

    Example:
        >>> ember.linalg.slogdet(ember.tensor([[-2.0, 0.0], [0.0, 1.0]]))
        SlogdetResult(sign=tensor(-1.), logabsdet=tensor(0.6931))
    """
    check_matrix("linalg.slogdet", A)
    return SlogdetResult(*apply(Slogdet, A))


@method()
def det(A: Tensor) -> Tensor:  # noqa: N803
    """The determinant of a square matrix (or of each in a batch); 0 for a singular one.
    Its gradient, ``det(A) A^-T``, needs an invertible matrix.

    Example:
        >>> round(ember.linalg.det(ember.tensor([[1.0, 2.0], [3.0, 4.0]])).item(), 4)
        -2.0
    """
    check_matrix("linalg.det", A)
    sign, logabsdet = apply(Slogdet, A)
    return sign * exp(logabsdet)


@method()
def logdet(input: Tensor) -> Tensor:
    """``log(det(input))``: NaN for a negative determinant, ``-inf`` for a singular matrix.

    Example:
        >>> ember.logdet(ember.tensor([[2.0, 0.0], [0.0, 2.0]]))
        tensor(1.3863)
    """
    check_matrix("logdet", input)
    sign, logabsdet = apply(Slogdet, input)
    return logabsdet + log(sign)


# -- solve -----------------------------------------------------------------------------------
@primitive
class Solve(Primitive):
    """``X`` with ``A X = B`` for ``A (…, n, n)`` and ``B (…, n, k)`` of the same batch."""

    name = "linalg_solve"
    save_outputs = True

    def forward(self, xp, a, b):
        try:
            return xp.linalg.solve(a, b)
        except np.linalg.LinAlgError:
            where = failing_element(xp, a, xp.linalg.inv)
            raise LinAlgError(f"linalg.solve: {where}the solver failed because the input "
                              f"matrix is singular ({describe(a.shape, a.dtype)})") from None

    def infer(self, a, b):
        matrix_spec("linalg.solve", a)
        if len(b.shape) != len(a.shape) or b.shape[:-1] != a.shape[:-1]:
            raise ShapeError(f"linalg.solve: A {a} and B {b} do not fit A X = B")
        return b

    def reads(self, ctx, i):
        return i == 0  # B's gradient is a solve with A; X is the saved output

    def vjp(self, ctx, g):
        a, b = ctx.inputs
        gb = apply(Solve, mT(a), g)
        ga = -matmul(gb, mT(ctx.out)) if a.requires_grad else None
        return ga, gb if b.requires_grad else None

    def jvp(self, ctx, da, db):
        a = ctx.inputs[0]
        return apply(Solve, a, db - matmul(da, ctx.out))


def _is_vector_rhs(A: Tensor, B: Tensor) -> bool:  # noqa: N803
    """PyTorch's rule: ``B`` is a (batch of) vector(s) if 1-D, or if its shape is ``A``'s
    without the last dim."""
    return B.ndim == 1 or (B.ndim == A.ndim - 1 and B.shape == A.shape[:-1])


def solve(A: Tensor, B: Tensor, *, left: bool = True) -> Tensor:  # noqa: N803
    """The solution ``X`` of ``A X = B`` (``X A = B`` with ``left=False``) for square ``A``;
    ``B`` is a matrix or a vector (see PyTorch for when a 2-D ``B`` counts as a batch of
    vectors), and the batch dims broadcast. Raises :class:`LinAlgError` for singular ``A``.

    Example:
        >>> ember.linalg.solve(ember.tensor([[2.0, 0.0], [0.0, 4.0]]), ember.tensor([2.0, 2.0]))
        tensor([1.0000, 0.5000])
    """
    check_matrix("linalg.solve", A)
    check_float("linalg.solve", A, B)
    vector = _is_vector_rhs(A, B)
    if not left:
        return solve(mT(A), B) if vector else mT(solve(mT(A), mT(B)))
    b = B.unsqueeze(-1) if vector else B
    n = A.shape[-1]
    if b.ndim < 2 or b.shape[-2] != n:
        raise ShapeError(f"linalg.solve: incompatible shapes of A and B for the equation "
                         f"AX = B: A is {describe(A.shape, A.dtype)} and B "
                         f"{describe(B.shape, B.dtype)}")
    batch = broadcast_shapes(A.shape[:-2], b.shape[:-2], op="linalg.solve")
    x = apply(Solve, expand(A, batch + (n, n)), expand(b, batch + tuple(b.shape[-2:])))
    return x.squeeze(-1) if vector else x


# -- triangular solve ------------------------------------------------------------------------
def _triangle(x: Tensor, upper: bool, unitriangular: bool) -> Tensor:
    """The part of ``x`` a triangular solve reads (its strict triangle if unitriangular)."""
    k = 1 if unitriangular else 0
    return x.triu(k) if upper else x.tril(-k)


@primitive
class SolveTriangular(Primitive):
    """``X`` with ``A X = B`` (``X A = B`` if not ``left``) reading one triangle of ``A``."""

    name = "linalg_solve_triangular"
    save_outputs = True

    def forward(self, xp, a, b, *, upper, left, unitriangular):
        t = xp.triu(a) if upper else xp.tril(a)
        if unitriangular:
            n = a.shape[-1]
            t = t.copy()
            t[..., xp.arange(n), xp.arange(n)] = 1
        with np.errstate(all="ignore"):
            try:
                if left:
                    return xp.linalg.solve(t, b)
                return xp.swapaxes(xp.linalg.solve(xp.swapaxes(t, -1, -2),
                                                   xp.swapaxes(b, -1, -2)), -1, -2)
            except np.linalg.LinAlgError:
                raise LinAlgError(f"linalg.solve_triangular: a diagonal element of A is zero "
                                  f"({describe(a.shape, a.dtype)})") from None

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


def solve_triangular(A: Tensor, B: Tensor, *, upper: bool, left: bool = True,  # noqa: N803
                     unitriangular: bool = False) -> Tensor:
    """The solution ``X`` of ``A X = B`` (``X A = B`` with ``left=False``) for triangular
    ``A``: only its upper (``upper=True``) or lower triangle is read, and with
    ``unitriangular`` its diagonal is taken as ones. Batch dims broadcast.

    Example:
        >>> A = ember.tensor([[2.0, 0.0], [1.0, 1.0]])
        >>> ember.linalg.solve_triangular(A, ember.tensor([[2.0], [3.0]]), upper=False)
        tensor([[1.],
                [2.]])
    """
    op = "linalg.solve_triangular"
    check_matrix(op, A)
    check_float(op, A, B)
    n = A.shape[-1]
    if B.ndim < 2 or B.shape[-2 if left else -1] != n:
        raise ShapeError(f"{op}: incompatible shapes of A and B for the equation "
                         f"{'AX' if left else 'XA'} = B: A is {describe(A.shape, A.dtype)} "
                         f"and B {describe(B.shape, B.dtype)}")
    batch = broadcast_shapes(A.shape[:-2], B.shape[:-2], op=op)
    return apply(SolveTriangular, expand(A, batch + (n, n)),
                 expand(B, batch + tuple(B.shape[-2:])), upper=bool(upper), left=bool(left),
                 unitriangular=bool(unitriangular))


# -- powers and the exponential --------------------------------------------------------------
@method()
def matrix_power(A: Tensor, n: int) -> Tensor:  # noqa: N803
    """``A`` multiplied by itself ``n`` times (by repeated squaring); the identity for
    ``n = 0``, and powers of the inverse for ``n < 0``. Integer matrices take ``n >= 0``.

    Example:
        >>> ember.linalg.matrix_power(ember.tensor([[1, 1], [0, 1]]), 3)
        tensor([[1, 3],
                [0, 1]])
    """
    op = "linalg.matrix_power"
    if A.ndim < 2 or A.shape[-1] != A.shape[-2]:
        raise ShapeError(f"{op}: A must be batches of square matrices, got "
                         f"{describe(A.shape, A.dtype)}")
    if isinstance(n, bool) or not isinstance(n, (int, np.integer)):
        raise TypeError(f"{op}: n must be an integer, got {type(n).__name__}")
    n = int(n)
    if n == 0:  # the identity, in the graph with a zero gradient, as PyTorch's
        identity = expand(eye(A.shape[-1], dtype=A.dtype, device=A.device), A.shape)
        return zero_grad_from(A, identity.clone())
    if n < 0:
        check_matrix(op, A)
        A, n = inv(A), -n
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
    a = a.astype(np.float64)
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
class MatrixExp(Primitive):
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
def matrix_exp(A: Tensor) -> Tensor:  # noqa: N803
    """The matrix exponential ``sum_k A^k / k!`` of a square matrix (or of each in a batch).

    Example:
        >>> ember.linalg.matrix_exp(ember.zeros(2, 2))
        tensor([[1., 0.],
                [0., 1.]])
    """
    check_matrix("linalg.matrix_exp", A)
    return apply(MatrixExp, A)
