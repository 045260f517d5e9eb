"""The eigendecomposition of general square matrices: ``linalg.eig`` and ``linalg.eigvals``
(Hermitian ones are ``eigh`` in ``linalg_decomp.py``).

Primitive: ``linalg_eig``, batched over its leading dims. Its outputs are complex for real and
complex input alike (a real matrix may have complex eigenvalues), eigenvectors normalised as
LAPACK's ``geev`` (and PyTorch) leave them: unit 2-norm, largest component real. Each
eigenvector is defined up to a factor ``e^{iφ}``, so a loss that depends on those phases has
no gradient and raises, as PyTorch's; repeated eigenvalues give inf/NaN gradients.
"""

from __future__ import annotations

import numpy as np

from ember import return_types
from ember.ops.complex_parts import conj, real
from ember.ops.creation import eye
from ember.ops.linalg import matmul
from ember.ops.linalg_decomp import check_phase_invariance
from ember.ops.linalg_solve import check_matrix, converged, diag_embed, matrix_spec, mH, solve
from ember.ops.primitive import Primitive, TensorSpec, apply, primitive
from ember.tensor import Tensor

__all__: list[str] = []


def _gaps(w: Tensor) -> Tensor:
    """``E[i, j] = w[j] - w[i]``, with ones on the diagonal."""
    n = w.shape[-1]
    return w.unsqueeze(-2) - w.unsqueeze(-1) + eye(n, dtype=w.dtype, device=w.device)


def _off_diagonal(m: Tensor) -> Tensor:
    return m - diag_embed(m.diagonal(0, -2, -1))


@primitive
class Eig(Primitive):
    """``(eigenvalues, eigenvectors)`` with ``A V = V diag(eigenvalues)``, both complex."""

    name = "linalg_eig"
    complex_grad = True
    nout = 2
    save_outputs = True

    def forward(self, xp, a):
        dtype = np.result_type(a.dtype, np.complex64)
        w, v = converged("linalg.eig", xp.linalg.eig, a)
        return w.astype(dtype, copy=False), v.astype(dtype, copy=False)

    def infer(self, a):
        matrix_spec("linalg.eig", a)
        dtype = a.dtype.to_complex()
        return TensorSpec(a.shape[:-1], dtype), TensorSpec(a.shape, dtype)

    def vjp(self, ctx, gw, gv):
        a = ctx.inputs[0]
        w, v = ctx.output(0), ctx.output(1)
        vh = mH(v)
        if gv is None:  # A⁻ᴴ-like: V⁻ᴴ diag(gw) Vᴴ
            ga = solve(vh, gw.unsqueeze(-1) * vh)
        else:
            vhgv = matmul(vh, gv)
            check_phase_invariance("linalg_eig_backward", "eigenvectors",
                                   vhgv.diagonal(0, -2, -1))
            # the columns of V have norm 1: project gV onto that constraint's tangent space
            vhgv = vhgv - matmul(vh, v * real(vhgv.diagonal(0, -2, -1)).unsqueeze(-2))
            inner = vhgv / conj(_gaps(w))
            if gw is not None:
                inner = _off_diagonal(inner) + diag_embed(gw)
            ga = solve(vh, matmul(inner, vh))
        return (ga if a.is_complex() else real(ga),)

    def jvp(self, ctx, da):
        w, v = ctx.output(0), ctx.output(1)
        p = solve(v, matmul(da.to(v.dtype), v))  # V⁻¹ dA V
        dv = matmul(v, _off_diagonal(p) / _gaps(w))
        dv = dv - v * real(matmul(mH(v), dv).diagonal(0, -2, -1)).unsqueeze(-2)
        return p.diagonal(0, -2, -1), dv


def eig(input: Tensor) -> return_types.linalg_eig:
    """The eigenvalues and eigenvectors (columns) of a square matrix (or of each in a batch),
    complex for real input too; eigenvectors have unit norm and their largest component real,
    as PyTorch's (LAPACK's ``geev``). Gradients need a loss that does not depend on the
    eigenvectors' phases (it raises otherwise, as PyTorch); they are inf/NaN where
    eigenvalues repeat.

    Example:
        >>> ember.linalg.eig(ember.tensor([[2.0, 0.0], [0.0, 3.0]])).eigenvalues
        tensor([2.+0.j, 3.+0.j])
    """
    A = input  # (PyTorch's keyword name)
    check_matrix("linalg.eig", A, complex_ok=True)
    return return_types.linalg_eig(*apply(Eig, A))


def eigvals(input: Tensor) -> Tensor:
    """The eigenvalues of a square matrix (or of each in a batch), complex (see :func:`eig`).

    Example:
        >>> ember.linalg.eigvals(ember.tensor([[0.0, -1.0], [1.0, 0.0]]))
        tensor([0.+1.j, 0.-1.j])
    """
    A = input  # (PyTorch's keyword name)
    check_matrix("linalg.eigvals", A, complex_ok=True)
    return apply(Eig, A)[0]
