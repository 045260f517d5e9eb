"""Finding what a function works on before tracing it: the modules, optimizers and tensors it
reaches through its closure, its globals, its ``self`` and its arguments.

Their tensors get names in the graph (``model.fc1.weight``) and are state wherever they turn
up, and the compiled function's cache key watches what changes the traced graph: each module's
``training`` flag, each parameter's ``requires_grad`` and whether its ``.grad`` is set (a
gradient accumulates into an existing one). Objects of installed libraries are not followed.
"""

from __future__ import annotations

import types
from collections.abc import Callable
from typing import Any

from ember.nn.module import Module
from ember.optim.optimizer import Optimizer
from ember.tensor import Tensor

MAX_DEPTH = 4
_SKIP = (types.ModuleType, type, str, bytes, int, float, bool, type(None), complex)
_LIBRARIES = frozenset({"numpy", "builtins", "torch", "logging", "functools", "typing",
                        "collections", "threading", "tqdm", "matplotlib", "mpi4py"})


class Reach:
    """What a function reaches: named tensors, modules and the parameters that may get grads."""

    def __init__(self) -> None:
        self.labels: dict[int, str] = {}
        self.tensors: list[Tensor] = []
        self.modules: list[Module] = []
        self.params: list[Tensor] = []
        self._seen: set[int] = set()

    def add(self, name: str, obj: Any, depth: int = 0) -> None:
        """Follows ``obj`` (at most ``MAX_DEPTH`` links from the function): modules,
        optimizers and schedulers, tensors, containers, functions (their closures and the
        globals they name) and plain objects (their attributes)."""
        if depth > MAX_DEPTH or id(obj) in self._seen or isinstance(obj, _SKIP):
            return
        self._seen.add(id(obj))
        if isinstance(obj, Module):
            self._add_module(name, obj)
        elif isinstance(obj, Optimizer):
            for i, group in enumerate(obj.param_groups):
                for j, p in enumerate(group["params"]):
                    self._tensor(f"{name}.param_groups[{i}][{j}]", p)
        elif isinstance(obj, Tensor):
            self._tensor(name, obj)
        elif isinstance(obj, list | tuple):
            for i, item in enumerate(obj):
                self.add(f"{name}[{i}]", item, depth + 1)
        elif isinstance(obj, dict):
            for key, item in list(obj.items()):
                self.add(f"{name}[{key!r}]", item, depth + 1)
        elif isinstance(obj, types.FunctionType | types.MethodType):
            self.add_function(obj, depth + 1)
        elif hasattr(obj, "__dict__") and not _is_library(obj):
            for key, item in list(vars(obj).items()):
                self.add(f"{name}.{key}", item, depth + 1)

    def add_function(self, fn: Any, depth: int = 0) -> None:
        """What a function reaches: its ``self``, closure cells and the globals it names."""
        target = getattr(fn, "__self__", None)
        if target is not None:
            self.add("self", target, depth)
        func = getattr(fn, "__func__", fn)
        code = getattr(func, "__code__", None)
        if code is None or _is_library(func):
            return
        for name, cell in zip(code.co_freevars, func.__closure__ or ()):
            try:
                self.add(name, cell.cell_contents, depth)
            except ValueError:  # an empty cell: a name the function assigns later
                continue
        scope = getattr(func, "__globals__", {})
        for name in _global_names(code):
            if name in scope:
                self.add(name, scope[name], depth)

    def _add_module(self, name: str, module: Module) -> None:
        prefix = f"{name}." if name else ""
        self.modules.extend(module.modules())
        for pname, p in module.named_parameters():
            self._tensor(prefix + pname, p)
        for bname, b in module.named_buffers():
            self._tensor(prefix + bname, b)

    def _tensor(self, name: str, t: Tensor) -> None:
        if id(t) in self.labels:
            return
        self.labels[id(t)] = name
        self.tensors.append(t)
        if t.requires_grad:
            self.params.append(t)

    def guard(self, grads: bool = True) -> tuple:
        """The part of the cache key that this state decides: each module's ``training``,
        each parameter's ``requires_grad`` (freezing one changes the graph) and, with
        ``grads``, whether its ``.grad`` is set."""
        return (tuple(m.training for m in self.modules),
                tuple(p.requires_grad for p in self.params),
                tuple(p.grad is None for p in self.params) if grads else ())

    def guard_names(self) -> tuple[list[str], list[str], list[str]]:
        """Readable names for the entries of :meth:`guard` (for recompile reasons)."""
        return ([f"{type(m).__name__}.training" for m in self.modules],
                [f"{self.labels[id(p)]}.requires_grad" for p in self.params],
                [f"{self.labels[id(p)]}.grad is None" for p in self.params])


def reach(fn: Callable, args: tuple) -> Reach:
    """Everything ``fn`` reaches by name before it runs (see the module docstring).

    Example:
        >>> found = reach(train_step, (x, y))
        >>> found.labels[id(model.fc1.weight)]
        'model.fc1.weight'
    """
    found = Reach()
    if isinstance(fn, Module):
        found.add("", fn)
        fn = fn.forward
    found.add_function(fn)
    for i, arg in enumerate(args):
        if not isinstance(arg, Tensor):  # (tensor arguments are inputs, not state)
            found.add(f"arg{i}", arg, 1)
    return found


def _is_library(obj: Any) -> bool:
    """Objects of installed packages and of Ember itself are not followed (their state is
    not the user's model)."""
    module = getattr(obj, "__module__", None) or getattr(type(obj), "__module__", "") or ""
    top = module.split(".", 1)[0]
    return top in _LIBRARIES or module.startswith("ember.")


def _global_names(code: types.CodeType) -> list[str]:
    names = list(code.co_names)
    for const in code.co_consts:
        if isinstance(const, types.CodeType):
            names += _global_names(const)
    return names
