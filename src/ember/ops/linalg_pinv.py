"""The pseudoinverse and what builds on it: ``linalg.pinv``, ``lstsq``, ``matrix_rank`` and
PyTorch's older ``torch.pinverse``.

``linalg_pinv`` is a primitive batched over its leading dims, with PyTorch's gradient formulas
(valid while the rank stays the same); singular values at most ``max(atol, rtol·σ₁)`` count as
zero.
"""

from __future__ import annotations

import ml_dtypes
import numpy as np

from ember import dtypes, return_types
from ember.autograd.grad_mode import no_grad
from ember.errors import (
    ArgumentError,
    ArgumentTypeError,
    DTypeError,
    EmberError,
    OpError,
    ShapeError,
    describe,
)
from ember.ops.broadcast import broadcast_shapes, expand
from ember.ops.convert import float32_under_autocast
from ember.ops.creation import as_tensor, zeros
from ember.ops.int_args import as_float
from ember.ops.linalg import matmul
from ember.ops.linalg_decomp import eigvalsh, svdvals
from ember.ops.linalg_solve import (
    LinAlgError,
    batch_of,
    check_float,
    check_matrix,
    converged,
    is_vector_rhs,
    matrix_spec,
    mH,
)
from ember.ops.primitive import Primitive, TensorSpec, apply, primitive
from ember.ops.select import maximum, no_grad_from
from ember.tensor import Tensor, method

__all__ = ["pinverse"]


# -- pseudoinverse, least squares, rank ------------------------------------------------------
Tolerance = float | Tensor | None


def _tolerances(A: Tensor, atol: Tolerance, rtol: Tolerance,  # noqa: N803
                op: str) -> tuple[Tensor, Tensor]:
    """``atol`` and ``rtol`` as float64 tensors of the batch shape they and ``A``'s batch dims
    broadcast to (numbers, or tensors; an empty ``A`` keeps its own, as in PyTorch), with
    PyTorch's defaults: ``atol = 0`` and ``rtol = eps · max(m, n)`` where ``atol`` is not
    positive, else 0."""
    def as_float64(name: str, value: float | Tensor) -> Tensor:
        if isinstance(value, Tensor) and value.dtype.is_complex:
            raise DTypeError(f"{op}: {name} must be real, got the complex "
                             f"{describe(value.shape, value.dtype)}. Hint: pass its .abs()")
        return as_tensor(value, dtype=dtypes.float64, device=A.device)

    a = as_float64("atol", 0.0 if atol is None else atol)
    if rtol is not None:
        r = as_float64("rtol", rtol)
    else:
        # (ml_dtypes' finfo: NumPy's knows bfloat16 (autocast's) only from ml_dtypes 0.7 on)
        eps = float(ml_dtypes.finfo(A.dtype.np).eps)
        r = (a <= 0).to(dtypes.float64) * (eps * max(A.shape[-2:]))
    batch = tuple(A.shape[:-2])
    if not A.numel():
        return (zeros(batch, dtype=dtypes.float64, device=A.device),) * 2
    try:
        batch = broadcast_shapes(batch, tuple(a.shape), tuple(r.shape), op=op)
    except ShapeError:
        raise ShapeError(f"{op}: atol of shape {tuple(a.shape)} and rtol of shape "
                         f"{tuple(r.shape)} do not broadcast against the batch dims {batch} of "
                         f"A {describe(A.shape, A.dtype)}. Hint: give one tolerance per "
                         "matrix, or a number") from None
    return expand(a, batch), expand(r, batch)


@primitive
class Pinv(Primitive):
    """The Moore-Penrose pseudoinverse, singular values at most ``max(atol, rtol·σ₁)`` taken
    as zero (``atol`` and ``rtol`` are float64 inputs of ``A``'s batch shape, without
    gradients); PyTorch's gradient formulas (valid while the rank stays the same). With
    ``hermitian``, the eigendecomposition of ``A``'s lower triangle (its other triangle is
    not read, as PyTorch's), whose singular values are the eigenvalues' magnitudes."""

    name = "linalg_pinv"
    complex_grad = True
    save_outputs = True

    def forward(self, xp, a, atol, rtol, *, hermitian=False):
        m, n = a.shape[-2:]
        if a.size == 0:
            return xp.zeros(a.shape[:-2] + (n, m), a.dtype)
        if hermitian:  # A = V diag(w) Vᴴ: A⁺ = V diag(1/w) Vᴴ over the kept eigenvalues
            w, u = converged("linalg.pinv", xp.linalg.eigh, a)
            s, vh = xp.abs(w), xp.swapaxes(u, -1, -2).conj()
            tol = xp.maximum(atol[..., None], rtol[..., None] * s.max(axis=-1, keepdims=True))
            with np.errstate(divide="ignore"):
                s_inv = xp.where(s > tol, 1 / w, 0).astype(a.dtype)
            return u * s_inv[..., None, :] @ vh
        u, s, vh = converged("linalg.pinv", xp.linalg.svd, a, full_matrices=False)
        tol = xp.maximum(atol[..., None], rtol[..., None] * s[..., :1])
        with np.errstate(divide="ignore"):
            s_inv = xp.where(s > tol, 1 / s, 0).astype(a.dtype)
        v, uh = xp.swapaxes(vh, -1, -2), xp.swapaxes(u, -1, -2)
        if a.dtype.kind == "c":
            v, uh = v.conj(), uh.conj()
        return v * s_inv[..., None, :] @ uh

    def infer(self, a, atol, rtol, *, hermitian=False):
        matrix_spec("linalg.pinv", a, square=hermitian)
        if atol.shape != a.shape[:-2] or rtol.shape != a.shape[:-2]:
            raise ShapeError(f"linalg.pinv: atol {atol} and rtol {rtol} must have the batch "
                             f"shape of A {a}")
        return TensorSpec(a.shape[:-2] + (a.shape[-1], a.shape[-2]), a.dtype)

    def reads(self, ctx, i):
        return i == 0

    def vjp(self, ctx, g):
        a, p = ctx.inputs[0], ctx.out
        m, n = a.shape[-2:]
        ph, gh = mH(p), mH(g)
        if m <= n:
            k = matmul(gh, p)
            kph = matmul(k, ph)
            return (-mH(matmul(p, k)) + kph - matmul(matmul(a, p), kph)
                    + matmul(matmul(ph, p), gh - matmul(k, a))), None, None
        k = matmul(p, gh)
        phk = matmul(ph, k)
        return (-mH(matmul(k, p)) + matmul(matmul(gh - matmul(a, k), p), ph) + phk
                - matmul(matmul(phk, p), a)), None, None

    def jvp(self, ctx, da, *_tolerance_tangents):
        a, p = ctx.inputs[0], ctx.out
        m, n = a.shape[-2:]
        dah, ph = mH(da), mH(p)
        if m <= n:
            k = matmul(ph, dah)
            return (matmul(p, k - mH(k) - matmul(k, matmul(a, p)))
                    + matmul(dah - matmul(p, matmul(a, dah)), matmul(ph, p)))
        k = matmul(p, da)
        kh = mH(k)
        return (matmul(kh - k - matmul(matmul(p, a), kh), p)
                + matmul(matmul(p, ph), dah - matmul(matmul(dah, a), p)))


def _pinv(A: Tensor, atol: Tolerance, rtol: Tolerance, op: str,  # noqa: N803
          hermitian: bool = False) -> Tensor:
    """:class:`Pinv` of ``A`` expanded to the batch shape of its tolerances."""
    a, r = _tolerances(A, atol, rtol, op)
    return apply(Pinv, expand(A, tuple(a.shape) + tuple(A.shape[-2:])), a, r,
                 hermitian=bool(hermitian))


def _check_input(op: str, A: Tensor, hermitian: bool) -> None:  # noqa: N803
    """A (batch of) matrices, square when ``hermitian`` (PyTorch then calls ``eigh``)."""
    check_matrix(f"{op}(hermitian=True)" if hermitian else op, A, square=bool(hermitian),
                 complex_ok=True)


def _older_spelling(op: str, old: str, value: Tolerance, atol: Tolerance, rtol: Tolerance,
                    as_atol: bool) -> tuple[Tolerance, Tolerance]:
    """PyTorch's older ``pinv(A, rcond)`` (``rtol=rcond, atol=0``) and ``matrix_rank(A, tol)``
    (``atol=tol, rtol=0``): the ``(atol, rtol)`` pair they mean."""
    if value is None:
        return atol, rtol
    new = "atol" if as_atol else "rtol"
    if atol is not None or rtol is not None:
        raise ArgumentTypeError(f"{op}: {old} is the older spelling of {new}; pass either {old} "
                                f"or atol/rtol, not both (a TypeError, as torch's)")
    return (value, 0.0) if as_atol else (0.0, value)


@float32_under_autocast  # (a low-precision input runs in float32, with float32's default rtol)
def pinv(input: Tensor, rcond: Tolerance = None, hermitian: bool = False, *,
         atol: Tolerance = None, rtol: Tolerance = None) -> Tensor:
    """The pseudoinverse of a matrix (or of each in a batch): singular values up to
    ``max(atol, rtol · σ₁)`` count as zero; ``rtol`` defaults to ``eps · max(m, n)`` (0 when
    a positive ``atol`` is given). ``atol`` and ``rtol`` may be tensors that broadcast against
    the batch dims; ``rcond`` is PyTorch's older spelling of ``rtol`` (with ``atol=0``).
    With ``hermitian``, ``A`` must be square and only its lower triangle is read (the
    eigendecomposition, as PyTorch's: a matrix that is not Hermitian is taken as the one its
    lower triangle makes).

    Example:
        >>> ember.linalg.pinv(ember.tensor([[2.0, 0.0], [0.0, 0.0]]))
        tensor([[0.5000, 0.0000],
                [0.0000, 0.0000]])
    """
    A = input  # (PyTorch's keyword name)
    _check_input("linalg.pinv", A, hermitian)
    atol, rtol = _older_spelling("linalg.pinv", "rcond", rcond, atol, rtol, as_atol=False)
    return _pinv(A, atol, rtol, "linalg.pinv", hermitian)


@method()
def pinverse(input: Tensor, rcond: float = 1e-15) -> Tensor:
    """``torch.pinverse``: :func:`ember.linalg.pinv` with ``rtol=rcond``.

    Example:
        >>> ember.tensor([[2.0]]).pinverse()
        tensor([[0.5000]])
    """
    check_matrix("pinverse", input, square=False, complex_ok=True)
    return _pinv(input, 0.0, as_float(rcond, "pinverse", "rcond"), "pinverse")


@float32_under_autocast  # (PyTorch's CPU float32 list: the default rtol is float32's eps)
def matrix_rank(input: Tensor, tol: Tolerance = None, hermitian: bool = False, *,
                atol: Tolerance = None, rtol: Tolerance = None) -> Tensor:
    """The number of singular values above ``max(atol, rtol · σ₁)`` (defaults and tensor
    tolerances as in :func:`pinv`), as int64; ``tol`` is PyTorch's older spelling of ``atol``
    (with ``rtol=0``). With ``hermitian``, the eigenvalues' magnitudes of the matrix that
    ``A``'s lower triangle makes (its other triangle is not read, as PyTorch's).

    Example:
        >>> ember.linalg.matrix_rank(ember.ones(3, 3))
        tensor(1)
    """
    A = input  # (PyTorch's keyword name)
    op = "linalg.matrix_rank"
    _check_input(op, A, hermitian)
    atol, rtol = _older_spelling(op, "tol", tol, atol, rtol, as_atol=True)
    atol, rtol = _tolerances(A, atol, rtol, op)
    with no_grad():
        s = eigvalsh(A).abs() if hermitian else svdvals(A)
        if s.shape[-1] == 0:
            return zeros(s.shape[:-1], dtype=dtypes.int64, device=A.device)
        tol = maximum(atol.unsqueeze(-1), rtol.unsqueeze(-1) * s.amax(dim=-1, keepdim=True))
        return (s > tol).sum(dim=-1)


_DRIVERS = ("gels", "gelsy", "gelsd", "gelss")


def _cutoff(driver: str, rcond: float | None, dtype: dtypes.DType) -> tuple[float | None,
                                                                           float | None]:
    """``(atol, rtol)`` for :func:`pinv` and :func:`matrix_rank` that drop the singular values
    ``driver`` drops at ``rcond``, read as LAPACK reads it (in A's precision): ``'gelsd'``
    takes ``rcond`` outside (0, 1) as eps/2, ``'gelss'`` a negative one as eps and never
    keeps values below the smallest normal number, ``'gelsy'`` keeps every nonzero value at
    ``rcond <= 0``, a value equal to ``rcond · σ₁``, and ``σ₁`` even at ``rcond >= 1``;
    ``'gels'`` has no cutoff and ``None`` is PyTorch's default."""
    if rcond is None:
        return None, None
    real = np.float64 if dtype in (dtypes.float64, dtypes.complex128) else np.float32
    rcond = float(real(as_float(rcond, "linalg.lstsq", "rcond")))
    if driver == "gels":
        return None, None
    eps = float(np.finfo(real).eps)
    if driver == "gelsd":
        return None, rcond if 0 < rcond < 1 else eps / 2
    if driver == "gelss":
        return float(np.finfo(real).tiny), rcond if rcond >= 0 else eps
    # gelsy keeps a value at rcond · σ₁ (cond(R₁₁) <= 1/rcond), and σ₁ for rcond >= 1
    return None, float(np.nextafter(min(rcond, 1.0), 0.0)) if rcond > 0 else 0.0


@primitive
class LstsqResiduals(Primitive):
    """``residuals`` (``‖A X - B‖²`` per column) passed on where every ``rank`` is ``n``: for
    ``lstsq``'s ``'gelsd'``/``'gelss'`` under vmap, the jit and ``ember.export``, where Python
    cannot read the ranks. Their shape cannot depend on them there, so a rank-deficient
    matrix is an error (eager ``lstsq`` gives no residuals then, as PyTorch's)."""

    name = "linalg_lstsq_residuals"
    save_inputs = False  # (its rules read none)
    allocates = True
    complex_grad = True  # (real residuals; passes the gradient on)

    def forward(self, xp, residuals, rank, *, n):
        deficient = xp.flatnonzero(rank.reshape(-1) != n)
        if deficient.size:
            where = f"(Batch element {int(deficient[0])}): " if rank.ndim else ""
            raise LinAlgError(
                f"linalg.lstsq: {where}the matrix has rank {int(rank.reshape(-1)[deficient[0]])} "
                f"< {n} columns, so driver 'gelsd'/'gelss' gives no residuals, and under "
                "vmap, ember.compile or ember.export their shape cannot depend on the data. "
                "Hint: call lstsq outside the transform, or compute "
                "(A @ X - B).abs().pow(2).sum(-2) from the solution")
        return residuals.copy()

    def infer(self, residuals, rank, *, n):
        return TensorSpec(tuple(residuals.shape), residuals.dtype)

    def vjp(self, ctx, g):
        return g, None

    def jvp(self, ctx, dresiduals, drank):
        return dresiduals


@float32_under_autocast
def lstsq(input: Tensor, b: Tensor, rcond: float | None = None, *,
          driver: str | None = None) -> return_types.linalg_lstsq:
    """The least-squares (minimum-norm) solution ``X`` of ``A X ≈ B``, as ``pinv(A) @ B``
    (differentiable in both); ``B`` is a (batch of) vector(s) when 1-D or shaped as ``A``
    without its last dim, as in :func:`solve`, else matrices (broadcast against ``A``'s batch
    dims; with one dim fewer than ``A`` PyTorch 2.13 differs: docs/tensors_and_autograd.md).
    The other fields follow PyTorch's CPU ``driver`` (default ``'gelsy'``): ``rank`` for all
    but ``'gels'``; ``singular_values`` for ``'gelsd'`` and ``'gelss'``; ``residuals``
    (``‖A X - B‖²`` per column, differentiable) when ``m > n``, for ``'gels'``, and for
    ``'gelsd'``/``'gelss'`` when every matrix has full rank. What a driver does not give is
    an empty tensor. Under vmap, ``ember.compile`` and in an ``ember.export`` program the
    residuals' shape cannot depend on the ranks, so ``'gelsd'``/``'gelss'`` then need every
    matrix of full rank (else a ``LinAlgError``). ``rcond`` (singular values below
    ``rcond · σ₁`` count as zero; zero, negative and, for ``'gelsd'``, ``>= 1`` read as
    LAPACK's drivers read them) is ignored by ``'gels'``; ``'gelsy'``'s rank and truncation
    come from the singular values here, not from LAPACK's pivoted QR, so where ``rcond`` cuts
    some off the rank may differ near the cutoff and the solution differs.

    Example:
        >>> A = ember.tensor([[1.0, 0.0], [0.0, 1.0], [0.0, 0.0]])
        >>> ember.linalg.lstsq(A, ember.tensor([1.0, 2.0, 3.0]), driver="gelsd").residuals
        tensor([9.])
    """
    A, B = input, b  # (PyTorch's keyword names)
    op = "linalg.lstsq"
    driver = "gelsy" if driver is None else driver.lower() if isinstance(driver, str) else driver
    if driver not in _DRIVERS:
        raise ArgumentError(f"{op}: driver must be one of {', '.join(_DRIVERS)} on the CPU, got "
                            f"{driver!r}")
    check_matrix(op, A, square=False, complex_ok=True)
    check_float(op, A, B, complex_ok=True)
    if not 0 <= A.ndim - B.ndim <= 1:
        raise OpError(f"{op}: B must have as many dims as A (a batch of matrices) or one fewer "
                      f"(a batch of vectors), got {describe(A.shape, A.dtype)} and "
                      f"{describe(B.shape, B.dtype)}. Hint: expand A to B's batch dims")
    vector = is_vector_rhs(A, B)
    b = B.unsqueeze(-1) if vector else B
    m, n = A.shape[-2:]
    if b.ndim < 2 or b.shape[-2] != m:
        raise OpError(f"{op}: A and B must have the same number of rows, got "
                      f"{describe(A.shape, A.dtype)} and {describe(B.shape, B.dtype)}")
    batch_of(op, A, B, b_batch=tuple(b.shape[:-2]))
    atol, rtol = _cutoff(driver, rcond, A.dtype)
    x = matmul(pinv(A, atol=atol, rtol=rtol), b)
    empty = zeros((0,), dtype=A.dtype.to_real(), device=A.device)
    rank = matrix_rank(A, atol=atol, rtol=rtol) if driver != "gels" else \
        zeros((0,), dtype=dtypes.int64, device=A.device)
    with no_grad():
        values = svdvals(A) if driver in ("gelsd", "gelss") else empty
    full_rank = driver != "gelsy"
    if driver in ("gelsd", "gelss") and m > n:
        try:
            full_rank = bool((rank == n).all())
        except EmberError:  # (vmap or the jit: the ranks cannot be read, only checked)
            full_rank = None
    # (none: still an output of the graph when x is, as PyTorch's, passing no gradient back)
    residuals = (abs(matmul(A, x) - b) ** 2).sum(dim=-2) if m > n and full_rank is not False \
        else no_grad_from(empty, A, B)
    if full_rank is None:
        residuals = apply(LstsqResiduals, residuals, rank, n=n)
    return return_types.linalg_lstsq(x.squeeze(-1) if vector else x, residuals, rank, values)
