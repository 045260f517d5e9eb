"""Randomized low-rank decompositions: ``svd_lowrank`` and ``pca_lowrank``, PyTorch's
algorithm (Halko, Martinsson and Tropp 2009, algorithms 4.4 and 5.1): a Gaussian sketch of
``q`` columns, ``niter`` subspace (power) iterations re-orthonormalised by QR, then the SVD of
the small ``q × n`` projection.

Composites of ``randn``, ``matmul``, ``linalg.qr`` and ``linalg.svd``, so they are
differentiable (for a fixed random sketch) and draw from the default generator:
``ember.manual_seed`` makes them repeatable. The sketch's numbers differ from PyTorch's, so
the results agree with PyTorch's up to the approximation (exactly, up to signs, when the
rank of ``A`` is at most ``q``).

Example:
    >>> A = ember.tensor([[3.0, 0.0], [0.0, 2.0], [0.0, 0.0]])
    >>> U, S, V = ember.svd_lowrank(A, q=2)
    >>> S.round(decimals=4)
    tensor([3., 2.])
"""

from __future__ import annotations

from ember import dtypes
from ember.errors import ArgumentError, ShapeError, describe, is_floating_input
from ember.ops.broadcast import broadcast_to
from ember.ops.linalg import matmul
from ember.ops.linalg_decomp import linalg_qr, linalg_svd
from ember.ops.random import randn
from ember.tensor import Tensor

__all__ = ["svd_lowrank", "pca_lowrank"]


def _floating(op: str, name: str, A: Tensor) -> Tensor:  # noqa: N803
    return (A if is_floating_input(op, name, A) or A.dtype.is_complex  # type: ignore[attr-defined]
            else A.to(dtypes.float32))


def _approximate_basis(A: Tensor, q: int, niter: int, M: Tensor | None) -> Tensor:  # noqa: N803
    """An orthonormal ``m × q`` basis approximately spanning the range of ``A - M``."""
    def times(x: Tensor) -> Tensor:
        return matmul(A, x) if M is None else matmul(A, x) - matmul(M, x)

    def adjoint_times(x: Tensor) -> Tensor:
        return matmul(A.mH, x) if M is None else matmul(A.mH, x) - matmul(M.mH, x)

    sketch = randn(A.shape[-1], q, dtype=A.dtype, device=A.device)
    Q = linalg_qr(times(sketch)).Q  # noqa: N806
    for _ in range(niter):
        Q = linalg_qr(adjoint_times(Q)).Q  # noqa: N806
        Q = linalg_qr(times(Q)).Q  # noqa: N806
    return Q


def _svd_lowrank(A: Tensor, q: int, niter: int, M: Tensor | None) -> tuple:  # noqa: N803
    m, n = A.shape[-2:]
    if M is not None:
        M = broadcast_to(_floating("svd_lowrank", "M", M), tuple(A.shape))  # noqa: N806
    wide = m < n
    if wide:  # work with the tall Aᴴ: its basis is the smaller one
        A, M = A.mH, None if M is None else M.mH  # noqa: N806
    Q = _approximate_basis(A, q, niter, M)  # noqa: N806
    B = matmul(Q.mH, A) if M is None else matmul(Q.mH, A) - matmul(Q.mH, M)  # noqa: N806
    U, S, Vh = linalg_svd(B, full_matrices=False)  # noqa: N806
    U, V = matmul(Q, U), Vh.mH  # noqa: N806
    return (V, S, U) if wide else (U, S, V)


def _check(op: str, A: Tensor, q: int, niter: int) -> None:  # noqa: N803
    if A.ndim < 2:
        raise ShapeError(f"{op}: A must be a matrix or a batch of matrices, got "
                         f"{describe(A.shape, A.dtype)}")
    if niter < 0:
        raise ArgumentError(f"{op}: niter(={niter}) must be non-negative integer")
    if q < 0:
        raise ArgumentError(f"{op}: q(={q}) must be non-negative integer")


def svd_lowrank(A: Tensor, q: int | None = 6, niter: int | None = 2,  # noqa: N803
                M: Tensor | None = None) -> tuple[Tensor, Tensor, Tensor]:
    """``(U, S, V)`` with ``A - M ≈ U diag(S) Vᴴ``: a randomized rank-``q`` SVD (``q``
    defaults to 6, ``niter`` subspace iterations to 2; ``M`` broadcasts to ``A``). Choose
    ``q`` a little above the rank you want; ``U`` is ``m × q``, ``V`` ``n × q``.

    Example:
        >>> _ = ember.manual_seed(0)
        >>> A = ember.randn(20, 2) @ ember.randn(2, 10)  # rank 2
        >>> U, S, V = ember.svd_lowrank(A, q=4)
        >>> ((U * S) @ V.mT - A).abs().max() < 1e-4
        tensor(True)
    """
    q, niter = 6 if q is None else q, 2 if niter is None else niter
    _check("svd_lowrank", A, q, niter)
    return _svd_lowrank(_floating("svd_lowrank", "A", A), q, niter, M)


def pca_lowrank(A: Tensor, q: int | None = None, center: bool = True,  # noqa: N803
                niter: int = 2) -> tuple[Tensor, Tensor, Tensor]:
    """Principal component analysis by :func:`svd_lowrank` of ``A`` (``m`` samples of ``n``
    features), centred on its column means unless ``center=False``: ``V``'s columns are the
    principal directions, ``S² / (m - 1)`` the explained variances. ``q`` defaults to
    ``min(6, m, n)`` and may not exceed ``min(m, n)``.

    Example:
        >>> A = ember.tensor([[1.0, 1.0], [2.0, 2.0], [3.0, 3.0]])
        >>> U, S, V = ember.pca_lowrank(A, q=1)
        >>> S.round(decimals=4)
        tensor([2.])
    """
    m, n = A.shape[-2:] if A.ndim >= 2 else (0, 0)
    if q is None:
        q = min(6, m, n)
    elif not 0 <= q <= min(m, n):
        raise ArgumentError(f"pca_lowrank: q(={q}) must be non-negative integer and not greater "
                            f"than min(m, n)={min(m, n)}")
    _check("pca_lowrank", A, q, niter)
    A = _floating("pca_lowrank", "A", A)  # noqa: N806
    if center:
        A = A - A.mean(-2, keepdim=True)  # noqa: N806
    return _svd_lowrank(A, q, niter, None)
