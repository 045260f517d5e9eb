""":class:`Tracer` and :func:`symbolic_trace`: run a module's ``forward`` on
:class:`~ember.fx.Proxy` objects and record what it does as a :class:`~ember.fx.Graph`."""

from __future__ import annotations

import builtins
import dataclasses
import functools
import inspect
import math
import operator
import sys
import threading
import types
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any, NamedTuple

from ember.errors import ArgumentError, EmberError
from ember.fx.graph import Graph
from ember.fx.node import Node, map_aggregate
from ember.fx.placeholders import SpecializedArgumentError as SpecializedArgumentError  # (moved
from ember.fx.placeholders import check_specialized as check_specialized  # there: old code
from ember.fx.placeholders import concrete_input  # and to_folder's modules name them here)
from ember.fx.proxy import CONTROL_FLOW_HINT, Attribute, ParameterProxy, Proxy, TraceError
from ember.nn import Module, Parameter, Sequential
from ember.ops.overrides import TensorLikeOperand
from ember.tensor import Tensor
from ember.utils.held_objects import holds

__all__ = ["Tracer", "symbolic_trace", "wrap"]

#: (globals of a module, name) of the functions :func:`wrap` made opaque to tracing
_WRAPPED: list[tuple[dict[str, Any], str]] = []


def wrap(fn_or_name: str | Callable) -> str | Callable:
    """Makes calls to a module-level function (or the builtin ``len``) one ``call_function``
    node each when traced, instead of tracing through it; call it at the top level of the
    module that calls the function. Returns its argument, so it works as a decorator.

    Example:
        >>> def my_norm(x):
        ...     return x / (x * x).sum().sqrt()
        >>> _ = ember.fx.wrap("my_norm")
        >>> print(ember.fx.symbolic_trace(lambda x: my_norm(x) * 2).code)
        def forward(self, x):
            my_norm = my_norm_1(x);  x = None
            mul = my_norm * 2;  my_norm = None
            return mul
        <BLANKLINE>
    """
    caller = sys._getframe(1)
    if caller.f_code.co_name != "<module>":
        raise NotImplementedError("wrap must be called at the top level of a module")
    name = fn_or_name if isinstance(fn_or_name, str) else fn_or_name.__name__
    if not isinstance(fn_or_name, str) and not callable(fn_or_name):
        raise TypeError(f"wrap: expected a function or a function name, got "
                        f"{type(fn_or_name).__name__}")
    _WRAPPED.append((caller.f_globals, name))
    return fn_or_name


class Tracer:
    """Records a ``forward`` as a :class:`~ember.fx.Graph`. Override :meth:`is_leaf_module`
    to choose which submodules become ``call_module`` nodes instead of being traced through.

    Example:
        >>> graph = ember.fx.Tracer().trace(ember.models.mlp())
        >>> [n.op for n in graph.nodes][:2]
        ['placeholder', 'call_module']
    """

    def __init__(self, autowrap_modules: tuple[types.ModuleType, ...] = (math,),
                 autowrap_functions: tuple[Callable, ...] = (),
                 param_shapes_constant: bool = False) -> None:
        """``autowrap_modules``' public functions (``math.sqrt``) and ``autowrap_functions``,
        called with a proxy, are recorded as one ``call_function`` node each, as with
        :func:`wrap`; with ``param_shapes_constant``, a parameter's ``shape``, ``size()``,
        ``dim()``, ``ndim`` and ``numel()`` are its own values, not traced (a ParameterProxy)."""
        self.param_shapes_constant = param_shapes_constant
        self.root: Module = Module()
        self.graph = Graph()
        self._autowrap_modules = autowrap_modules
        self._written: _Written | None = None  # (the public function call now running)
        self._public_by_op: dict[Callable, Callable] = {}  # (see public_form)
        self._autowrap_ids = {id(f) for f in autowrap_functions} | {
            id(f) for m in autowrap_modules for name, f in vars(m).items()
            if not name.startswith("_") and callable(f)}

    def is_leaf_module(self, m: Module, module_qualified_name: str) -> bool:
        """Ember's own modules (``ember.nn``, ``ember.ao.nn``) but ``Sequential`` are leaves."""
        return (m.__module__.startswith(("ember.nn.", "ember.ao.nn."))
                and not isinstance(m, Sequential))

    def to_bool(self, obj: Proxy) -> bool:
        """``bool(proxy)`` (an ``if``, ``while``, ``and``, ...): refused, as its value is not
        known; a subclass may return a value to trace one branch."""
        raise TraceError("symbolically traced variables cannot be used as inputs to control "
                         f"flow (the value of {obj.node.name} decides an `if`, `while`, `and`, "
                         f"`or` or `not` here). {CONTROL_FLOW_HINT}")

    def iter(self, obj: Proxy) -> Iterator:
        """``iter(proxy)`` but for ``a, b = proxy``: refused (its length is not known); a
        subclass may return an iterator."""
        raise TraceError(f"Proxy object {obj.node.name} cannot be iterated: its length is not "
                         f"known while tracing (unpacking `a, b = proxy` works). "
                         f"{CONTROL_FLOW_HINT}")

    def keys(self, obj: Proxy) -> Any:
        """``proxy.keys()`` (and ``**proxy``): a ``call_method`` node."""
        return Attribute(obj, "keys")()

    def path_of_module(self, mod: Module) -> str:
        """The qualified name of ``mod`` in the traced root."""
        path = self._module_paths.get(id(mod))
        if path is None:
            raise NameError(f"module {type(mod).__name__} is not installed as a submodule of "
                            f"the traced module")
        return path

    def call_module(self, m: Module, forward: Callable, args: tuple, kwargs: dict) -> Any:
        """A leaf module's call as a ``call_module`` node; the others are traced through."""
        path = self.path_of_module(m)
        if not self.is_leaf_module(m, path):
            return forward(*args, **kwargs)
        return self.create_proxy("call_module", path, args, kwargs)

    def create_node(self, kind: str, target: Any, args: tuple, kwargs: dict,
                    name: str | None = None, type_expr: Any = None) -> Node:
        return self.graph.create_node(kind, target, args, kwargs, name, type_expr)

    def proxy(self, node: Node) -> Proxy:
        return Proxy(node, self)

    def create_proxy(self, kind: str, target: Any, args: tuple, kwargs: dict,
                     name: str | None = None, type_expr: Any = None) -> Proxy:
        """A new node of the arguments (made graph values with :meth:`create_arg`), as a
        proxy."""
        node = self.create_node(kind, target, self.create_arg(tuple(args)),
                                self.create_arg(dict(kwargs)), name, type_expr)
        return self.proxy(node)

    def _call_form(self, op: Callable, args: tuple, kwargs: dict) -> tuple | None:
        """The call ``(fn, args, kwargs)`` as the user wrote it (keywords by keyword, as
        torch.fx records ``F.softmax(x, dim=-1)``, and the public function as target, not the
        function under its ``out=`` form) when ``op`` handing over its arguments (all of them
        positionally) is the public function call now running, before anything but the
        ``get_attr`` of a constant was recorded; else None."""
        written, self._written = self._written, None
        if written is None or inspect.unwrap(op) is not inspect.unwrap(written.fn):
            return None
        handed: set[Node] = set()
        map_aggregate((args, kwargs), lambda a: handed.add(a.node) if isinstance(a, Proxy) else a)
        between = self.graph._root._prev
        while between is not written.last:
            if between is self.graph._root or between.op != "get_attr":
                return None
            between = between._prev
        return (written.fn, written.args, written.kwargs) if handed == written.nodes else None

    def public_form(self, op: Callable) -> Callable:
        """The public function that is ``op`` (``ember.sigmoid`` for the op it hands over to,
        which a call of a closure's ``ember.sigmoid`` records), so a call gets one target
        however it was reached, as torch.fx records ``torch.sigmoid``; else ``op``."""
        return self._public_by_op.get(op, op)

    def create_arg(self, a: Any) -> Any:
        """A value as a node argument: proxies become their nodes, the root's parameters,
        buffers and tensor attributes ``get_attr`` nodes, other tensors constants stored on the
        root."""
        return map_aggregate(a, self._arg)

    def _arg(self, a: Any) -> Any:
        if isinstance(a, Proxy):
            return a.node
        if isinstance(a, Tensor):
            return self._tensor_attr(a).node
        if isinstance(a, Module):
            raise TypeError(f"symbolic tracing: a module ({type(a).__name__}) cannot be an "
                            f"argument of a recorded call")
        if dataclasses.is_dataclass(a) and not isinstance(a, type):  # (rebuilt, as torch.fx)
            return self.create_node("call_function", type(a), (), {
                f.name: self.create_arg(getattr(a, f.name)) for f in dataclasses.fields(a)})
        if holds(a, lambda v: isinstance(v, Proxy)):  # (at any depth: as torch.fx refuses)
            raise TypeError(f"symbolic tracing: a {type(a).__name__} holding traced values "
                            "cannot be an argument or output of the graph. Hint: make the "
                            "class a dataclass (a node rebuilds it), or pass its tensors")
        return a

    def _tensor_attr(self, t: Tensor) -> Proxy:
        """The ``get_attr`` proxy of a parameter, buffer or (stored as one) constant tensor."""
        name = self._tensor_names.get(id(t))
        if name is None:
            i = 0
            while hasattr(self.root, f"_tensor_constant{i}"):
                i += 1
            name = f"_tensor_constant{i}"
            self.root.register_buffer(name, t, persistent=False)
            self._tensor_names[id(t)] = name
        if name not in self._attr_proxies:
            proxy = self.create_proxy("get_attr", name, (), {})
            if self.param_shapes_constant and isinstance(t, Parameter):
                proxy = ParameterProxy(proxy.node, self, t)
            self._attr_proxies[name] = proxy
        return self._attr_proxies[name]

    def begin(self, root: Module, graph: Graph) -> None:
        """Records into ``graph`` from now on, for the module ``root`` (whose submodules,
        parameters and buffers the nodes name)."""
        self.root, self.graph = root, graph
        self._module_paths = {id(m): name for name, m in root.named_modules()}
        self._tensor_names = {id(t): name for name, t in (*root.named_parameters(),
                                                          *root.named_buffers())}
        for path, module in root.named_modules():  # (plain tensor attributes, by their path)
            for attr, value in vars(module).items():
                if isinstance(value, Tensor):
                    self._tensor_names.setdefault(id(value), f"{path}.{attr}" if path else attr)
        self._attr_proxies: dict[str, Proxy] = {}

    def trace(self, root: Module | Callable,
              concrete_args: dict[str, Any] | None = None) -> Graph:
        """The graph of ``root.forward`` (or of the function ``root``)."""
        if isinstance(root, Module):
            fn, args = type(root).forward, [root]
        else:
            fn, args, root = root, [], Module()
        graph = Graph(owning_module=root)
        graph._tracing = True  # (get_attr is quiet: a subclass may register the tensor later)
        self.begin(root, graph)
        try:
            inputs, keyword_inputs = self._placeholders(fn, skip_self=bool(args),
                                                        concrete_args=concrete_args or {})
            call = _starred_as_named(fn) if _starred(fn) else fn
            with _tracing(), self._patched(_user_globals(fn, root)):
                result = call(*args, *inputs, **keyword_inputs)
            returns = inspect.signature(fn).return_annotation
            self.create_node("output", "output", (self.create_arg(result),), {},
                             type_expr=None if returns is inspect.Signature.empty else returns)
        finally:
            graph._tracing = False
        return self.graph

    def _placeholders(self, fn: Callable, skip_self: bool,
                      concrete_args: dict[str, Any]) -> tuple[list[Any], dict[str, Any]]:
        """A placeholder (or the concrete value) per parameter: the positional ones, and the
        keyword-only ones by name."""
        params = list(inspect.signature(fn).parameters.values())[int(skip_self):]
        unknown = set(concrete_args) - {p.name for p in params}
        if unknown:
            raise ArgumentError(f"symbolic_trace: concrete_args names {sorted(unknown)}, which are "
                                f"not parameters of {fn.__qualname__}")
        values, keyword_values = [], {}
        why = _starred_refused(fn, params) if _starred(fn) else None
        if why is not None:
            raise NotImplementedError(
                f"symbolic_trace: {fn.__qualname__} takes *args or **kwargs{why}, which "
                f"Ember's tracer cannot pass as one value each. Hint: trace a wrapper with "
                f"named parameters")
        for p in params:
            if p.kind in (p.VAR_POSITIONAL, p.VAR_KEYWORD):  # (one value each: see trace)
                stars = "*" if p.kind is p.VAR_POSITIONAL else "**"
                values.append(self.create_proxy("placeholder", stars + p.name, (), {},
                                                name="_" + p.name))  # (torch.fx's name)
                continue
            # (through create_node / create_proxy, which a Tracer subclass may override; a default
            # stays as it is: one holding a tensor or a module skips create_proxy, whose
            # create_arg would make it a get_attr or refuse it; the annotation is the node's type)
            kind = None if p.annotation is p.empty else p.annotation
            if p.name in concrete_args:
                value = concrete_input(self, p.name, concrete_args[p.name], kind)
            elif p.default is p.empty or not _holds_tensor_or_module(p.default):
                value = self.create_proxy("placeholder", p.name,
                                          () if p.default is p.empty else (p.default,), {},
                                          type_expr=kind)
            else:
                value = self.proxy(self.create_node("placeholder", p.name, (p.default,), {},
                                                    type_expr=kind))
            if p.kind is p.KEYWORD_ONLY:
                keyword_values[p.name] = value
            else:
                values.append(value)
        return values, keyword_values

    @contextmanager
    def _patched(self, user_globals: list[dict[str, Any]]) -> Iterator[None]:
        """Module calls, parameter reads and wrapped functions go through the tracer: the
        autowrapped ones where their modules or ``user_globals`` (those of the traced code)
        name them, Ember's public functions also where ``user_globals`` name them (``from
        ember import cumsum``)."""
        tracer, module_call, module_getattr = self, Module.__call__, Module.__getattr__

        def call(mod: Module, *args: Any, **kwargs: Any) -> Any:
            return tracer.call_module(mod, functools.partial(module_call, mod), args, kwargs)

        def getattr_(mod: Module, name: str) -> Any:
            value = module_getattr(mod, name)
            if isinstance(value, Tensor) and id(value) in tracer._tensor_names:
                return tracer._tensor_attr(value)
            return value

        # (a name its module no longer defines, nor builtins, has no caller there to patch)
        saved = [(g, name, g.get(name, _MISSING)) for g, name in _WRAPPED
                 if name in g or hasattr(builtins, name)]
        saved += [(g, name, f) for g in (*user_globals, *map(vars, self._autowrap_modules))
                  for name, f in list(g.items())
                  if not name.startswith("_") and id(f) in self._autowrap_ids]
        for g, name, original in saved:
            g[name] = _recorder(original if original is not _MISSING
                                else getattr(builtins, name))
        public = _public_functions()
        self._public_by_op = _public_by_op(public)
        ids = {id(fn) for _, _, fn in public}
        public += [(g, name, f) for g in user_globals for name, f in list(g.items())
                   if id(f) in ids]
        for g, name, original in public:
            g[name] = _recorder_of_refusals(tracer, original)
        saved += public
        # (restored as they were: ``__call__`` is inherited from the hooks mixin, which
        # switches its own between a fast and a hooked path, so it must not be pinned here)
        own = {name: Module.__dict__.get(name, _MISSING) for name in ("__call__", "__getattr__")}
        Module.__call__, Module.__getattr__ = call, getattr_
        methods = {name: f for name, f in vars(Tensor).items() if isinstance(f, types.FunctionType)
                   and (not name.startswith("_") or name == "__getitem__")}
        for name, f in methods.items():
            setattr(Tensor, name, _recorder_of_refusals(tracer, f, name))
        try:
            yield
        finally:
            for name, f in methods.items():
                setattr(Tensor, name, f)
            for name, original in own.items():
                if original is _MISSING:
                    delattr(Module, name)
                else:
                    setattr(Module, name, original)
            for g, name, original in reversed(saved):  # (a name patched twice: the first)
                if original is _MISSING:
                    del g[name]
                else:
                    g[name] = original


_MISSING = object()
# Tracing patches process-wide names (Tensor's methods, Module.__call__, the traced code's
# globals): one thread traces at a time, so overlapping traces cannot restore each other's
# patches out of order (a trace nested in the same thread is fine: the lock is re-entrant).
_TRACING = threading.RLock()
#: the traces running now: code the tracer does not patch tests it (one attribute read)
#: before calling :func:`record_call`, in one line: ``if active and (traced :=
#: record_call(fn, args, kwargs)) is not None: return traced`` (no call when not tracing)
active = 0


@contextmanager
def _tracing() -> Iterator[None]:
    global active
    with _TRACING:
        active += 1
        try:
            yield
        finally:
            active -= 1


def record_call(fn: Callable, args: tuple, kwargs: dict) -> Proxy | None:
    """``fn(*args, **kwargs)`` as a ``call_function`` node, recorded by the tracer of a
    :class:`Proxy` among the arguments (also inside lists, tuples and dicts), as a torch op
    records itself on proxies; None when no trace runs now (in any thread) or no argument
    is a proxy. For functions the tracer does not patch, called from generated code
    (``ember.export.prims``' ops in an exported module): call it where ``active``."""
    found: list[Proxy] = []
    map_aggregate((args, kwargs), lambda a: found.append(a) if isinstance(a, Proxy) else a)
    return found[0].tracer.create_proxy("call_function", fn, args, kwargs) if found else None


def _holds_tensor_or_module(value: Any) -> bool:
    found = []
    map_aggregate(value, lambda a: found.append(a) if isinstance(a, (Tensor, Module)) else a)
    return bool(found)


def _user_globals(fn: Callable, root: Module) -> list[dict[str, Any]]:
    """The globals of the traced function and of its submodules' ``forward`` methods, but
    Ember's own modules', each once."""
    found = {}
    for f in (fn, *(type(m).forward for m in root.modules())):
        g = getattr(f, "__globals__", None)
        if g is not None and not g.get("__name__", "").startswith("ember."):
            found[id(g)] = g
    return list(found.values())


def _public_functions() -> list[tuple[dict[str, Any], str, Callable]]:
    """The functions of ``ember`` and its ``nn.functional``, ``linalg``, ``special`` and
    ``fft`` namespaces (their namespaces, names and functions), which
    :func:`_recorder_of_refusals` wraps during tracing."""
    import ember
    import ember.nn.functional as functional

    namespaces = (ember, functional, ember.linalg, ember.special, ember.fft)
    return [(vars(namespace), name, fn) for namespace in namespaces
            for name, fn in list(vars(namespace).items())
            if not name.startswith("_") and isinstance(fn, types.FunctionType)]


_PUBLIC_BY_OP: list = [[], {}]  # (the public functions it was built from, the map)


def _public_by_op(public: list) -> dict[Callable, Callable]:
    """The op each public function hands over to (``inspect.unwrap``) -> the function
    (``ember``'s namespace first), built once per process: again only where the public
    functions are no longer the same objects (one added to or replaced in a namespace;
    ``ember.library``'s custom ops live in ``ember.ops.<namespace>``, not among them)."""
    fns = [fn for _, _, fn in public]
    if fns != _PUBLIC_BY_OP[0]:  # (identities compared first: no function's __eq__ runs)
        by_op: dict[Callable, Callable] = {}
        for fn in fns:
            by_op.setdefault(inspect.unwrap(fn), fn)
        _PUBLIC_BY_OP[:] = [fns, by_op]
    return _PUBLIC_BY_OP[1]


def _recorder(fn: Callable) -> Callable:
    """``fn`` as a ``call_function`` node when a proxy is among its arguments."""
    def recorded(*args: Any, **kwargs: Any) -> Any:
        traced = record_call(fn, args, kwargs)
        return fn(*args, **kwargs) if traced is None else traced
    recorded.__name__ = getattr(fn, "__name__", "wrapped")
    return recorded


def _recorder_of_refusals(tracer: Tracer, fn: Callable, method: str | None = None
                          ) -> Callable:
    """``fn``, traced as usual, but one ``call_function`` node when it fails on a proxy among
    its arguments (``ember.cat([constant, x])``, ``ember.where(c, constant, x)``,
    ``ember.ones(n, device=x.device)``): PyTorch's ``__torch_function__`` records any call
    with a proxy anywhere in its arguments. The nodes the call made before it failed are
    dropped. ``fn`` may be the Tensor ``method`` of that name (a constant's
    ``c.masked_fill(x > 0, 0)``, ``c[x > 0]``), recorded as a ``call_method`` node (or a
    ``getitem``) where code outside Ember calls it. A call of ``fn`` that hands itself over
    first thing is recorded as written (see :meth:`Tracer._call_form`)."""
    def recorded(*args: Any, **kwargs: Any) -> Any:
        if method is not None and \
                sys._getframe(1).f_globals.get("__name__", "").startswith("ember."):
            return fn(*args, **kwargs)
        proxies: list[Proxy] = []
        map_aggregate((args, kwargs), lambda a: proxies.append(a) if isinstance(a, Proxy) else a)
        nodes = [p.node for p in proxies]  # (an argument ``x.device`` gets its node now, kept)
        last = tracer.graph._root._prev
        outer = tracer._written
        if method is None and nodes and "out" not in kwargs:
            tracer._written = _Written(fn, args, kwargs, set(nodes), last)
        try:
            return fn(*args, **kwargs)
        except (TensorLikeOperand, TraceError, EmberError):  # (not a misuse: out=)
            if not nodes:
                raise
            while tracer.graph._root._prev is not last:
                tracer.graph.erase_node(tracer.graph._root._prev)
            if method is None or method == "__getitem__":
                return tracer.create_proxy("call_function", fn if method is None
                                           else operator.getitem, args, kwargs)
            return tracer.create_proxy("call_method", method, args, kwargs)
        finally:
            tracer._written = outer
    recorded.__name__ = getattr(fn, "__name__", "wrapped")
    return recorded


class _Written(NamedTuple):
    """A call of a public function as the user wrote it, and the graph's last node before it."""

    fn: Callable
    args: tuple
    kwargs: dict
    nodes: set[Node]
    last: Node


def _starred(fn: Callable) -> bool:
    return any(p.kind in (p.VAR_POSITIONAL, p.VAR_KEYWORD)
               for p in inspect.signature(fn).parameters.values())


def _starred_refused(fn: Callable, params: list[inspect.Parameter]) -> str | None:
    """Why the tracer cannot pass ``fn``'s ``*args``/``**kwargs`` as one value each (the
    words to add to its error), or None if it can."""
    if not isinstance(fn, types.FunctionType):
        return ""
    if any(p.kind is p.KEYWORD_ONLY for p in params):
        return " with keyword-only parameters"
    if inspect.signature(fn, follow_wrapped=False) != inspect.signature(fn):
        # (the signature is the wrapped function's; the code rewritten would be the wrapper's)
        return " through a decorator (functools.wraps) whose wrapper takes other parameters"
    return None


def _starred_as_named(fn: types.FunctionType) -> types.FunctionType:
    """``fn`` taking its ``*args`` and ``**kwargs`` as one positional parameter each (as
    torch.fx does), so the tracer passes a proxy of the tuple or dict: the body then records
    ``args[0]`` as a ``getitem`` node. The tracer passes every parameter, so no defaults."""
    code = fn.__code__
    starred = inspect.CO_VARARGS | inspect.CO_VARKEYWORDS
    code = code.replace(co_flags=code.co_flags & ~starred,
                        co_argcount=code.co_argcount + (code.co_flags & starred).bit_count())
    return types.FunctionType(code, fn.__globals__, fn.__name__, None, fn.__closure__)


def symbolic_trace(root: Module | Callable,
                   concrete_args: dict[str, Any] | None = None) -> Any:
    """The :class:`~ember.fx.GraphModule` of ``root`` (a module or a function), traced with
    :class:`Tracer`. ``concrete_args`` fixes some inputs to values (the graph is specialized to
    them), as control flow on them then works.

    Example:
        >>> gm = ember.fx.symbolic_trace(ember.nn.Sequential(ember.nn.Linear(4, 2),
        ...                                                  ember.nn.ReLU()))
        >>> print(gm.code)
        def forward(self, input):
            input_1 = input
            _0 = getattr(self, "0")(input_1);  input_1 = None
            _1 = getattr(self, "1")(_0);  _0 = None
            return _1
        <BLANKLINE>
    """
    from ember.fx.graph_module import GraphModule

    tracer = Tracer()
    graph = tracer.trace(root, concrete_args)
    name = type(root).__name__ if isinstance(root, Module) else root.__name__
    return GraphModule(tracer.root, graph, name)
