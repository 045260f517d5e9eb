"""The older hook-based weight normalization, ``nn.utils.weight_norm``/``remove_weight_norm``
(PyTorch keeps it beside :mod:`ember.nn.utils.parametrizations`; the hook-based spectral norm is
:mod:`ember.nn.utils.spectral_norm`). The weight is recomputed by a forward pre-hook and stored
as a plain attribute; state-dict keys are PyTorch's (``weight_g``/``weight_v``). The hook
classes have PyTorch's methods (``apply``, ``compute_weight``, ``remove``), for code that
finds and removes the hooks itself.
"""

from __future__ import annotations

import warnings
from typing import TypeVar

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
    """A forward pre-hook that recomputes ``module.<name>`` before each call from the
    tensors named ``<name><suffix>`` for the suffixes in ``own``."""

    name: str
    own: tuple[str, ...] = ()

    def weight_of(self, module: Module, training: bool) -> Tensor:
        raise NotImplementedError

    def __call__(self, module: Module, inputs: tuple) -> None:
        setattr(module, self.name, self.weight_of(module, module.training))

    def remove(self, module: Module) -> None:
        """Makes ``module.<name>`` a plain parameter holding the computed weight and deletes
        the tensors it was computed from; dropping the hook itself is the caller's part, as in
        PyTorch."""
        with ember.no_grad():
            weight = self.weight_of(module, False).detach()
        delattr(module, self.name)
        for suffix in self.own:
            delattr(module, self.name + suffix)
        module.register_parameter(self.name, Parameter(weight))


def remove_hook(module: M, kind: type, name: str, what: str) -> M:
    """Undoes the ``kind`` hook of ``name``: its :meth:`_NormHook.remove`, then the hook."""
    for key, hook in module._forward_pre_hooks.items():
        if isinstance(hook, kind) and hook.name == name:
            hook.remove(module)
            del module._forward_pre_hooks[key]
            return module
    raise ArgumentError(f"{what} of '{name}' not found in {type(module).__name__}")


def check_free(module: Module, kind: type, name: str, what: str) -> Tensor:
    """The parameter ``name`` of ``module``, which must have no ``kind`` hook yet."""
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


def _warn_deprecated() -> None:
    warnings.warn("`nn.utils.weight_norm` is deprecated in favor of "
                  "`nn.utils.parametrizations.weight_norm`.", FutureWarning, stacklevel=3)


class WeightNorm(_NormHook):
    """The hook of :func:`weight_norm`: ``weight = g * v / ‖v‖`` (``dim`` None: one norm of
    the whole tensor).

    Example:
        >>> with warnings.catch_warnings():
        ...     warnings.simplefilter("ignore")
        ...     hook = WeightNorm.apply(nn.Linear(3, 2), "weight", 0)
        >>> hook.name, hook.dim
        ('weight', 0)
    """

    own = ("_g", "_v")

    def __init__(self, name: str, dim: int | None) -> None:
        self.name, self.dim = name, -1 if dim is None else dim

    def compute_weight(self, module: Module) -> Tensor:
        return weight_from_norm(getattr(module, self.name + "_g"),
                                getattr(module, self.name + "_v"), self.dim)

    def weight_of(self, module: Module, training: bool) -> Tensor:
        return self.compute_weight(module)

    @staticmethod
    def apply(module: Module, name: str, dim: int | None) -> WeightNorm:
        """Registers the hook on ``module.<name>`` (what :func:`weight_norm` does; it warns
        as deprecated too) and returns it."""
        _warn_deprecated()
        return WeightNorm._attach(module, name, dim)

    @staticmethod
    def _attach(module: Module, name: str, dim: int | None) -> WeightNorm:
        weight = check_free(module, WeightNorm, name, "weight_norm")
        hook = WeightNorm(name, dim)
        del module._parameters[name]
        g = norm_except_dim_of("weight_norm", weight, 2, hook.dim)
        module.register_parameter(name + "_g", Parameter(g.detach()))
        module.register_parameter(name + "_v", Parameter(weight.detach()))
        setattr(module, name, hook.compute_weight(module))
        module.register_forward_pre_hook(hook)
        return hook


def weight_norm(module: M, name: str = "weight", dim: int | None = 0) -> M:
    """Replaces parameter ``name`` by a magnitude ``<name>_g`` and a direction ``<name>_v``
    (the older form of :func:`ember.nn.utils.parametrizations.weight_norm`; deprecated, it
    warns with a ``FutureWarning`` as PyTorch's does).

    Example:
        >>> m = nn.utils.weight_norm(nn.Linear(3, 2))
        >>> list(m.state_dict())
        ['bias', 'weight_g', 'weight_v']
    """
    _warn_deprecated()
    WeightNorm._attach(module, name, dim)
    return module


def remove_weight_norm(module: M, name: str = "weight") -> M:
    """Undoes :func:`weight_norm`: ``name`` is one parameter again.

    Example:
        >>> list(nn.utils.remove_weight_norm(nn.utils.weight_norm(nn.Linear(3, 2))).state_dict())
        ['bias', 'weight']
    """
    return remove_hook(module, WeightNorm, name, "weight_norm")
