"""``GraphModule.to_folder``: the module as a Python package that rebuilds it, as
``torch.fx.GraphModule.to_folder`` writes one — ``module.py`` (a class whose ``__init__``
makes the submodules and tensors and whose ``forward`` is the generated code),
``__init__.py``, ``state_dict.pt`` (the tensors) and one ``<child>.pt`` per submodule that
cannot be written as a constructor call.

Files are written with ``ember.save``, which :mod:`ember.io` registers here (:data:`FILES`),
as the layers above plug into the lower ones.
"""

from __future__ import annotations

import builtins
import importlib
import os
import warnings
from collections.abc import Callable
from pathlib import Path
from typing import Any

import ember.nn as nn
from ember.errors import ArgumentError
from ember.nn import Module

__all__ = ["FILES", "write_folder"]

#: children written as their ``repr`` (a constructor call) when it rebuilds them, as torch's
_SAFE_REPRS = (nn.Linear, nn.Conv1d, nn.Conv2d, nn.Conv3d, nn.BatchNorm1d, nn.BatchNorm2d,
               nn.BatchNorm3d)
#: the generated code's own globals (``codegen._Globals``), imported by the header
_STANDARD = {"ember", "operator", "math", "inf", "nan"}


def _unregistered(*args: Any, **kwargs: Any) -> Any:
    raise RuntimeError("GraphModule.to_folder: no file writer is registered; import ember.io "
                       "(import ember does)")


class _Files:
    """``save(obj, path)``: :func:`ember.save`, registered by :mod:`ember.io`."""

    save: Callable[[Any, Any], None] = _unregistered


FILES = _Files()


def write_folder(gm: Any, folder: str | os.PathLike, module_name: str) -> None:
    """Writes ``gm`` to ``folder`` so that ``from <folder> import <module_name>`` and
    ``<module_name>()`` rebuild it (see :meth:`ember.fx.GraphModule.to_folder`)."""
    if not module_name.isidentifier():
        raise ArgumentError(f"GraphModule.to_folder: module_name must be a Python identifier, "
                            f"got {module_name!r}")
    folder = Path(folder)
    folder.mkdir(parents=True, exist_ok=True)
    code = gm.recompile()
    imports, pickled_globals = _global_imports(code.globals)
    lines = ["import os", "", "import ember", "import ember.nn.functional", "import math",
             "import operator", "from math import inf, nan", "from ember.nn import *  # noqa",
             *imports, "", "_HERE = os.path.dirname(os.path.abspath(__file__))", ""]
    if pickled_globals:
        FILES.save(pickled_globals, folder / "globals.pt")
        lines += ["globals().update(ember.load(os.path.join(_HERE, 'globals.pt'), "
                  "weights_only=False))", ""]
    lines += ["", f"class {module_name}(ember.nn.Module):", "    def __init__(self):",
              "        super().__init__()",
              "        state = ember.load(os.path.join(_HERE, 'state_dict.pt'))"]
    blobs = []
    for name, child in gm.named_children():
        call = _constructor(child)
        if call is None:
            FILES.save(child, folder / f"{name}.pt")
            blobs.append(name)
            call = f"ember.load(os.path.join(_HERE, '{name}.pt'), weights_only=False)"
            comment = " ".join(repr(child).split())
            lines.append(f"        setattr(self, {name!r}, {call})  # {comment}")
        else:
            lines.append(f"        setattr(self, {name!r}, {call})")
            if not child.training:
                lines.append(f"        getattr(self, {name!r}).train(False)")
    state = gm.state_dict()
    for name, buffer in gm._buffers.items():
        if buffer is None:
            continue
        if name in gm._non_persistent_buffers_set:  # (its value travels in the file too)
            state[name] = buffer
            lines.append(f"        self.register_buffer({name!r}, state.pop({name!r}), "
                         "persistent=False)")
        else:
            lines.append(f"        self.register_buffer({name!r}, {_empty(buffer)})")
    for name, param in gm._parameters.items():
        if param is not None:
            grad = "" if param.requires_grad else ", requires_grad=False"
            lines.append(f"        setattr(self, {name!r}, "
                         f"ember.nn.Parameter({_empty(param)}{grad}))")
    FILES.save({k: v.detach() for k, v in state.items()}, folder / "state_dict.pt")
    lines.append("        self.load_state_dict(state)")
    if not gm.training:
        lines.append("        self.training = False")
    lines += ["", *("    " + line if line else line for line in code.src.splitlines()), ""]
    (folder / "module.py").write_text("\n".join(lines))
    (folder / "__init__.py").write_text(f"from .module import {module_name}\n")
    if blobs:
        warnings.warn(f"to_folder: the children {blobs} cannot be rebuilt from their "
                      "constructor calls; they are pickled into the folder instead (loading "
                      "them runs pickle)", UserWarning, stacklevel=3)


def _constructor(child: Module) -> str | None:
    """``child``'s repr when evaluating it (with ``ember.nn``'s names) makes a module of the
    same type with the same tensor keys, shapes and dtypes; None otherwise (a padding mode
    the repr does not quote, a float64 layer, a subclass)."""
    if type(child) not in _SAFE_REPRS:
        return None
    text = repr(child)
    try:
        rebuilt = eval(text, {**vars(nn), "__builtins__": builtins})  # noqa: S307 (our repr)
    except Exception:  # noqa: BLE001 - any failure means: pickle it instead
        return None

    def layout(m: Module) -> dict:
        return {k: (tuple(v.shape), v.dtype) for k, v in m.state_dict().items()}
    if type(rebuilt) is not type(child) or layout(rebuilt) != layout(child):
        return None
    return text


def _empty(t: Any) -> str:
    """``ember.empty(...)`` of ``t``'s shape and dtype (the value comes from the state)."""
    return f"ember.empty({list(t.shape)}, dtype={t.dtype!r})"


def _global_imports(names: dict[str, Any]) -> tuple[list[str], dict[str, Any]]:
    """An import line for each global of the generated code that a module-level name reaches
    (a wrapped function, a named tuple's class); the others, pickled, by name."""
    lines, pickled = [], {}
    for name, obj in names.items():
        if name in _STANDARD:
            continue
        path = _import_path(obj)
        if path is None:
            if "<" in str(getattr(obj, "__qualname__", "")):  # (a lambda, a local function)
                raise ArgumentError(
                    f"GraphModule.to_folder: the generated code calls {obj!r} ({name}), which "
                    "cannot be imported by name nor pickled. Hint: define it at the top "
                    "level of a module")
            pickled[name] = obj
            continue
        module, qualname = path
        first, *rest = qualname.split(".")
        lines.append(f"from {module} import {first} as {name}")
        lines.extend(f"{name} = {name}.{part}" for part in rest)
    return lines, pickled


def _import_path(obj: Any) -> tuple[str, str] | None:
    """``(module, qualified name)`` that imports ``obj`` itself, or None."""
    module, qualname = getattr(obj, "__module__", None), getattr(obj, "__qualname__", None)
    if not isinstance(module, str) or not isinstance(qualname, str) or "<" in qualname \
            or module == "__main__":
        return None
    try:
        found: Any = importlib.import_module(module)
        for part in qualname.split("."):
            found = getattr(found, part)
    except (ImportError, AttributeError):
        return None
    return (module, qualname) if found is obj else None

