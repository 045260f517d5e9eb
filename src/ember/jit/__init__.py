"""``ember.jit``: trace a function or module once per input signature into a static graph,
optimize it, generate plain Python for it, and run that instead of the eager code.

Example:
    >>> model = ember.nn.Linear(4, 2)
    >>> fast = ember.jit.compile(model)
    >>> y = fast(ember.randn(3, 4))
    >>> print(fast.graph)                 # the IR; fast.code is the generated Python
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from ember.jit.compiled import CompiledFunction, disable, explain
from ember.jit.ir import Effect, Eqn, Graph, Source, StateRef, Var
from ember.jit.passes import PASSES
from ember.jit.serialize import LoadedFunction, load, save
from ember.jit.trace import TraceError

__all__ = ["compile", "CompiledFunction", "disable", "explain", "TraceError", "Graph", "Eqn",
           "Var", "PASSES", "save", "load", "LoadedFunction"]


def compile(fn: Callable | None = None, *, static_argnums: tuple[int, ...] | int = (),
            mode: str = "default", passes: dict[str, bool] | None = None) -> Any:
    """Compiles ``fn`` (a function, or a module, whose call is compiled): the first call with
    a new signature traces it, later calls run the generated code.

    Args:
        fn: the function or module; as a decorator, ``@ember.jit.compile`` or
            ``@ember.jit.compile(static_argnums=1)``.
        static_argnums: positions of arguments whose values (not shapes) fix the graph.
        mode: ``"default"`` (every pass) or ``"debug"`` (no passes).
        passes: switch single passes on or off by name, e.g. ``{"fuse": False}``.

    Example:
        >>> @ember.jit.compile
        ... def step(x, y):
        ...     loss = F.cross_entropy(model(x), y)
        ...     loss.backward(); opt.step(); opt.zero_grad()
        ...     return loss
    """
    if isinstance(static_argnums, int):
        static_argnums = (static_argnums,)
    if fn is None:
        return lambda f: CompiledFunction(f, static_argnums, mode, passes)
    return CompiledFunction(fn, static_argnums, mode, passes)
