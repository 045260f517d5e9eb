"""``lobpcg``: a few extreme eigenpairs of a symmetric positive-definite (generalized) eigenvalue
problem ``A x = λ B x`` by the Locally Optimal Block Preconditioned Conjugate Gradient method,
PyTorch's ``torch.lobpcg``.

Each step does a Rayleigh-Ritz projection on the search basis ``S = [X, P, W]`` (current Ritz
vectors, previous directions, preconditioned residuals). ``method='basic'`` is Knyazev's
(2001): it B-orthonormalises ``S`` by a scaled Cholesky factor, which fails when ``S`` loses
rank. ``method='ortho'`` (the default) keeps ``S`` B-orthonormal (Stathopoulos and Wu 2002;
Duersch et al. 2018): ``W`` is projected off ``[X, P]`` and orthonormalised by SVQB
(``eigh`` of its Gram matrix), which survives near-dependence. Converged leading pairs are
locked (left out of the basis). Written in Ember ops, so ``A`` may be dense, a batch of dense
matrices or sparse COO, float32 or float64; the iteration is not differentiated, and the
gradient of the ``k`` computed pairs (dense ``A``, no ``B``) comes from the eigenpair
perturbation formula, as in PyTorch. Unlike PyTorch, ``iK`` preconditions the residuals for
both methods (PyTorch's ``'ortho'`` ignores it); the eigenpairs found are the same.

Example:
    >>> A = ember.diag(ember.arange(1.0, 13.0, dtype=ember.float64))
    >>> E, X = ember.lobpcg(A, k=2, X=ember.eye(12, 2, dtype=ember.float64) + 0.1)
    >>> E.round(decimals=6)
    tensor([12., 11.], dtype=ember.float64)
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from ember import dtypes
from ember.autograd.function import Function
from ember.autograd.grad_mode import is_grad_enabled, no_grad
from ember.errors import ArgumentError, DTypeError, ShapeError, describe, is_complex_input
from ember.ops.creation import eye
from ember.ops.join import cat, stack
from ember.ops.linalg import matmul
from ember.ops.linalg_decomp import eigh, linalg_cholesky, linalg_qr
from ember.ops.linalg_solve import solve, solve_triangular
from ember.ops.random import randn
from ember.tensor import Tensor

__all__ = ["lobpcg"]

_EPS = {dtypes.float32: 1.2e-07, dtypes.float64: 2.23e-16}


def _mm(M: Tensor | None, X: Tensor) -> Tensor:  # noqa: N803
    """``M @ X``, with ``None`` standing for the identity (no ``B``, no ``iK``)."""
    return X if M is None else matmul(M, X)


def _qform(M: Tensor | None, S: Tensor) -> Tensor:  # noqa: N803
    return matmul(S.mT, _mm(M, S))


def _symeig(M: Tensor, largest: bool) -> tuple[Tensor, Tensor]:  # noqa: N803
    """Eigenpairs of the symmetric part of ``M``, the wanted end first."""
    E, Z = eigh((M + M.mT) / 2)  # noqa: N806
    return (E.flip(-1), Z.flip(-1)) if largest else (E, Z)


class LOBPCG:
    """One LOBPCG run on a single matrix; the ``tracker`` receives it after every step.

    As PyTorch's worker, it exposes ``X``, ``E``, ``R``, ``S`` and the dicts ``iparams``,
    ``fparams``, ``bparams`` (settings), ``ivars`` (``istep``, ``converged_count``, ...),
    ``fvars`` (norm estimates), ``tvars`` (``rerr``: relative residual per pair) and ``bvars``:
    a tracker sets ``worker.bvars['force_stop'] = True`` to stop early.
    """

    def __init__(self, A: Tensor, B: Tensor | None, X: Tensor, iK: Tensor | None,  # noqa: N803
                 iparams: dict, fparams: dict, bparams: dict, method: str,
                 tracker: Callable[[LOBPCG], Any] | None) -> None:
        self.A, self.B, self.iK, self.X = A, B, iK, X
        self.iparams, self.fparams, self.bparams = iparams, fparams, bparams
        self.method, self.tracker = method, tracker
        n = iparams["n"]
        self.E = X.new_zeros((n,))
        self.R = X.new_zeros(X.shape)
        self.S = X.new_zeros((X.shape[0], 3 * n))
        self.ivars: dict[str, int] = {"istep": 0, "converged_count": 0, "converged_end": 0,
                                      "iterations_left": iparams["niter"]}
        self.fvars: dict[str, float] = {}
        self.bvars: dict[str, bool] = {}
        self.tvars: dict[str, Tensor] = {}

    def run(self) -> None:
        """Iterates until ``k`` pairs converge, ``niter`` steps pass or the tracker stops it."""
        x_norm = float(self.X.norm())
        self.fvars.update(X_norm=x_norm, A_norm=float(_mm(self.A, self.X).norm()) / x_norm,
                          B_norm=float(_mm(self.B, self.X).norm()) / x_norm)
        while True:
            self._step()
            if self.tracker is not None:
                self.tracker(self)
            # PyTorch stops when the count reaches exactly 0: niter=-1 runs until converged
            if (self.bvars.get("force_stop", False) or self.ivars["iterations_left"] == 0
                    or self.ivars["converged_count"] >= self.iparams["k"]):
                return

    def _step(self) -> None:
        n, largest = self.iparams["n"], self.bparams["largest"]
        nc, ns = self.ivars["converged_count"], self.ivars["converged_end"]
        if self.ivars["istep"] == 0:
            Ri = self._rayleigh_ritz_transform(self.X)  # noqa: N806
            E, Z = _symeig(_qform(self.A, matmul(self.X, Ri)), largest)  # noqa: N806
            self.X, self.E = matmul(self.X, matmul(Ri, Z)), E
            P = self.X[:, :0]  # noqa: N806
        else:
            # 'ortho' locks the converged leading pairs, as its basis is B-orthogonal to
            # them; 'basic' keeps them in its basis, which nothing orthogonalises against them
            lock = nc if self.method == "ortho" else 0
            S = self.S[:, lock:ns]  # noqa: N806 - the unlocked basis [X, P, W]
            free = n - lock
            if self.method == "ortho":  # S is B-orthonormal already
                E, Z = _symeig(_qform(self.A, S), largest)  # noqa: N806
                C = matmul(S, Z)  # noqa: N806 - the Ritz vectors
                # the new directions: the rest of the Ritz space, rotated so that it is
                # B-orthonormal and matches the coordinates of the old X block
                P = matmul(C[:, free:], linalg_qr(Z[:free, free:].mT).Q)  # noqa: N806
            else:
                Ri = self._rayleigh_ritz_transform(S)  # noqa: N806
                E, Z = _symeig(_qform(self.A, matmul(S, Ri)), largest)  # noqa: N806
                C = matmul(S, matmul(Ri, Z))  # noqa: N806
                # Knyazev's P: the new X's component outside the old X block
                P = matmul(S[:, free:], matmul(Ri, Z)[free:, :free])  # noqa: N806
            self.X = self.X.clone()
            self.X[:, lock:] = C[:, :free]
            self.E = self.E.clone()
            self.E[lock:] = E[:free]
        self.R = _mm(self.A, self.X) - _mm(self.B, self.X) * self.E
        nc = self._update_converged_count()
        W = _mm(self.iK, self.R[:, nc:])  # noqa: N806
        if self.method == "ortho" and W.shape[-1]:
            W = self._ortho(W, self.X if P.shape[-1] == 0 else _cat(self.X, P))  # noqa: N806
        np_, nw = P.shape[-1], W.shape[-1]
        self.S = _cat(self.X, P, W, self.X.new_zeros((self.X.shape[0], 2 * n - np_ - nw)))
        self.ivars["converged_end"] = n + np_ + nw
        self.ivars["istep"] += 1
        self.ivars["iterations_left"] -= 1

    def _update_converged_count(self) -> int:
        """Counts the leading pairs whose backward error (Duersch et al. 2018, section 4.3)
        is below ``tol``; the count never decreases, since those pairs are locked."""
        f = self.fvars
        rerr = self.R.norm(dim=0) / (self.X.norm(dim=0) * (f["A_norm"]
                                                          + self.E.abs() * f["B_norm"]))
        count = 0
        for ok in (rerr < self.fparams["tol"]).tolist():
            if not ok:
                break
            count += 1
        self.tvars["rerr"] = rerr
        self.ivars["converged_count"] = max(count, self.ivars["converged_count"])
        return self.ivars["converged_count"]

    def _rayleigh_ritz_transform(self, S: Tensor) -> Tensor:  # noqa: N803
        """``Ri`` with ``Riᵀ Sᵀ B S Ri = I``: the inverse Cholesky factor of the diagonally
        scaled Gram matrix (the scaling keeps Cholesky accurate)."""
        SBS = _qform(self.B, S)  # noqa: N806
        d = SBS.diagonal() ** -0.5
        R = linalg_cholesky(SBS * d * d.unsqueeze(-1), upper=True)  # noqa: N806
        return solve_triangular(R, d.diag_embed(), upper=True, left=False)

    def _svqb(self, U: Tensor, drop: bool, tau: float) -> Tensor:  # noqa: N803
        """``U`` made B-orthonormal by the eigendecomposition of its scaled Gram matrix;
        directions with tiny eigenvalues are dropped (``drop``) or kept with the eigenvalue
        raised to ``tau`` times the largest one (so the result stays bounded)."""
        UBU = _qform(self.B, U)  # noqa: N806
        keep = (UBU.diagonal() != 0).nonzero().flatten()
        if drop and keep.numel() < U.shape[-1]:
            U, UBU = U[:, keep], UBU[keep][:, keep]  # noqa: N806
        d = UBU.diagonal()
        d = d.masked_fill(d == 0, 1) ** -0.5
        E, Z = eigh(UBU * d * d.unsqueeze(-1))  # noqa: N806
        floor = tau * float(E.abs().max())
        if drop:
            big = (E > floor).nonzero().flatten()
            E, Z = E[big], Z[:, big]  # noqa: N806
        else:
            E = E.clamp(min=floor)  # noqa: N806
        return matmul(U * d, Z * E ** -0.5)

    def _ortho(self, U: Tensor, V: Tensor) -> Tensor:  # noqa: N803
        """``U`` made B-orthonormal and B-orthogonal to the B-orthonormal ``V``, by repeated
        projection and SVQB (Stathopoulos and Wu 2002)."""
        ip, fp = self.iparams, self.fparams
        use_drop = self.bparams["ortho_use_drop"]
        BV_norm = float(_mm(self.B, V).norm())  # noqa: N806
        for i in range(ip["ortho_i_max"]):
            U = U - matmul(V, matmul(_mm(self.B, V).mT, U))  # noqa: N806
            for j in range(ip["ortho_j_max"]):
                drop = use_drop and j == 0
                U = self._svqb(U, drop, fp["ortho_tol_drop" if drop else "ortho_tol_replace"])  # noqa: N806
                BU = _mm(self.B, U)  # noqa: N806
                UBU = matmul(U.mT, BU)  # noqa: N806
                eye_ = eye(U.shape[-1], dtype=U.dtype, device=U.device)
                if float((UBU - eye_).norm() / UBU.norm()) < fp["ortho_tol"]:
                    break
            cross_err = float(matmul(V.mT, BU).norm() / (BV_norm * float(U.norm())))
            self.fvars[f"ortho_VBU_rerr[{i}]"] = cross_err
            if cross_err < fp["ortho_tol"]:
                break
        # as PyTorch's: after ortho_i_max rounds the best U so far serves (an ortho_tol under
        # the rounding error, e.g. tol=0, is never met); fvars shows how far it got
        return U


def _cat(*parts: Tensor) -> Tensor:
    return cat(parts, dim=-1)


def _settings(A: Tensor, k: int | None, X: Tensor | None, n: int | None,  # noqa: N803
              niter: int | None, tol: float | None, largest: bool | None, method: str,
              ortho: tuple[dict | None, dict | None, dict | None]) -> tuple[dict, dict, dict]:
    """PyTorch's defaults: ``k`` one (or X's width), ``n = k``, ``niter`` 1000, ``tol`` the
    square root of the dtype's epsilon; the ``ortho_*`` dicts only for ``method='ortho'``."""
    m = A.shape[-1]
    k = (1 if X is None else X.shape[-1]) if k is None else k
    n = (k if n is None else n) if X is None else X.shape[-1]
    if n < 1:
        raise ArgumentError(f"lobpcg: the search block needs at least one column, got n (={n}). "
                            f"Hint: pass k >= 1 or an X with columns")
    if k > n:
        raise ArgumentError(f"lobpcg: k (={k}) eigenpairs were requested but the search block "
                            f"has only n (={n}) columns. Hint: pass n >= k or a wider X")
    if m < 3 * n:
        raise ArgumentError(f"lobpcg: LOBPCG algorithm is not applicable when the number of A "
                            f"rows (={m}) is smaller than 3 x the number of requested eigenpairs "
                            f"(={n})")
    tol = _EPS[A.dtype] ** 0.5 if tol is None else tol
    iparams = {"m": m, "n": n, "k": k, "niter": 1000 if niter is None else niter}
    fparams = {"tol": tol}
    bparams = {"largest": True if largest is None else largest}
    if method == "ortho":
        for params, extra in zip((iparams, fparams, bparams), ortho):
            params.update(extra or {})
        for key, default in (("ortho_i_max", 3), ("ortho_j_max", 3)):
            iparams.setdefault(key, default)
        for key in ("ortho_tol", "ortho_tol_drop", "ortho_tol_replace"):
            fparams.setdefault(key, tol)
        bparams.setdefault("ortho_use_drop", False)
    return iparams, fparams, bparams


def _check(A: Tensor, B: Tensor | None, X: Tensor | None, method: str) -> None:  # noqa: N803
    if A.ndim < 2 or A.shape[-2] != A.shape[-1]:
        raise ShapeError(f"lobpcg: A must be a square matrix or a batch of them, got "
                         f"{describe(A.shape, A.dtype)}")
    if B is not None and tuple(B.shape) != tuple(A.shape):
        raise ShapeError(f"lobpcg: A and B must have the same shape, got A "
                         f"{describe(A.shape, A.dtype)} and B {describe(B.shape, B.dtype)}")
    if X is not None and (X.ndim != A.ndim or tuple(X.shape[:-1]) != tuple(A.shape[:-1])):
        raise ShapeError(f"lobpcg: X must have A's shape but its own number of columns, got "
                         f"A {describe(A.shape, A.dtype)} and X {describe(X.shape, X.dtype)}")
    if is_complex_input("lobpcg", "A", A):
        raise DTypeError(f"lobpcg: A must be real (symmetric), got {describe(A.shape, A.dtype)}; "
                         f"complex (Hermitian) problems are not supported, as in PyTorch")
    if method not in ("basic", "ortho"):
        raise ArgumentError(f"lobpcg: method must be 'basic' or 'ortho', got {method!r}")


def _solve(A: Tensor, B: Tensor | None, X: Tensor | None, iK: Tensor | None,  # noqa: N803
           settings: tuple[dict, dict, dict], method: str,
           tracker: Callable[[LOBPCG], Any] | None) -> tuple[Tensor, Tensor]:
    """Runs one LOBPCG per matrix of the batch; returns the ``k`` wanted pairs."""
    iparams, fparams, bparams = settings
    m, n, k = iparams["m"], iparams["n"], iparams["k"]
    batch = tuple(A.shape[:-2])
    count = 1
    for size in batch:
        count *= size
    flat = [M.reshape(count, m, m) if M is not None and batch else M for M in (A, B)]
    Es, Xs = [], []
    for i in range(count):
        Ai, Bi = ((M[i] if M is not None and batch else M) for M in flat)  # noqa: N806
        if X is None:
            Xi = randn(m, n, dtype=A.dtype, device=A.device)  # noqa: N806
        else:
            Xi = X.reshape(count, m, n)[i] if batch else X  # noqa: N806
        worker = LOBPCG(Ai, Bi, Xi.to(A.dtype), iK, dict(iparams, batch_index=i), fparams,
                        bparams, method, tracker)
        worker.run()
        Es.append(worker.E[:k])
        Xs.append(worker.X[:, :k])
    if not batch:
        return Es[0], Xs[0]
    if not count:  # an empty batch
        return A.new_zeros((*batch, k)), A.new_zeros((*batch, m, k))
    return stack(Es).reshape(*batch, k), stack(Xs).reshape(*batch, m, k)


class LOBPCGAutogradFunction(Function):
    """The gradient of the ``k`` eigenpairs ``E, U`` computed from a dense symmetric ``A``
    (``apply(A, B, E, U)`` returns ``E`` and ``U`` again): the eigenvalue part
    ``U diag(gE) Uᵀ``, the part within the computed space from the eigenvalue gaps, and the
    part outside it from one solve per pair with ``A - λᵢ`` restricted to the complement of
    ``U`` (no other eigenvectors are needed). Under ``create_graph`` the formula reads ``E``
    and ``U`` through this Function again, so they carry their own dependence on ``A`` and
    every higher derivative is right."""

    @staticmethod
    def forward(ctx, A, B, E, U):  # noqa: N803
        ctx.save_for_backward(A, E, U)
        ctx.generalized = B is not None
        return E.clone(), U.clone()

    @staticmethod
    def backward(ctx, gE, gU):  # noqa: N803
        A, E, U = ctx.saved_tensors  # noqa: N806
        if ctx.generalized:
            raise ArgumentError("lobpcg.backward does not support backward with B != I yet")
        if is_grad_enabled():  # (create_graph)
            E, U = LOBPCGAutogradFunction.apply(A, None, E, U)  # noqa: N806
        eye_k = eye(E.shape[-1], dtype=E.dtype, device=E.device)
        inner = gE.diag_embed() if gE is not None else 0 * eye_k
        if gU is not None:
            gaps = E.unsqueeze(-2) - E.unsqueeze(-1) + eye_k
            inner = inner + matmul(U.mT, gU) * (1 - eye_k) / gaps
            # the component outside span(U): solve (A - λᵢ) xᵢ = -(I - UUᵀ) gUᵢ on the
            # complement, where A - λᵢ - U (diag(E) - λᵢ - 1) Uᵀ acts as A - λᵢ on it and as
            # the identity on span(U), so it is invertible and keeps xᵢ ⟂ U
            off = gU - matmul(U, matmul(U.mT, gU))
            shift = E.unsqueeze(-2) - E.unsqueeze(-1) - 1  # [i, j] = λⱼ - λᵢ - 1
            Us = U.unsqueeze(-3)  # noqa: N806 - one copy per pair i
            eye_m = eye(A.shape[-1], dtype=A.dtype, device=A.device)
            M = (A.unsqueeze(-3) - E.unsqueeze(-1).unsqueeze(-1) * eye_m  # noqa: N806
                 - matmul(Us * shift.unsqueeze(-2), Us.mT))
            x = -solve(M, off.mT.unsqueeze(-1)).squeeze(-1).mT
            return matmul(matmul(U, inner), U.mT) + matmul(x, U.mT), None, None, None, None
        return matmul(matmul(U, inner), U.mT), None, None, None, None


def lobpcg(A: Tensor, k: int | None = None, B: Tensor | None = None,  # noqa: N803
           X: Tensor | None = None, n: int | None = None, iK: Tensor | None = None,  # noqa: N803
           niter: int | None = None, tol: float | None = None, largest: bool | None = None,
           method: str | None = None, tracker: Callable[[LOBPCG], Any] | None = None,
           ortho_iparams: dict[str, int] | None = None,
           ortho_fparams: dict[str, float] | None = None,
           ortho_bparams: dict[str, bool] | None = None) -> tuple[Tensor, Tensor]:
    """The ``k`` largest (``largest=False``: smallest) eigenvalues ``E`` and B-orthonormal
    eigenvectors ``X`` of the symmetric positive-definite problem ``A x = λ B x`` (``B`` the
    identity when ``None``), by LOBPCG: ``A`` dense, a batch, or sparse COO; ``X`` an
    ``m × n`` start (random when ``None``, ``n`` defaulting to ``k``, and ``m >= 3 n``);
    ``iK`` a preconditioner (≈ ``A⁻¹``); at most ``niter`` steps (1000; -1: no limit), until
    each pair's relative residual is below ``tol`` (√eps); ``method`` ``'ortho'`` (default,
    robust) or ``'basic'``; ``tracker(worker)`` called after each step. Differentiable for
    dense ``A`` without ``B`` (the gradient of the ``k`` computed pairs; ``A.grad`` is
    symmetric).

    Example:
        >>> A = ember.diag(ember.arange(1.0, 13.0, dtype=ember.float64))
        >>> E, X = ember.lobpcg(A, k=1, largest=False, X=ember.ones(12, 1, dtype=ember.float64))
        >>> E.round(decimals=6)
        tensor([1.], dtype=ember.float64)
    """
    method = "ortho" if method is None else method
    _check(A, B, X, method)
    if A.dtype not in _EPS:
        A = A.to(dtypes.float32)  # noqa: N806 - as PyTorch, integer input computes in float32
    settings = _settings(A, k, X, n, niter, tol, largest, method,
                         (ortho_iparams, ortho_fparams, ortho_bparams))
    needs_grad = is_grad_enabled() and (A.requires_grad or (B is not None and B.requires_grad))
    if not needs_grad:
        with no_grad():
            return _solve(A, B, X, iK, settings, method, tracker)
    if A.is_sparse or (B is not None and B.is_sparse):
        raise ArgumentError("lobpcg: gradients through sparse A or B are not supported (PyTorch's "
                            "lobpcg.backward refuses them too). Hint: pass A.detach() for the "
                            "eigenpairs alone")
    # A's gradient is symmetric, as PyTorch's: the eigenpairs are those of A's symmetric part
    A_sym, B_sym = (M if M is None else (M + M.mT) / 2 for M in (A, B))  # noqa: N806
    with no_grad():  # (the iteration itself is not differentiated)
        E, U = _solve(A_sym, B_sym, X, iK, settings, method, tracker)  # noqa: N806
    return LOBPCGAutogradFunction.apply(A_sym, B_sym, E, U)
