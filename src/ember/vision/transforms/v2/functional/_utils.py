"""The kernel registry behind the ``v2.functional`` functions: each function looks up the
kernel registered for its input's type (walking the type's MRO up to ``TVTensor``; a pure
tensor takes the image kernel) and gives the result the input's tv_tensor type back."""

from __future__ import annotations

from collections.abc import Callable
from functools import wraps
from typing import Any

import numpy as np

from ember.errors import ArgumentError
from ember.tensor import Tensor
from ember.vision import tv_tensors
from ember.vision.transforms._pil import accepts_pil, is_pil_image
from ember.vision.tv_tensors._tv_tensor import _plain

_KERNELS: dict[Callable, dict[type, Callable]] = {}


def is_pure_tensor(inpt: Any) -> bool:
    """A tensor that is no tv_tensor (torchvision treats it as an image)."""
    return isinstance(inpt, Tensor) and not isinstance(inpt, tv_tensors.TVTensor)


def _register(functional: Callable, input_type: type, wrapped: bool) -> Callable:
    def register(kernel: Callable) -> Callable:
        if not wrapped:
            _KERNELS.setdefault(functional, {})[input_type] = kernel
            return kernel

        @wraps(kernel)
        def typed(inpt: Any, *args: Any, **kwargs: Any) -> Any:
            out = kernel(_plain(inpt), *args, **kwargs)
            return tv_tensors.wrap(out, like=inpt)

        _KERNELS.setdefault(functional, {})[input_type] = typed
        return kernel

    return register


def _register_kernel_internal(functional: Callable, *input_types: type,
                              tv_tensor_wrapper: bool = True) -> Callable:
    """Registers one kernel for ``input_types``; with ``tv_tensor_wrapper`` the kernel sees
    plain tensors and its output is wrapped like the input (a kernel that changes metadata,
    as the boxes' ones do, registers without it and wraps itself)."""

    def register(kernel: Callable) -> Callable:
        for input_type in input_types:
            _register(functional, input_type,
                      tv_tensor_wrapper and issubclass(input_type, tv_tensors.TVTensor))(kernel)
        return kernel

    return register


def register_kernel(functional: Callable, tv_tensor_cls: type) -> Callable:
    """Decorator: the kernel ``functional`` (and the v2 transforms calling it) uses for
    ``tv_tensor_cls``, a user's ``TVTensor`` subclass. The kernel gets the tv_tensor itself
    and returns what the functional returns.

    Example:
        >>> from ember.vision import tv_tensors
        >>> from ember.vision.transforms.v2 import functional as F
        >>> class Heatmap(tv_tensors.TVTensor):
        ...     pass
        >>> @F.register_kernel(F.hflip, Heatmap)
        ... def hflip_heatmap(heatmap):
        ...     return tv_tensors.wrap(heatmap.flip(-1), like=heatmap)
        >>> F.hflip(Heatmap(ember.tensor([[1, 2]]))).tolist()
        [[2, 1]]
    """
    if not (isinstance(tv_tensor_cls, type) and issubclass(tv_tensor_cls, tv_tensors.TVTensor)):
        raise TypeError(f"register_kernel: tv_tensor_cls should be a TVTensor subclass, got "
                        f"{tv_tensor_cls!r}")
    if tv_tensor_cls.__module__.startswith("ember.vision.tv_tensors"):
        raise ArgumentError(f"register_kernel: {tv_tensor_cls.__name__} is a built-in tv_tensor; "
                            "its kernels cannot be overridden")
    if functional not in _KERNELS:
        raise ArgumentError(f"register_kernel: {getattr(functional, '__name__', functional)} is "
                            "not a v2 functional with kernels")
    return _register(functional, tv_tensor_cls, wrapped=False)


def _get_kernel(functional: Callable, input_type: type,
                allow_passthrough: bool = False) -> Callable:
    """The kernel of ``functional`` for ``input_type``; with ``allow_passthrough`` an
    unregistered type passes through unchanged (as the v2 transforms do)."""
    registry = _KERNELS.get(functional, {})
    for cls in input_type.__mro__:
        if cls in registry:
            return registry[cls]
        if cls is tv_tensors.TVTensor:
            break
    if np.ndarray in registry and is_pil_image(input_type):  # a PIL image: see _pil
        return accepts_pil(registry[np.ndarray])
    if allow_passthrough:
        return lambda inpt, *args, **kwargs: inpt
    names = ", ".join(sorted(t.__name__ for t in registry))
    raise TypeError(f"{functional.__name__}: supports inputs of type {names}, but got "
                    f"{input_type.__name__} instead")


def _dispatch(functional: Callable, inpt: Any, *args: Any, **kwargs: Any) -> Any:
    return _get_kernel(functional, type(inpt))(inpt, *args, **kwargs)
