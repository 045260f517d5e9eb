"""``ember.jit``: trace a function or module once per input signature into a static graph,
optimize it, generate plain Python for it, and run that instead of the eager code.

Example:
    >>> model = ember.nn.Linear(4, 2)
    >>> fast = ember.jit.compile(model)
    >>> y = fast(ember.randn(3, 4))
    >>> print(fast.graph)                 # the IR; fast.code is the generated Python
    graph Linear(v0: f32[3,4]) {
      v1: f32[2,4] = state weight
    ...
    }
"""

from __future__ import annotations

import warnings
from collections.abc import Callable
from typing import Any

import numpy as np

from ember.autograd.grad_mode import no_grad
from ember.errors import ArgumentError
from ember.func.pytree import tree_flatten
from ember.jit.compiled import CompiledFunction
from ember.jit.ir import Effect, Eqn, Graph, Source, StateRef, Var
from ember.jit.passes import PASSES
from ember.jit.serialize import LoadedFunction, load, save
from ember.jit.switches import disable, explain
from ember.jit.torchscript import (
    Final,
    ScriptModule,
    annotate,
    export,
    ignore,
    is_scripting,
    is_tracing,
    script,
    script_module,
    unused,
)
from ember.jit.tracer import TraceError
from ember.nn import module_hooks
from ember.tensor import Tensor
from ember.utils import graph_tracer

__all__ = ["compile", "CompiledFunction", "disable", "explain", "TraceError", "Graph", "Eqn",
           "Var", "PASSES", "save", "load", "LoadedFunction", "trace", "TracerWarning",
           "script", "ScriptModule", "is_scripting", "is_tracing", "ignore", "unused",
           "export", "annotate", "Final"]


#: torch.compile's modes for CUDA graphs and autotuning, which mean nothing on the CPU
#: backend: each runs every pass, as "default" does
_TORCH_MODES = ("reduce-overhead", "max-autotune", "max-autotune-no-cudagraphs")
#: torch.compile's backends, and the mode each one means here
_BACKENDS = {"inductor": "default", "eager": "debug", "aot_eager": "debug"}


def compile(fn: Callable | None = None, *, static_argnums: tuple[int, ...] | int = (),
            mode: str | None = None, passes: dict[str, bool] | None = None,
            fullgraph: bool = False, dynamic: bool | None = None, backend: str = "inductor",
            options: dict | None = None, disable: bool = False) -> Any:
    """Compiles ``fn`` (a function, or a module, whose call is compiled): the first call with
    a new signature traces it, later calls run the generated code. ``ember.compile`` is this
    function and takes ``torch.compile``'s arguments.

    Args:
        fn: the function or module; as a decorator, ``@ember.jit.compile`` or
            ``@ember.jit.compile(static_argnums=1)``.
        static_argnums: positions of arguments whose values (not shapes) fix the graph.
        mode: ``"default"`` (every pass) or ``"debug"`` (no passes); torch's
            ``"reduce-overhead"`` and ``"max-autotune"`` run every pass too.
        passes: switch single passes on or off by name, e.g. ``{"fuse": False}``.
        fullgraph: as torch's: a signature that would run the plain function (module
            backward hooks on outputs that need grad, arguments sharing memory the function
            writes into) raises a ``TraceError`` saying why. Code Ember cannot trace raises,
            naming the line, either way.
        dynamic: accepted as torch's. Ember specializes on shapes (a new shape retraces;
            :func:`explain` says why).
        backend: ``"inductor"`` runs every pass; ``"eager"`` and ``"aot_eager"`` trace
            without passes (``mode="debug"``).
        options: torch's inductor settings have no counterpart: use ``passes``.
        disable: give ``fn`` back unchanged.

    Example:
        >>> @ember.jit.compile
        ... def step(x, y):
        ...     loss = F.cross_entropy(model(x), y)
        ...     loss.backward(); opt.step(); opt.zero_grad()
        ...     return loss
    """
    if backend not in _BACKENDS:
        raise ArgumentError(f"ember.jit.compile: unknown backend {backend!r}; the backends are "
                            f"{sorted(_BACKENDS)}")
    if options:
        raise ArgumentError(f"ember.jit.compile: options= holds torch inductor settings "
                            f"({sorted(options)}), which have no counterpart here. Hint: switch "
                            f"single passes with passes=, e.g. passes={{'fuse': False}}")
    if mode is None or mode in _TORCH_MODES:
        mode = _BACKENDS[backend]
    if disable:
        return fn if fn is not None else (lambda f: f)
    if isinstance(static_argnums, int):
        static_argnums = (static_argnums,)
    if fn is None:
        return lambda f: CompiledFunction(f, static_argnums, mode, passes, fullgraph)
    return CompiledFunction(fn, static_argnums, mode, passes, fullgraph)


module_hooks.COMPILER[0] = compile  # what nn.Module.compile runs (nn sits below the jit)


class TracerWarning(UserWarning):
    """:func:`trace`'s check found the compiled graph computing something other than the
    Python function on the example inputs (random ops, or a value the trace froze)."""


def _as_args(example: Any) -> tuple:
    """torch's example-input forms: a tuple or list of arguments, or one tensor."""
    if example is None:
        return ()
    return tuple(example) if isinstance(example, (tuple, list)) else (example,)


def _refuse_mutable_outputs(out: Any) -> None:
    """torch's ``strict=True``: lists and dicts among the outputs are refused."""
    if isinstance(out, (list, dict)):
        raise TraceError(f"ember.jit.trace: the traced function returns a {type(out).__name__}; "
                         "strict=True (torch.jit.trace's default) refuses list and dict "
                         "outputs. Hint: return a tuple, or pass strict=False")
    if isinstance(out, tuple):
        for item in out:
            _refuse_mutable_outputs(item)


def _check(compiled: Callable, func: Callable, args: tuple, kw: dict, tolerance: float) -> None:
    """Warns when the graph and the Python function disagree on one set of inputs."""
    got, _ = tree_flatten(compiled(*args, **kw))
    want, _ = tree_flatten(func(*args, **kw))
    for i, (g, w) in enumerate(zip(got, want)):
        if isinstance(w, Tensor) and not np.allclose(
                g.numpy(), w.numpy(), rtol=tolerance, atol=tolerance, equal_nan=True):
            warnings.warn(f"ember.jit.trace: output {i} of the traced graph differs from the "
                          "Python function's on the example inputs (random ops such as "
                          "dropout in train mode, or a value the trace froze). Hint: call "
                          ".eval(), or pass check_trace=False", TracerWarning, stacklevel=3)


def trace(func: Callable, example_inputs: Any = None, *, example_kwarg_inputs: dict | None = None,
          check_trace: bool = True, check_inputs: list | None = None,
          check_tolerance: float = 1e-5, strict: bool = True, **kwargs: Any) -> Any:
    """``torch.jit.trace``: compiles ``func`` and traces it at once on ``example_inputs`` (a
    tensor, or a tuple or list of arguments) without grad, so the result can go straight to
    :func:`save`; the result is a :class:`ScriptModule`, whose ``save(path)`` saves the
    example's graph also after calls with grad.

    As in PyTorch, Python control flow is fixed to the path the example took; other input
    shapes retrace. With ``check_trace`` the graph and the Python function run again on the
    examples (or on each argument tuple of ``check_inputs``) and a :class:`TracerWarning` says
    if their outputs differ. ``strict=True`` refuses list and dict outputs, as PyTorch's
    default does. Other keyword arguments are :func:`compile`'s.

    Example:
        >>> fast = ember.jit.trace(ember.nn.Linear(4, 2).eval(), ember.randn(3, 4))
        >>> fast(ember.randn(5, 4)).shape
        ember.Size([5, 2])
    """
    args = _as_args(example_inputs)
    kw = example_kwarg_inputs or {}
    compiled = compile(func, **kwargs)
    if isinstance(compiled, CompiledFunction):  # (not with disable=True)
        compiled = script_module(compiled, (args, kw))
    with no_grad():
        out = compiled(*args, **kw)
        if strict:
            _refuse_mutable_outputs(out)
        if check_trace:
            checks = [(args, kw)] if check_inputs is None else \
                [(_as_args(inputs), {}) for inputs in check_inputs]
            for check_args, check_kw in checks:
                _check(compiled, func, check_args, check_kw, check_tolerance)
    return compiled


# what TensorBoard's add_graph draws (ember.utils sits below the jit)
graph_tracer.register(lambda model, inputs, strict: trace(model, inputs, check_trace=False,
                                                         strict=strict).graph)
