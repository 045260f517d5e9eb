"""The older hook-based weight normalization, ``nn.utils.weight_norm``/``remove_weight_norm``
(PyTorch keeps it beside :mod:`ember.nn.utils.parametrizations`; the hook-based spectral norm is
:mod:`ember.nn.utils.spectral_norm`). The weight is recomputed by a forward pre-hook and stored
as a plain attribute; state-dict keys are PyTorch's (``weight_g``/``weight_v``).
"""

from __future__ import annotations

import warnings
from typing import Any, TypeVar

import ember
from ember.errors import ArgumentError
from ember.nn.module import Module
from ember.nn.parameter import Parameter, is_lazy
from ember.nn.utils.parametrizations import weight_from_norm
from ember.ops.norms import norm_except_dim_of
from ember.tensor import Tensor

__all__ = ["weight_norm", "remove_weight_norm"]

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
    if is_lazy(weight):
        raise ArgumentError(f"{what}: the module passed to `{kind.__name__}` can't have "
                            "uninitialized parameters. Hint: run a dummy forward through the "
                            f"lazy {type(module).__name__} first")
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
