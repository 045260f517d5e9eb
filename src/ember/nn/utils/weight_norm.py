"""The older hook-based weight normalization and spectral normalization,
``nn.utils.weight_norm``/``remove_weight_norm`` and ``spectral_norm``/``remove_spectral_norm``
(PyTorch keeps them beside :mod:`ember.nn.utils.parametrizations`). The weight is recomputed by
a forward pre-hook and stored as a plain attribute; state-dict keys are PyTorch's
(``weight_g``/``weight_v``; ``weight_orig``/``weight_u``/``weight_v``).
"""

from __future__ import annotations

import warnings
from typing import Any, TypeVar

import ember
from ember.errors import ArgumentError
from ember.nn import functional as F
from ember.nn.module import Module
from ember.nn.parameter import Parameter
from ember.nn.utils.parametrizations import (
    default_spectral_dim,
    matrix_view,
    weight_from_norm,
)
from ember.ops.norms import norm_except_dim_of
from ember.tensor import Tensor

__all__ = ["weight_norm", "remove_weight_norm", "spectral_norm", "remove_spectral_norm"]

M = TypeVar("M", bound=Module)


class _NormHook:
    """A forward pre-hook that recomputes ``module.<name>`` before each call."""

    def __init__(self, name: str) -> None:
        self.name = name
        self.handle: Any = None

    def compute_weight(self, module: Module, training: bool) -> Tensor:
        raise NotImplementedError

    def __call__(self, module: Module, inputs: tuple) -> None:
        setattr(module, self.name, self.compute_weight(module, module.training))

    def attach(self, module: Module, weight: Tensor) -> None:
        """Sets the first weight and registers the hook."""
        setattr(module, self.name, weight)
        self.handle = module.register_forward_pre_hook(self)

    def detach(self, module: Module, own: tuple[str, ...]) -> None:
        """Turns the computed weight back into a plain parameter and forgets ``own``."""
        with ember.no_grad():
            weight = self.compute_weight(module, False).detach()
        self.handle.remove()
        delattr(module, self.name)
        for suffix in own:
            delattr(module, self.name + suffix)
        module.register_parameter(self.name, Parameter(weight))


def _find(module: Module, kind: type, name: str, what: str) -> _NormHook:
    for hook in module._forward_pre_hooks.values():
        if isinstance(hook, kind) and hook.name == name:
            return hook
    raise ArgumentError(f"{what} of '{name}' not found in {type(module).__name__}")


def _check_free(module: Module, kind: type, name: str, what: str) -> Tensor:
    for hook in module._forward_pre_hooks.values():
        if isinstance(hook, kind) and hook.name == name:
            raise ArgumentError(f"{what}: Cannot register two {type(hook).__name__} hooks "
                                f"on the same parameter {name}")
    weight = module._parameters.get(name)
    if weight is None:
        raise ArgumentError(f"{what}: module {type(module).__name__} has no parameter '{name}'")
    return weight


class WeightNorm(_NormHook):
    """The hook of :func:`weight_norm`: ``weight = g * v / ‖v‖``."""

    def __init__(self, name: str, dim: int) -> None:
        super().__init__(name)
        self.dim = dim

    def compute_weight(self, module: Module, training: bool) -> Tensor:
        return weight_from_norm(getattr(module, self.name + "_g"),
                                getattr(module, self.name + "_v"), self.dim)


def weight_norm(module: M, name: str = "weight", dim: int | None = 0) -> M:
    """Replaces parameter ``name`` by a magnitude ``<name>_g`` and a direction ``<name>_v``
    (the older form of :func:`ember.nn.utils.parametrizations.weight_norm`; deprecated, it
    warns with a ``FutureWarning`` as PyTorch's does).

    Example:
        >>> m = nn.utils.weight_norm(nn.Linear(3, 2))
        >>> list(m.state_dict())
        ['bias', 'weight_g', 'weight_v']
    """
    warnings.warn("`nn.utils.weight_norm` is deprecated in favor of "
                  "`nn.utils.parametrizations.weight_norm`.", FutureWarning, stacklevel=2)
    weight = _check_free(module, WeightNorm, name, "weight_norm")
    hook = WeightNorm(name, -1 if dim is None else dim)
    del module._parameters[name]
    g = norm_except_dim_of("weight_norm", weight, 2, hook.dim)
    module.register_parameter(name + "_g", Parameter(g.detach()))
    module.register_parameter(name + "_v", Parameter(weight.detach()))
    hook.attach(module, hook.compute_weight(module, False))
    return module


def remove_weight_norm(module: M, name: str = "weight") -> M:
    """Undoes :func:`weight_norm`: ``name`` is one parameter again.

    Example:
        >>> list(nn.utils.remove_weight_norm(nn.utils.weight_norm(nn.Linear(3, 2))).state_dict())
        ['bias', 'weight']
    """
    _find(module, WeightNorm, name, "weight_norm").detach(module, ("_g", "_v"))
    return module


class SpectralNorm(_NormHook):
    """The hook of :func:`spectral_norm`: ``weight = weight_orig / σ``, with σ from power
    iteration on the buffers ``<name>_u`` and ``<name>_v`` (updated in training mode)."""

    def __init__(self, name: str, n_power_iterations: int, dim: int, eps: float) -> None:
        super().__init__(name)
        if n_power_iterations <= 0:
            raise ArgumentError("spectral_norm: Expected n_power_iterations to be positive, but "
                                f"got n_power_iterations={n_power_iterations}")
        self.n_power_iterations, self.dim, self.eps = n_power_iterations, dim, eps

    def compute_weight(self, module: Module, training: bool) -> Tensor:
        weight = getattr(module, self.name + "_orig")
        u, v = getattr(module, self.name + "_u"), getattr(module, self.name + "_v")
        weight_mat = matrix_view(weight, self.dim)
        if training:
            with ember.no_grad():
                mat = weight_mat.detach()
                for _ in range(self.n_power_iterations):
                    v.copy_(F.normalize(ember.mv(mat.T, u), dim=0, eps=self.eps))
                    u.copy_(F.normalize(ember.mv(mat, v), dim=0, eps=self.eps))
        sigma = ember.dot(u.clone(), ember.mv(weight_mat, v.clone()))
        return weight / sigma


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
    weight = _check_free(module, SpectralNorm, name, "spectral_norm")
    hook = SpectralNorm(name, n_power_iterations,
                        default_spectral_dim(module) if dim is None else dim, eps)
    with ember.no_grad():
        h, w = matrix_view(weight, hook.dim).shape
        kw = {"dtype": weight.dtype, "device": weight.device}
        u = F.normalize(ember.randn(h, **kw), dim=0, eps=eps)
        v = F.normalize(ember.randn(w, **kw), dim=0, eps=eps)
    del module._parameters[name]
    module.register_parameter(name + "_orig", weight)
    module.register_buffer(name + "_u", u)
    module.register_buffer(name + "_v", v)
    hook.attach(module, weight.detach())
    return module


def remove_spectral_norm(module: M, name: str = "weight") -> M:
    """Undoes :func:`spectral_norm`: ``name`` is one parameter again, holding the normalized
    weight.

    Example:
        >>> m = nn.utils.remove_spectral_norm(nn.utils.spectral_norm(nn.Linear(4, 3)))
        >>> list(m.state_dict())
        ['bias', 'weight']
    """
    _find(module, SpectralNorm, name, "spectral_norm").detach(module, ("_orig", "_u", "_v"))
    return module
