""":class:`GraphModule`: a module whose ``forward`` is Python generated from a
:class:`~ember.fx.Graph`, holding the submodules, parameters and buffers the graph names."""

from __future__ import annotations

import copy
import importlib
import os
import pickle
import types
from typing import Any

from ember.fx.codegen import PythonCode
from ember.fx.graph import Graph
from ember.fx.to_folder import write_folder
from ember.nn import Module, Parameter
from ember.tensor import Tensor
from ember.utils.generated_code import define

__all__ = ["GraphModule"]


class GraphModule(Module):
    """A module made of a graph: ``code`` is its generated ``forward``, :meth:`recompile`
    regenerates it after the graph was edited.

    ``root`` is the module (or dict of names to objects) the graph's ``get_attr`` and
    ``call_module`` targets are copied from.

    Example:
        >>> gm = ember.fx.symbolic_trace(ember.models.mlp())
        >>> gm(ember.ones(1, 1, 28, 28)).shape
        ember.Size([1, 10])
    """

    def __new__(cls, *args: Any, **kwargs: Any) -> GraphModule:
        # each instance its own class (a subclass of ``cls``, so that ``__init__`` runs), so
        # that each has its own generated ``forward``
        class GraphModuleImpl(cls):  # type: ignore[misc, valid-type]
            pass

        return super().__new__(GraphModuleImpl)

    def __init__(self, root: Module | dict[str, Any], graph: Graph,
                 class_name: str = "GraphModule") -> None:
        super().__init__()
        type(self).__name__ = type(self).__qualname__ = class_name
        self.meta: dict[str, Any] = {}  # (passes' notes; unlike torch's, pickling keeps it)
        if isinstance(root, Module):
            self.training = root.training
        for node in graph.nodes:
            if node.op in ("get_attr", "call_module"):
                _copy_attr(root, self, node.target)
        self.graph = graph

    @property
    def graph(self) -> Graph:
        return self._graph

    @graph.setter
    def graph(self, g: Graph) -> None:
        object.__setattr__(self, "_graph", g)
        g.owning_module = self
        self.recompile()

    @property
    def code(self) -> str:
        """The generated ``forward`` source."""
        return self._code

    def recompile(self) -> PythonCode:
        """Regenerates ``forward`` from :attr:`graph`."""
        python_code = self._graph.python_code("self")
        object.__setattr__(self, "_code", python_code.src)
        object.__setattr__(self, "_code_globals", python_code.globals)
        type(self).forward = define(python_code.src, f"ember.fx {type(self).__name__}",
                                    "forward", python_code.globals)
        return python_code

    def print_readable(self, print_output: bool = True) -> str:
        """The module as a class with its generated ``forward``; printed unless
        ``print_output`` is False."""
        body = "".join("    " + line if line.strip() else line
                       for line in self._code.splitlines(keepends=True))
        text = f"class {type(self).__name__}(ember.nn.Module):\n{body}"
        if print_output:
            print(text)
        return text

    def to_folder(self, folder: str | os.PathLike, module_name: str = "FxModule") -> None:
        """Writes the module out as a package in ``folder`` that rebuilds it, as torch.fx's:
        ``from <folder> import <module_name>``, then ``<module_name>()`` is a module with the
        same submodules, tensors and ``forward``. ``module.py`` holds the class (submodules
        Ember cannot write as a constructor call are pickled to ``<name>.pt``, with a
        warning, as in torch), ``state_dict.pt`` the tensors.

        Example:
            >>> import pathlib, tempfile
            >>> folder = pathlib.Path(tempfile.mkdtemp()) / "mlp"
            >>> gm = ember.fx.symbolic_trace(ember.nn.Sequential(ember.nn.Linear(4, 2)))
            >>> gm.to_folder(folder, "Mlp")  # then: from mlp import Mlp; Mlp()(x)
            >>> sorted(p.name for p in folder.iterdir())
            ['__init__.py', 'module.py', 'state_dict.pt']
        """
        write_folder(self, folder, module_name)

    def add_submodule(self, target: str, m: Module) -> bool:
        """Installs ``m`` at the dotted path ``target``, making empty modules for missing
        parents; False (and nothing installed) where a parent is not a module.

        Example:
            >>> gm = ember.fx.symbolic_trace(lambda x: x + 1)
            >>> gm.add_submodule("block.act", ember.nn.ReLU())
            True
        """
        *path, name = target.split(".")
        owner = _parent(self, path)
        if owner is None:
            return False
        owner.add_module(name, m)
        return True

    def delete_submodule(self, target: str) -> bool:
        """Removes the submodule at the dotted path ``target``; False where there is none.

        Example:
            >>> gm = ember.fx.symbolic_trace(ember.nn.Sequential(ember.nn.ReLU()))
            >>> gm.delete_submodule("0"), gm.delete_submodule("0")
            (True, False)
        """
        *path, name = target.split(".")
        owner = _parent(self, path, create=False)
        if owner is None or not isinstance(owner._modules.get(name), Module):
            return False
        del owner._modules[name]
        return True

    def delete_all_unused_submodules(self) -> None:
        """Removes the submodules that no ``call_module`` or ``get_attr`` node uses (nor
        contains what one uses).

        Example:
            >>> gm = ember.fx.symbolic_trace(lambda x: x + 1)
            >>> _ = gm.add_submodule("unused", ember.nn.ReLU())
            >>> gm.delete_all_unused_submodules()
            >>> hasattr(gm, "unused")
            False
        """
        used: set[str] = set()
        for node in self._graph.nodes:
            if node.op in ("call_module", "get_attr"):
                parts = node.target.split(".")
                used.update(".".join(parts[:i]) for i in range(1, len(parts) + 1))
                if node.op == "call_module":  # (its own submodules run inside it)
                    used.update(f"{node.target}.{name}"
                                for name, _ in self.get_submodule(node.target).named_modules()
                                if name)
        for name, _ in reversed(list(self.named_modules())):
            if name and name not in used:
                self.delete_submodule(name)

    def __reduce__(self) -> tuple:
        """Pickles the module as its class, attributes and a copy of its graph; the
        ``forward`` is generated again when unpickled. A node type that does not pickle (a
        class local to a function, from an annotation) is kept by its name. Where the code
        generator does not pickle (a class local to a function, an ``on_generate_code``
        transformer kept), the generated ``forward`` is pickled instead and traced again when
        unpickled (all submodules kept as calls), as torch.fx pickles a GraphModule."""
        cls, state, graph, class_name = self._parts()
        if not _pickles(graph._codegen):
            return _retraced, (cls, state, self._code, _source_globals(self), class_name)
        for node in graph.nodes:
            if node.type is not None and not _pickles(node.type):
                node.type = getattr(node.type, "__qualname__", repr(node.type))
        return _rebuilt, (cls, state, graph, class_name)

    def __deepcopy__(self, memo: dict) -> GraphModule:
        cls, state, graph, class_name = self._parts()
        graph._codegen = copy.deepcopy(graph._codegen, memo)  # (a hook on the copy stays there)
        return _rebuilt(cls, copy.deepcopy(state, memo), graph, class_name)

    def _parts(self) -> tuple[type, dict, Graph, str]:
        """The class, attributes, a copy of the graph and the class name, as ``_rebuilt``
        takes them."""
        graph = Graph()
        graph._codegen = self._graph._codegen
        output = next((n for n in self._graph.nodes if n.op == "output"), None)
        copied = graph.output(graph.graph_copy(self._graph, {}),
                              output.type if output is not None else None)
        copied.meta = dict(output.meta) if output is not None else {}
        state = {n: v for n, v in self.__dict__.items()
                 if n not in ("_graph", "_code", "_code_globals")}
        # (the class GraphModule made for this object is generated: its base is pickled)
        return type(self).__bases__[0], state, graph, type(self).__name__

    def __str__(self) -> str:
        return f"{super().__repr__()}\n\n\n{self._code}"


def _pickles(value: Any) -> bool:
    try:
        pickle.dumps(value)
    except (pickle.PicklingError, AttributeError, TypeError):
        return False
    return True


def _source_globals(gm: GraphModule) -> dict[str, Any]:
    """The generated ``forward``'s globals as they pickle: modules by their names."""
    found = {name: _ModuleName(value.__name__) if isinstance(value, types.ModuleType) else value
             for name, value in gm._code_globals.items()}
    for name, value in found.items():
        if not _pickles(value):
            raise pickle.PicklingError(
                f"GraphModule: its code generator ({type(gm.graph._codegen).__name__}, or an "
                f"on_generate_code transformer) does not pickle, so its generated forward is "
                f"pickled instead, but that names {name} ({value!r}), which does not pickle "
                f"either. Hint: define them at module level, or pickle after the "
                f"on_generate_code `with`")
    return found


class _ModuleName(str):
    """A Python module among the pickled globals of a generated ``forward``, by its name."""


def _retraced(cls: type, state: dict, src: str, globals_: dict[str, Any],
              class_name: str) -> GraphModule:
    """A ``cls`` of the graph traced from the generated ``forward`` ``src`` (with its
    ``globals_``) run on a module holding ``state``, as torch.fx unpickles a GraphModule."""
    from ember.fx.tracer import _WRAPPED, Tracer

    class KeepModules(Tracer):
        def is_leaf_module(self, m: Module, module_qualified_name: str) -> bool:
            return True

    globals_ = {name: importlib.import_module(value) if isinstance(value, _ModuleName)
                else value for name, value in globals_.items()}
    forward = define(src, f"ember.fx {class_name} (unpickled)", "forward", globals_)
    holder = type(class_name, (Module,), {"forward": forward})()
    for name, value in state.items():
        object.__setattr__(holder, name, value)
    # (the functions the forward calls were calls in the graph, fx.wrap'ed ones too: calls
    # again, as torch.fx keeps them, not traced through)
    calls = [(forward.__globals__, name) for name, value in globals_.items()
             if isinstance(value, types.FunctionType)]
    _WRAPPED.extend(calls)
    try:
        graph = KeepModules().trace(holder)
    finally:  # (by identity: another thread's fx.wrap meanwhile stays)
        _WRAPPED[:] = [w for w in _WRAPPED if not any(w is c for c in calls)]
    return _rebuilt(cls, state, graph, class_name)


def _rebuilt(cls: type, state: dict, graph: Graph, class_name: str) -> GraphModule:
    """A ``cls`` (GraphModule or a subclass) of ``graph`` whose attributes are ``state`` (its
    submodules, tensors, hooks, mode and the rest)."""
    holder = Module()
    for name, value in state.items():
        object.__setattr__(holder, name, value)
    made = cls(holder, graph, class_name)
    for name, value in state.items():
        if name not in ("_parameters", "_buffers", "_modules"):
            object.__setattr__(made, name, value)
    return made


def _copy_attr(from_obj: Module | dict[str, Any], to_module: Module, target: str) -> None:
    """Copies ``from_obj``'s ``target`` (``"layer.0.weight"``) into ``to_module`` at the same
    path, making empty modules for the path's parents; a buffer stays non-persistent if it
    was, and a plain tensor attribute becomes a non-persistent one."""
    *prefix, field = target.split(".")
    persistent = True
    if isinstance(from_obj, dict):
        value = from_obj[target]
    else:
        owner = from_obj
        for part in prefix:
            owner = getattr(owner, part)
        value = getattr(owner, field)
        persistent = field in getattr(owner, "_buffers", {}) and \
            field not in owner._non_persistent_buffers_set  # (a plain attribute is not)
    to_module = _parent(to_module, prefix)
    if isinstance(value, Module):
        to_module.add_module(field, value)
    elif isinstance(value, Parameter):
        to_module.register_parameter(field, value)
    elif isinstance(value, Tensor):
        to_module.register_buffer(field, value, persistent=persistent)
    else:
        setattr(to_module, field, value)


def _parent(module: Module, path: list[str], create: bool = True) -> Module | None:
    """The submodule of ``module`` at ``path`` (its parts), making empty modules for the
    missing ones if ``create``; None where a part is missing or not a module."""
    for part in path:
        child = module._modules.get(part)
        if child is None and create and not hasattr(module, part):
            child = Module()
            module.add_module(part, child)
        if not isinstance(child, Module):
            return None
        module = child
    return module
