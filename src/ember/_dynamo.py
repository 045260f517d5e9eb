"""The ``torch._dynamo`` names that scripts and notebooks call: ``reset()`` (between
benchmarks of ``torch.compile``), ``is_compiling()``, ``disable`` and ``set_stance``, as
:mod:`ember.compiler`'s. Ember has no Dynamo; its other names are not here.

Example:
    >>> step = ember.compile(lambda x: x * 2)
    >>> _ = step(ember.ones(2))
    >>> ember._dynamo.reset()  # every compiled function traces again on its next call
"""

from __future__ import annotations

from ember.compiler import disable, is_compiling, reset, set_stance

__all__ = ["disable", "is_compiling", "reset", "set_stance"]
