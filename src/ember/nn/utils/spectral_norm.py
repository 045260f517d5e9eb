"""The older hook-based spectral normalization, ``nn.utils.spectral_norm``/
``remove_spectral_norm`` (PyTorch keeps it beside :mod:`ember.nn.utils.parametrizations`):
a forward pre-hook divides ``<name>_orig`` by its largest singular value, estimated by power
iteration on the buffers ``<name>_u`` and ``<name>_v``, and stores the result as a plain
attribute. State-dict keys are PyTorch's (``weight_orig``, ``weight_u``, ``weight_v``); the
hook class has PyTorch's methods (``apply``, ``compute_weight``, ``remove``).
"""

from __future__ import annotations

import ember
from ember.errors import ArgumentError, IndexOutOfRange
from ember.nn import functional as F
from ember.nn.module import Module
from ember.nn.utils.parametrizations import default_spectral_dim, matrix_view
from ember.nn.utils.weight_norm import M, _NormHook, check_free, remove_hook
from ember.tensor import Tensor

__all__ = ["spectral_norm", "remove_spectral_norm"]


class SpectralNorm(_NormHook):
    """The hook of :func:`spectral_norm`: ``weight = weight_orig / σ``, with σ from power
    iteration on the buffers ``<name>_u`` and ``<name>_v`` (updated in training mode).

    Example:
        >>> hook = SpectralNorm.apply(nn.Linear(4, 3), "weight", 1, 0, 1e-12)
        >>> tuple(hook.reshape_weight_to_matrix(ember.ones(3, 2, 2)).shape)
        (3, 4)
    """

    own = ("_orig", "_u", "_v")

    def __init__(self, name: str = "weight", n_power_iterations: int = 1, dim: int = 0,
                 eps: float = 1e-12) -> None:
        if n_power_iterations <= 0:
            raise ArgumentError("spectral_norm: Expected n_power_iterations to be positive, but "
                                f"got n_power_iterations={n_power_iterations}")
        self.name, self.n_power_iterations, self.dim, self.eps = \
            name, n_power_iterations, dim, eps

    def reshape_weight_to_matrix(self, weight: Tensor) -> Tensor:
        """``weight`` as a matrix with dimension ``dim`` as its rows."""
        return matrix_view(weight, self.dim)

    def compute_weight(self, module: Module, do_power_iteration: bool) -> Tensor:
        weight = getattr(module, self.name + "_orig")
        u, v = getattr(module, self.name + "_u"), getattr(module, self.name + "_v")
        weight_mat = self.reshape_weight_to_matrix(weight)
        if do_power_iteration:
            with ember.no_grad():
                mat = weight_mat.detach()
                for _ in range(self.n_power_iterations):
                    v.copy_(F.normalize(ember.mv(mat.T, u), dim=0, eps=self.eps))
                    u.copy_(F.normalize(ember.mv(mat, v), dim=0, eps=self.eps))
        sigma = ember.dot(u.clone(), ember.mv(weight_mat, v.clone()))
        return weight / sigma

    def weight_of(self, module: Module, training: bool) -> Tensor:
        return self.compute_weight(module, training)

    @staticmethod
    def apply(module: Module, name: str, n_power_iterations: int, dim: int, eps: float
              ) -> SpectralNorm:
        """Registers the hook on ``module.<name>`` (what :func:`spectral_norm` does) and
        returns it; ``dim`` may count from the end."""
        weight = check_free(module, SpectralNorm, name, "spectral_norm")
        if not -weight.ndim <= dim < weight.ndim:
            hint = f"expected one in [{-weight.ndim}, {weight.ndim - 1}]" if weight.ndim \
                else "a 0-d weight has none"
            raise IndexOutOfRange(f"spectral_norm: dim {dim} is out of range for a weight of "
                                  f"shape {tuple(weight.shape)} ({hint})")
        hook = SpectralNorm(name, n_power_iterations, dim % weight.ndim, eps)
        with ember.no_grad():
            h, w = hook.reshape_weight_to_matrix(weight).shape
            kw = {"dtype": weight.dtype, "device": weight.device}
            u = F.normalize(ember.randn(h, **kw), dim=0, eps=eps)
            v = F.normalize(ember.randn(w, **kw), dim=0, eps=eps)
        del module._parameters[name]
        module.register_parameter(name + "_orig", weight)
        setattr(module, name, weight.detach())
        module.register_buffer(name + "_u", u)
        module.register_buffer(name + "_v", v)
        module.register_forward_pre_hook(hook)
        return hook


def spectral_norm(module: M, name: str = "weight", n_power_iterations: int = 1,
                  eps: float = 1e-12, dim: int | None = None) -> M:
    """Divides parameter ``name`` by its spectral norm before each forward, keeping the
    unnormalized weight as ``<name>_orig`` and the power-iteration vectors as buffers
    (the older form of :func:`ember.nn.utils.parametrizations.spectral_norm`).

    Example:
        >>> m = nn.utils.spectral_norm(nn.Linear(4, 3))
        >>> list(m.state_dict())
        ['bias', 'weight_orig', 'weight_u', 'weight_v']
    """
    SpectralNorm.apply(module, name, n_power_iterations,
                       default_spectral_dim(module) if dim is None else dim, eps)
    return module


def remove_spectral_norm(module: M, name: str = "weight") -> M:
    """Undoes :func:`spectral_norm`: ``name`` is one parameter again, holding the normalized
    weight.

    Example:
        >>> m = nn.utils.remove_spectral_norm(nn.utils.spectral_norm(nn.Linear(4, 3)))
        >>> list(m.state_dict())
        ['bias', 'weight']
    """
    return remove_hook(module, SpectralNorm, name, "spectral_norm")
