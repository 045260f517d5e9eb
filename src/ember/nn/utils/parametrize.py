"""Parametrizations, as in ``torch.nn.utils.parametrize``: ``module.weight`` computed by a
module from unconstrained tensors on every access.

:func:`register_parametrization` moves the tensor to
``module.parametrizations.<name>.original`` (or ``original0``, ``original1``, … when the
parametrization's ``right_inverse`` returns several tensors) and turns ``<name>`` into a
property of a per-module subclass, so state-dict keys match PyTorch's and checkpoints load
across.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from typing import Any

import ember
from ember.errors import ArgumentError, OpError, ShapeError
from ember.nn.containers import ModuleDict, ModuleList
from ember.nn.module import Module
from ember.nn.parameter import Parameter
from ember.tensor import Tensor

__all__ = ["register_parametrization", "remove_parametrizations", "is_parametrized",
           "cached", "type_before_parametrizations", "transfer_parametrizations_and_params",
           "ParametrizationList"]

_cache_depth = 0
_cache: dict[tuple[int, str], Tensor] = {}


@contextmanager
def cached() -> Iterator[None]:
    """Within this context each parametrized tensor is computed once, on first access, and
    reused (for a tensor read many times per step, e.g. in a recurrent loop).

    Example:
        >>> with cached():
        ...     pass
    """
    global _cache_depth
    _cache_depth += 1
    try:
        yield
    finally:
        _cache_depth -= 1
        if not _cache_depth:
            _cache.clear()


def _register_tensor(module: Module, name: str, value: Tensor) -> None:
    """A Parameter stays a parameter of ``module``; any other tensor becomes a buffer."""
    if isinstance(value, Parameter):
        module.register_parameter(name, value)
    else:
        module.register_buffer(name, value)


def _check_like(what: str, value: Any, like: Tensor, shape: bool = True) -> None:
    """``value`` must be a tensor of ``like``'s dtype (and shape, unless not ``shape``):
    PyTorch's safety checks, which raise ValueError."""
    hint = "; pass unsafe=True to register_parametrization to allow it" if shape else ""
    if not isinstance(value, Tensor):
        raise ArgumentError(f"register_parametrization: {what} must return a tensor, got "
                            f"{type(value).__name__}{hint}")
    if value.dtype != like.dtype:
        raise ArgumentError(f"register_parametrization: {what} may not change the dtype of the "
                            f"tensor: unparametrized {like.dtype}, got {value.dtype}{hint}")
    if not shape:
        return
    if tuple(value.shape) != tuple(like.shape):
        raise ShapeError(f"register_parametrization: {what} may not change the shape of the "
                         f"tensor: unparametrized {tuple(like.shape)}, got "
                         f"{tuple(value.shape)}{hint}")


class ParametrizationList(ModuleList):
    """The parametrizations of one tensor, applied in order, and the unconstrained tensors
    they start from (``original``, or ``original0``, ``original1``, …). Calling it gives
    the parametrized tensor; :meth:`right_inverse` sets the originals from a value."""

    def __init__(self, modules: Sequence[Module], original: Tensor, unsafe: bool = False
                 ) -> None:
        if not modules:
            raise ArgumentError("ParametrizationList requires one or more modules")
        super().__init__(modules)
        self.unsafe = unsafe
        with ember.no_grad():
            new = self._inverse(original)
        if not isinstance(new, (Tensor, Sequence)):
            raise ArgumentError("register_parametrization: 'right_inverse' must return a tensor or "
                                f"a sequence of tensors, got {type(new).__name__}")
        self.is_tensor = isinstance(new, Tensor)
        self.ntensors = 1 if self.is_tensor else len(new)
        if self.is_tensor:  # the original keeps its dtype even when unsafe; its shape may
            # change (forward must give the tensor's back, checked unless unsafe), as in PyTorch
            _check_like("right_inverse", new, original, shape=False)
            with ember.no_grad():  # keeps the Parameter object, so optimizers still hold it
                original.data = new
            _register_tensor(self, "original", original)
            return
        for i, value in enumerate(new):
            if not isinstance(value, Tensor):
                raise ArgumentError(f"register_parametrization: 'right_inverse' must return a "
                                    f"sequence of tensors, got {type(value).__name__} at {i}")
            if isinstance(original, Parameter):
                value = Parameter(value.detach(), original.requires_grad)
            _register_tensor(self, f"original{i}", value)

    def _inverse(self, value: Tensor, assigning: bool = False) -> Any:
        """The originals for ``value``: each ``right_inverse``, last parametrization first.
        At registration one that is absent or raises NotImplementedError counts as the
        identity; an assignment (``assigning``) needs them all, as in PyTorch."""
        for module in list(self)[::-1]:
            inverse = getattr(module, "right_inverse", None)
            if inverse is None:
                if assigning:
                    raise OpError(f"parametrization {type(module).__name__} does not "
                                  "implement right_inverse, so the parametrized tensor cannot "
                                  "be assigned; set the original instead")
                continue
            try:
                value = inverse(value)
            except NotImplementedError:
                if assigning:
                    raise
        return value

    def right_inverse(self, value: Tensor) -> None:
        """Sets the originals so that the parametrization gives ``value`` (in place, under
        ``no_grad``); this is what ``module.<name> = value`` does."""
        with ember.no_grad():
            new = self._inverse(value, assigning=True)
            if self.is_tensor:
                if not isinstance(new, Tensor):
                    raise ArgumentError("right_inverse must return a tensor, got "
                                        f"{type(new).__name__}")
                _check_like("right_inverse", new, self.original, shape=False)
                self.original.data = new
                return
            if not isinstance(new, Sequence) or len(new) != self.ntensors:
                raise ArgumentError(f"right_inverse must return a sequence of {self.ntensors} "
                                    f"tensors, got {type(new).__name__}")
            for i, value in enumerate(new):
                original = getattr(self, f"original{i}")
                _check_like(f"right_inverse (tensor {i})", value, original, shape=False)
                original.data = value

    def forward(self) -> Tensor:
        if self.is_tensor:
            x = self[0](self.original)
        else:
            x = self[0](*(getattr(self, f"original{i}") for i in range(self.ntensors)))
        for module in list(self)[1:]:
            x = module(x)
        return x


def _inject_class(module: Module) -> None:
    """Gives ``module`` a class of its own, to hold the properties of its parametrized
    tensors without touching other instances."""
    cls = module.__class__

    def getstate(self: Module) -> None:
        raise OpError("Serialization of parametrized modules is only supported through "
                      "state_dict(); save the state dict instead of the module")

    module.__class__ = type(f"Parametrized{cls.__name__}", (cls,), {"__getstate__": getstate})


def _inject_property(module: Module, name: str) -> None:
    def get_parametrized(self: Module) -> Tensor:
        parametrization = self.parametrizations[name]
        if not _cache_depth:
            return parametrization()
        key = (id(self), name)
        if key not in _cache:
            _cache[key] = parametrization()
        return _cache[key]

    def set_original(self: Module, value: Tensor) -> None:
        self.parametrizations[name].right_inverse(value)

    setattr(module.__class__, name, property(get_parametrized, set_original))


def is_parametrized(module: Module, tensor_name: str | None = None) -> bool:
    """Whether ``module`` has a parametrization (on ``tensor_name``, when given).

    Example:
        >>> is_parametrized(nn.Linear(2, 2))
        False
    """
    parametrizations = module.__dict__.get("_modules", {}).get("parametrizations")
    if not isinstance(parametrizations, ModuleDict):
        return False
    return len(parametrizations) > 0 if tensor_name is None else \
        tensor_name in parametrizations


def type_before_parametrizations(module: Module) -> type:
    """The class of ``module`` as it was before any parametrization was registered."""
    return module.__class__.__bases__[0] if is_parametrized(module) else type(module)


def transfer_parametrizations_and_params(from_module: Module, to_module: Module,
                                         tensor_name: str | None = None) -> Module:
    """Registers ``from_module``'s parametrizations of ``tensor_name`` (default: all of
    them) on ``to_module``, which then shares their modules and ``from_module``'s original
    tensors (the same Parameter objects, so an optimizer holding them trains both).

    Example:
        >>> class Double(nn.Module):
        ...     def forward(self, X):
        ...         return 2 * X
        >>> a = register_parametrization(nn.Linear(2, 2), "weight", Double())
        >>> b = transfer_parametrizations_and_params(a, nn.Linear(2, 2), "weight")
        >>> b.parametrizations.weight.original is a.parametrizations.weight.original
        True
        >>> bool((b.weight == a.weight).all())
        True
    """
    if not is_parametrized(from_module):
        return to_module
    for name in list(from_module.parametrizations) if tensor_name is None else [tensor_name]:
        source = from_module.parametrizations[name]
        originals = [n for n in ("original", *(f"original{i}" for i in range(source.ntensors)))
                     if n in source._parameters or n in source._buffers]
        if getattr(to_module, name, None) is None:
            setattr(to_module, name, Parameter(getattr(from_module, name).detach().clone()))
        for parametrization in source:
            register_parametrization(to_module, name, parametrization, unsafe=source.unsafe)
        for original in originals:
            _register_tensor(to_module.parametrizations[name], original,
                             getattr(source, original))
    return to_module


def register_parametrization(module: Module, tensor_name: str, parametrization: Module, *,
                             unsafe: bool = False) -> Module:
    """Makes ``module.<tensor_name>`` the output of ``parametrization`` applied to the
    unconstrained ``module.parametrizations.<tensor_name>.original``. A second call on the
    same tensor chains the parametrizations. If ``parametrization`` has ``right_inverse``,
    it maps the current value to the original (and assignment to the tensor goes through
    it). Unless ``unsafe``, the parametrization must keep the tensor's shape and dtype.

    Example:
        >>> class Symmetric(nn.Module):
        ...     def forward(self, X):
        ...         return X.triu() + X.triu(1).transpose(-1, -2)
        >>> m = register_parametrization(nn.Linear(3, 3), "weight", Symmetric())
        >>> bool((m.weight == m.weight.T).all())
        True
        >>> list(m.state_dict())
        ['bias', 'parametrizations.weight.original']
    """
    parametrization.train(module.training)
    if is_parametrized(module, tensor_name):
        if not unsafe:  # (unsafe: the current value is not even computed, as in PyTorch)
            current = getattr(module, tensor_name)
            output = parametrization(current)
            _check_like("the parametrization", output, current)
            if hasattr(parametrization, "right_inverse"):
                try:
                    inverse = parametrization.right_inverse(output)
                except NotImplementedError:
                    inverse = current
                _check_like("right_inverse", inverse, current)
        module.parametrizations[tensor_name].append(parametrization)
        module.parametrizations[tensor_name].unsafe |= unsafe
        return module
    if tensor_name not in module._parameters and tensor_name not in module._buffers:
        raise ArgumentError(f"register_parametrization: module {type(module).__name__} has no "
                            f"parameter or buffer named '{tensor_name}' (or it is None)")
    original = getattr(module, tensor_name)
    if original is None:
        raise ArgumentError(f"register_parametrization: '{tensor_name}' of "
                            f"{type(module).__name__} is None; there is nothing to parametrize")
    before = ember.empty(original.shape, dtype=original.dtype, device="meta")  # (the list
    # may reshape ``original`` in place: right_inverse's result)
    parametrizations = ParametrizationList([parametrization], original, unsafe=unsafe)
    if not unsafe:
        _check_like("the parametrization", parametrizations(), before)
    delattr(module, tensor_name)
    if not is_parametrized(module):
        _inject_class(module)
        module.parametrizations = ModuleDict()
    _inject_property(module, tensor_name)
    module.parametrizations[tensor_name] = parametrizations
    return module


def remove_parametrizations(module: Module, tensor_name: str, leave_parametrized: bool = True
                            ) -> Module:
    """Undoes :func:`register_parametrization` on ``tensor_name``: the tensor becomes a
    plain parameter (or buffer) again, holding the parametrized value when
    ``leave_parametrized`` and the original otherwise.

    Example:
        >>> m = register_parametrization(nn.Linear(2, 2), "weight", nn.Identity())
        >>> list(remove_parametrizations(m, "weight").state_dict())
        ['bias', 'weight']
    """
    if not is_parametrized(module, tensor_name):
        raise ArgumentError(f"remove_parametrizations: module {type(module).__name__} has no "
                            f"parametrization on '{tensor_name}'")
    parametrizations = module.parametrizations[tensor_name]
    if parametrizations.is_tensor:
        original = parametrizations.original
        if leave_parametrized:
            with ember.no_grad():
                value = getattr(module, tensor_name)
                if parametrizations.unsafe and (value.dtype != original.dtype
                                                or value.shape != original.shape):
                    original = Parameter(value, original.requires_grad) \
                        if isinstance(original, Parameter) else value
                else:  # the same Parameter object: optimizers keep working
                    original.data = value
    elif leave_parametrized:
        value = getattr(module, tensor_name)
        original = Parameter(value.detach(), True) if value.requires_grad else value.detach()
    else:
        raise ArgumentError("remove_parametrizations: Cannot leave unparametrized "
                            "(`leave_parametrized=False`) a tensor that is parametrized in terms "
                            "of a sequence of tensors.")
    delattr(module.__class__, tensor_name)
    del module.parametrizations[tensor_name]
    _register_tensor(module, tensor_name, original)
    if not is_parametrized(module):
        delattr(module, "parametrizations")
        module.__class__ = module.__class__.__bases__[0]
    return module
