"""``skip_init``: build a module without initialising its parameters and buffers, as
``torch.nn.utils.skip_init`` does.

PyTorch builds the module on its ``meta`` device (no memory, no computation) and then gives it
uninitialised memory on the real one. Ember has no ``meta`` device; it builds the module on
the requested device with every :mod:`ember.nn.init` fill function turned off, so the
parameters keep the uninitialised contents ``empty`` gave them and no random numbers are
drawn. PyTorch's conditions carry over: the constructor must take a ``device`` argument and
must initialise only through :mod:`ember.nn.init` (other computation in it still runs).
"""

from __future__ import annotations

import inspect
from typing import Any

from ember.nn import init
from ember.nn.module import Module

__all__ = ["skip_init"]


def skip_init(module_cls: type[Module], *args: Any, **kwargs: Any) -> Module:
    """An instance of ``module_cls(*args, **kwargs)`` whose :mod:`ember.nn.init` fills are
    skipped (those tensors hold whatever memory held), for a custom initialisation afterwards
    or a checkpoint to load into. Values a constructor sets otherwise (``BatchNorm``'s ones,
    zeros and running statistics) are still set, where PyTorch leaves them uninitialised too.

    Example:
        >>> m = nn.utils.skip_init(nn.Linear, 5, 1)
        >>> m.weight.shape
        ember.Size([1, 5])
    """
    if not (isinstance(module_cls, type) and issubclass(module_cls, Module)):
        raise RuntimeError(f"skip_init: expected a Module class; got {module_cls!r}")
    if "device" not in inspect.signature(module_cls).parameters:
        raise RuntimeError(f"skip_init: Module must support a 'device' arg to skip "
                           f"initialization; {module_cls.__name__}'s constructor has none")
    kwargs.setdefault("device", "cpu")
    with init.skipping():
        return module_cls(*args, **kwargs)
