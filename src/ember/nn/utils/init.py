"""``skip_init``: build a module without initialising its parameters and buffers, as
``torch.nn.utils.skip_init`` does.

As PyTorch's, it builds the module on the ``meta`` device (no memory, no computation, no
random numbers drawn) and then gives it uninitialised memory on the requested one with
``Module.to_empty``. PyTorch's conditions carry over: the constructor must take a ``device``
argument and must make its tensors on it.
"""

from __future__ import annotations

import inspect
from typing import Any

from ember.errors import ArgumentError, ArgumentTypeError
from ember.nn.module import Module

__all__ = ["skip_init"]


def skip_init(module_cls: type[Module], *args: Any, **kwargs: Any) -> Module:
    """An instance of ``module_cls(*args, **kwargs)`` whose :mod:`ember.nn.init` fills are
    skipped: every parameter and buffer holds whatever memory held (``BatchNorm``'s running
    statistics too, as in PyTorch), for a custom initialisation afterwards or a checkpoint
    to load into.

    Example:
        >>> m = nn.utils.skip_init(nn.Linear, 5, 1)
        >>> m.weight.shape
        ember.Size([1, 5])
    """
    if not (isinstance(module_cls, type) and issubclass(module_cls, Module)):
        raise ArgumentTypeError(f"skip_init: expected a Module class; got {module_cls!r}")
    if "device" not in inspect.signature(module_cls).parameters:
        raise ArgumentError(f"skip_init: Module must support a 'device' arg to skip "
                            f"initialization; {module_cls.__name__}'s constructor has none")
    device = kwargs.pop("device", None) or "cpu"
    return module_cls(*args, **kwargs, device="meta").to_empty(device=device)
