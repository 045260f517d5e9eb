"""Ready-made parametrizations, as in ``torch.nn.utils.parametrizations``: ``weight_norm`` and
``spectral_norm`` (see :mod:`ember.nn.utils.parametrize` for the mechanism). State-dict keys
are PyTorch's (``parametrizations.weight.original0``/``original1`` for weight norm,
``parametrizations.weight.original`` and ``parametrizations.weight.0._u``/``_v`` for spectral
norm).
"""

from __future__ import annotations

import ember
from ember.errors import ShapeError
from ember.nn import functional as F
from ember.nn.module import Module
from ember.nn.utils.parametrize import register_parametrization
from ember.tensor import Tensor

__all__ = ["weight_norm", "spectral_norm"]


def norm_except_dim(v: Tensor, dim: int) -> Tensor:
    """The 2-norm of ``v`` over every dimension but ``dim``, shaped to broadcast against
    ``v`` (``dim == -1``: the norm of the whole tensor, PyTorch's convention)."""
    if dim == -1:
        return v.norm()
    if not -v.ndim <= dim < max(v.ndim, 1):
        raise IndexError(f"weight_norm: dim {dim} is out of range for a weight of shape "
                         f"{tuple(v.shape)} (expected -1 or one in [{-v.ndim}, {v.ndim - 1}])")
    dim = dim % v.ndim if v.ndim else 0  # other negative dimensions count from the end
    dims = tuple(d for d in range(v.ndim) if d != dim)
    return (v * v).sum(dim=dims, keepdim=True).sqrt() if dims else v.abs()


def weight_from_norm(g: Tensor, v: Tensor, dim: int) -> Tensor:
    """``v`` rescaled to the norm ``g`` (per slice along ``dim``)."""
    return v * (g / norm_except_dim(v, dim))


def matrix_view(weight: Tensor, dim: int) -> Tensor:
    """``weight`` as a matrix with dimension ``dim`` as its rows."""
    if dim != 0:
        weight = weight.permute(dim, *(d for d in range(weight.ndim) if d != dim))
    return weight.reshape(weight.shape[0], -1)


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
        return norm_except_dim(weight, self.dim), weight


def weight_norm(module: Module, name: str = "weight", dim: int | None = 0) -> Module:
    """Splits ``module.<name>`` into a magnitude ``original0`` (the norm over every
    dimension but ``dim``; ``dim=None``: one norm for the whole tensor) and a direction
    ``original1``, trained separately: ``weight = g * v / ‖v‖``.

    Example:
        >>> m = weight_norm(nn.Linear(3, 2))
        >>> [k for k in m.state_dict() if "original" in k]
        ['parametrizations.weight.original0', 'parametrizations.weight.original1']
        >>> tuple(m.parametrizations.weight.original0.shape)
        (2, 1)
    """
    register_parametrization(module, name, _WeightNorm(dim), unsafe=True)
    return module


class _SpectralNorm(Module):
    """``weight / σ``, with the largest singular value σ estimated by power iteration
    (one or more steps on each forward in training mode; stored vectors in eval mode)."""

    def __init__(self, weight: Tensor, n_power_iterations: int = 1, dim: int = 0,
                 eps: float = 1e-12) -> None:
        super().__init__()
        ndim = weight.ndim
        if not -ndim <= dim < max(ndim, 1):
            raise IndexError(f"spectral_norm: dim {dim} is out of range for a weight of shape "
                             f"{tuple(weight.shape)}")
        if n_power_iterations <= 0:
            raise ValueError("spectral_norm: Expected n_power_iterations to be positive, but "
                             f"got n_power_iterations={n_power_iterations}")
        self.dim = dim % ndim if ndim else 0
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
                self._v.copy_(F.normalize(ember.mv(weight_mat.T, self._u), dim=0,
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
        raise ShapeError(f"spectral_norm: module {type(module).__name__} has no tensor "
                         f"'{name}' to normalize")
    if dim is None:
        dim = default_spectral_dim(module)
    register_parametrization(module, name,
                             _SpectralNorm(weight, n_power_iterations, dim, eps))
    return module
