"""Ready-made parametrizations, as in ``torch.nn.utils.parametrizations``: ``weight_norm``,
``spectral_norm`` and ``orthogonal`` (see :mod:`ember.nn.utils.parametrize` for the
mechanism). State-dict keys are PyTorch's: ``parametrizations.weight.original0``/``original1``
for weight norm, ``parametrizations.weight.original`` with ``parametrizations.weight.0._u``/
``_v`` for spectral norm, with ``parametrizations.weight.0.base`` for orthogonal.
"""

from __future__ import annotations

import math
from typing import Any

import ember
from ember.errors import ArgumentError, IndexOutOfRange
from ember.nn import functional as F
from ember.nn.module import Module
from ember.nn.utils.parametrize import register_parametrization
from ember.ops.norms import norm_except_dim_of
from ember.tensor import Tensor

__all__ = ["weight_norm", "spectral_norm", "orthogonal"]


def weight_from_norm(g: Tensor, v: Tensor, dim: int) -> Tensor:
    """``v`` rescaled to the norm ``g`` (per slice along ``dim``)."""
    return v * (g / norm_except_dim_of("weight_norm", v, 2, dim))


def matrix_view(weight: Tensor, dim: int) -> Tensor:
    """``weight`` as a matrix with dimension ``dim`` as its rows."""
    if dim != 0:
        weight = weight.permute(dim, *(d for d in range(weight.ndim) if d != dim))
    return weight.reshape(weight.shape[0], math.prod(weight.shape[1:]))  # (not -1: 0 rows)


def default_spectral_dim(module: Module) -> int:
    """PyTorch's default spectral-norm dimension: the output channels, which are dimension
    1 of a transposed convolution's weight."""
    from ember.nn.conv import ConvTranspose1d, ConvTranspose2d, ConvTranspose3d

    return 1 if isinstance(module, (ConvTranspose1d, ConvTranspose2d, ConvTranspose3d)) else 0


class _WeightNorm(Module):
    def __init__(self, dim: int | None = 0) -> None:
        super().__init__()
        self.dim = -1 if dim is None else dim

    def forward(self, weight_g: Tensor, weight_v: Tensor) -> Tensor:
        return weight_from_norm(weight_g, weight_v, self.dim)

    def right_inverse(self, weight: Tensor) -> tuple[Tensor, Tensor]:
        return norm_except_dim_of("weight_norm", weight, 2, self.dim), weight


def weight_norm(module: Module, name: str = "weight", dim: int | None = 0) -> Module:
    """Splits ``module.<name>`` into a magnitude ``original0`` (the norm over every
    dimension but ``dim``; ``dim=None``: one norm for the whole tensor) and a direction
    ``original1``, trained separately: ``weight = g * v / ‖v‖``. A state dict of the old
    :func:`ember.nn.utils.weight_norm` (``<name>_g``, ``<name>_v``) loads into it too.

    Example:
        >>> m = weight_norm(nn.Linear(3, 2))
        >>> [k for k in m.state_dict() if "original" in k]
        ['parametrizations.weight.original0', 'parametrizations.weight.original1']
        >>> tuple(m.parametrizations.weight.original0.shape)
        (2, 1)
    """
    register_parametrization(module, name, _WeightNorm(dim), unsafe=True)

    def old_names(state_dict: dict, prefix: str, *_: Any) -> None:
        g, v = f"{prefix}{name}_g", f"{prefix}{name}_v"
        if g in state_dict and v in state_dict:
            state_dict[f"{prefix}parametrizations.{name}.original0"] = state_dict.pop(g)
            state_dict[f"{prefix}parametrizations.{name}.original1"] = state_dict.pop(v)

    module._register_load_state_dict_pre_hook(old_names)
    return module


class _SpectralNorm(Module):
    """``weight / σ``, with the largest singular value σ estimated by power iteration
    (one or more steps on each forward in training mode; stored vectors in eval mode)."""

    def __init__(self, weight: Tensor, n_power_iterations: int = 1, dim: int = 0,
                 eps: float = 1e-12) -> None:
        super().__init__()
        ndim = weight.ndim
        if not -ndim <= dim < ndim:
            hint = f"expected one in [{-ndim}, {ndim - 1}]" if ndim else "a 0-d weight has none"
            raise IndexOutOfRange(f"spectral_norm: dim {dim} is out of range for a weight of "
                                  f"shape {tuple(weight.shape)} ({hint})")
        if n_power_iterations <= 0:
            raise ArgumentError("spectral_norm: Expected n_power_iterations to be positive, but "
                                f"got n_power_iterations={n_power_iterations}")
        self.dim = dim % ndim
        self.eps = eps
        if ndim > 1:
            self.n_power_iterations = n_power_iterations
            weight_mat = matrix_view(weight.detach(), self.dim)
            h, w = weight_mat.shape
            kw = {"dtype": weight.dtype, "device": weight.device}
            self.register_buffer("_u", F.normalize(ember.randn(h, **kw), dim=0, eps=eps))
            self.register_buffer("_v", F.normalize(ember.randn(w, **kw), dim=0, eps=eps))
            self._power_method(weight_mat, 15)

    def _power_method(self, weight_mat: Tensor, n_power_iterations: int) -> None:
        """Moves ``_u``/``_v`` towards the top singular vectors of ``weight_mat`` (in
        place, so that the buffers are the ones in the state dict)."""
        with ember.no_grad():
            weight_mat = weight_mat.detach()
            for _ in range(n_power_iterations):
                self._u.copy_(F.normalize(ember.mv(weight_mat, self._v), dim=0, eps=self.eps))
                self._v.copy_(F.normalize(ember.mv(weight_mat.mH, self._u), dim=0,
                                          eps=self.eps))

    def forward(self, weight: Tensor) -> Tensor:
        if weight.ndim == 1:
            return F.normalize(weight, dim=0, eps=self.eps)
        weight_mat = matrix_view(weight, self.dim)
        if self.training:
            self._power_method(weight_mat, self.n_power_iterations)
        u, v = self._u.clone(), self._v.clone()
        sigma = ember.vdot(u, ember.mv(weight_mat, v))
        return weight / sigma

    def right_inverse(self, value: Tensor) -> Tensor:
        return value


def spectral_norm(module: Module, name: str = "weight", n_power_iterations: int = 1,
                  eps: float = 1e-12, dim: int | None = None) -> Module:
    """Divides ``module.<name>`` by its spectral norm (largest singular value, of the weight
    seen as a matrix with ``dim`` as rows), estimated by ``n_power_iterations`` steps of
    power iteration per forward in training mode; eval mode reuses the stored vectors.

    Example:
        >>> m = spectral_norm(nn.Linear(4, 3))
        >>> list(m.state_dict())[1:]
        ['parametrizations.weight.original', 'parametrizations.weight.0._u', \
'parametrizations.weight.0._v']
    """
    weight = getattr(module, name, None)
    if not isinstance(weight, Tensor):
        raise ArgumentError(f"spectral_norm: module {type(module).__name__} has no parameter or "
                            f"buffer named '{name}'")
    if dim is None:
        dim = default_spectral_dim(module)
    register_parametrization(module, name,
                             _SpectralNorm(weight, n_power_iterations, dim, eps))
    return module


_ORTHOGONAL_MAPS = ("matrix_exp", "cayley", "householder")


def _householder_qr(a: Tensor) -> tuple[Tensor, Tensor]:
    """LAPACK's ``geqrf`` of a tall ``a (…, n, k)``: ``R`` on and above the diagonal, the
    Householder vectors (unit first entry left out) below it, and their scales ``tau``."""
    n, k = a.shape[-2], a.shape[-1]
    rows = ember.arange(n, device=a.device).unsqueeze(-1)  # (n, 1)
    taus = []
    for j in range(k):
        col = a[..., j:j + 1]  # (…, n, 1)
        alpha = col[..., j:j + 1, :]
        xnorm = (col * (rows > j)).norm(dim=-2, keepdim=True)
        reflect = xnorm > 0  # LAPACK leaves the column alone (tau = 0) otherwise
        beta = ember.where(alpha >= 0, -1.0, 1.0) * (alpha * alpha + xnorm * xnorm).sqrt()
        beta = ember.where(reflect, beta, alpha)
        tau = ember.where(reflect, (beta - alpha) / beta, 0.0)
        v = ember.where(rows > j, col / ember.where(reflect, alpha - beta, 1.0),
                        (rows == j).to(a.dtype))
        applied = a - tau * v * (v.mT @ a)
        new_col = ember.where(rows < j, col, ember.where(rows == j, beta, v))
        a = ember.cat([a[..., :j], new_col, applied[..., j + 1:]], dim=-1)
        taus.append(tau[..., 0, 0])
    return a, ember.stack(taus, dim=-1) if taus else a.new_zeros(*a.shape[:-2], 0)


def _make_orthogonal(a: Tensor) -> Tensor:
    """The ``Q`` of the QR decomposition of ``a`` whose ``R`` has a positive diagonal."""
    q, r = ember.linalg.qr(a)
    return q * r.diagonal(dim1=-2, dim2=-1).sgn().unsqueeze(-2)


def _is_orthogonal(q: Tensor) -> bool:
    eye = ember.eye(q.shape[-1], dtype=q.dtype, device=q.device)
    atol = 10.0 * q.shape[-2] * ember.finfo(q.dtype).eps
    return bool(ember.allclose(q.mH @ q, eye, atol=atol))


class _Orthogonal(Module):
    """An orthogonal matrix (orthonormal columns or rows when not square) from an
    unconstrained one, through ``orthogonal_map``; with ``use_trivialization`` the result is
    multiplied by a stored orthogonal ``base`` (set on assignment to the weight)."""

    def __init__(self, weight: Tensor, orthogonal_map: str, use_trivialization: bool) -> None:
        super().__init__()
        if weight.is_complex() and orthogonal_map == "householder":
            raise ArgumentError("orthogonal: the householder parametrization does not support "
                                "complex tensors")
        self.shape, self.orthogonal_map = tuple(weight.shape), orthogonal_map
        if use_trivialization:
            self.register_buffer("base", None)

    def forward(self, x: Tensor) -> Tensor:
        n, k = x.shape[-2], x.shape[-1]
        transposed = n < k
        if transposed:
            x, n, k = x.mT, k, n
        if self.orthogonal_map == "householder":
            a = x.tril(-1)
            q = ember.linalg.householder_product(a, 2.0 / (1.0 + (a * a).sum(dim=-2)))
            q = q * x.diagonal(dim1=-2, dim2=-1).int().unsqueeze(-2)
        else:
            x = x.tril()
            if n != k:
                x = ember.cat([x, x.new_zeros(*x.shape[:-1], n - k)], dim=-1)
            a = x - x.mH
            if self.orthogonal_map == "matrix_exp":
                q = ember.linalg.matrix_exp(a)
            else:  # Cayley: (I - A/2)⁻¹ (I + A/2)
                eye = ember.eye(n, dtype=a.dtype, device=a.device)
                q = ember.linalg.solve(eye - 0.5 * a, eye + 0.5 * a)
            q = q[..., :k]
        if hasattr(self, "base"):
            q = self.base @ q
        return q.mT if transposed else q

    def right_inverse(self, q: Tensor) -> Tensor:
        """The unconstrained matrix that gives ``q``: with a ``base``, ``base`` becomes ``q``
        (made orthogonal, completed at random to a square matrix when it is not square) and the
        result is ``-I``; without, the Householder reflectors of ``q``."""
        if tuple(q.shape) != self.shape:
            raise ArgumentError(f"orthogonal: expected a matrix or batch of matrices of shape "
                                f"{self.shape}, got a tensor of shape {tuple(q.shape)}")
        with ember.no_grad():
            like = q
            n, k = q.shape[-2], q.shape[-1]
            transposed = n < k
            if transposed:
                q, n, k = q.mT, k, n
            if not hasattr(self, "base"):
                if self.orthogonal_map != "householder":
                    raise NotImplementedError(
                        "orthogonal: cannot assign to the matrix_exp or cayley "
                        "parametrization with use_trivialization=False")
                a, tau = _householder_qr(q)
                diag = a.diagonal(dim1=-2, dim2=-1).sign() * ember.where(tau == 0, -1.0, 1.0)
                on_diag = ember.eye(n, k, dtype=ember.bool_, device=a.device)
                a = ember.where(on_diag, diag.unsqueeze(-2), a)
                return a.mT if transposed else a
            if n != k:
                noise = ember.randn(*q.shape[:-1], n - k, dtype=q.dtype, device=q.device)
                q = _make_orthogonal(ember.cat([q, noise], dim=-1))
            else:
                q = q.clone() if _is_orthogonal(q) else _make_orthogonal(q)
            self.base = q
            # -I, so that the householder map of the new original is the identity too
            return ember.zeros_like(like) - ember.eye(*like.shape[-2:], dtype=like.dtype,
                                                      device=like.device)


def orthogonal(module: Module, name: str = "weight", orthogonal_map: str | None = None, *,
               use_trivialization: bool = True) -> Module:
    """Constrains ``module.<name>`` (a matrix or batch of matrices) to be orthogonal, through
    ``orthogonal_map`` (``"matrix_exp"``, ``"cayley"`` or ``"householder"``; default
    ``"matrix_exp"`` for square or complex weights, ``"householder"`` otherwise). With
    ``use_trivialization`` the map is applied around a stored orthogonal ``base``.

    Example:
        >>> m = orthogonal(nn.Linear(3, 3))
        >>> w = m.weight
        >>> bool(ember.allclose(w @ w.T, ember.eye(3), atol=1e-5))
        True
    """
    weight = getattr(module, name, None)
    if not isinstance(weight, Tensor):
        raise ArgumentError(f"orthogonal: module {type(module).__name__} has no parameter or "
                            f"buffer named '{name}'")
    if weight.ndim < 2:
        raise ArgumentError("orthogonal: expected a matrix or batch of matrices, got a tensor of "
                            f"{weight.ndim} dimensions")
    if orthogonal_map is None:
        square = weight.shape[-2] == weight.shape[-1]
        orthogonal_map = "matrix_exp" if square or weight.is_complex() else "householder"
    if orthogonal_map not in _ORTHOGONAL_MAPS:
        raise ArgumentError('orthogonal: orthogonal_map has to be one of "matrix_exp", "cayley", '
                            f'"householder", got {orthogonal_map!r}')
    register_parametrization(module, name,
                             _Orthogonal(weight, orthogonal_map, use_trivialization),
                             unsafe=True)
    return module
