"""Finding what a function works on before tracing it: the modules, optimizers and tensors it
reaches through its closure, its globals, its ``self`` and its arguments.

Their tensors get names in the graph (``model.fc1.weight``) and are state wherever they turn
up. The compiled function's cache key watches what changes the traced graph: each reached
tensor's ``requires_grad`` and whether its ``.grad`` is set, and the :meth:`Reach.layout`:
which objects the function's global and closure names hold (and the numbers they hold), its
default argument values, the attributes its code reads from them by name (``cfg.scale``), the
items it reads from their dicts, lists and tuples (``cfg['x']``, ``self.cfg[0]``), which
tensors and modules it reaches, their shapes, hooks and flags (``training``). Hook functions
(of modules, tensors and arguments) are followed as the function is; library objects are not.
"""

from __future__ import annotations

import functools
import types
import warnings
from collections.abc import Callable
from operator import attrgetter, is_not
from typing import Any

from ember.jit.code_names import (
    ATTRIBUTE_LOADS,
    ATTRIBUTE_STORES,
    LOADS,
    STATE_NAMES,
    WRITE_METHODS,
    attribute_chains,
    attribute_writes,
    code_names,
    item_chains,
    names_assigned,
)
from ember.jit.layout_keys import grad_key, state_key, tensor_hooks
from ember.jit.outside_memory import shared_groups
from ember.jit.random_reads import draw_line, draws_random, unseeded_line, warn_random
from ember.jit.reached_values import (
    MAX_DEPTH,
    WATCHED,
    WATCHED_ITEMS,
    Contents,
    held_tensors,
    is_plain,
    key_label,
    known_keys,
    value_key,
)
from ember.jit.special_reads import method_reads, stored_callable
from ember.jit.user_objects import (
    MISSING,
    NOT_FOLLOWED,
    Defaults,
    Numbers,
    assigned_attributes,
    bound_value,
    class_reads_state,
    is_library,
    library_code,
    member,
    own_call,
    partial_arguments,
    plain_object,
    user_class,
    user_module,
    wrapped_by_library,
)
from ember.jit.watched_methods import MethodWatch
from ember.layouts import strides_key
from ember.nn.module import Module
from ember.nn.module_hooks import hooks_around
from ember.optim.optimizer import Optimizer
from ember.tensor import STRUCTURE, Tensor

# the methods Python runs for ``obj[k]``, ``len(obj)``, ``k in obj``, ``for k in obj``, ``obj(x)``
PROTOCOL = ("__getitem__", "__missing__", "__len__", "__contains__", "__iter__", "__call__")

_REQUIRES_GRAD = attrgetter("_requires_grad")  # (the slot: read on every call)
_DATA = attrgetter("_data")


class Reach:
    """What a function reaches: named tensors, modules and the parameters that may get grads."""

    def __init__(self) -> None:
        self.labels: dict[int, str] = {}
        self.tensors: list[Tensor] = []
        self.modules: list[Module] = []
        self.module_labels: list[str] = []
        self.optimizers: list[tuple[str, Optimizer]] = []
        # the optimizers whose ``state`` is watched (some code read a ``.state``): label,
        # optimizer, what its state held when found
        self.states: list[tuple[str, Optimizer, tuple]] = []
        self.reads_state = False  # some code it follows reads some ``x.state``
        self.objects: list[Any] = []  # other objects followed: the user's, jit_state()'s
        self.object_labels: dict[int, str] = {}  # id(object) -> the name it was found by
        self.params: list[Tensor] = []
        # (globals dict or cell, name, label, key, value: kept alive, so its id stays its own)
        self.bindings: list[tuple[Any, str, str, Any, Any]] = []
        self.contents: list[tuple[str, Contents]] = []  # (label, what it held) read whole
        self.structure = STRUCTURE.value
        self.watch = MethodWatch()  # forward, step: on the class and the instance
        self.index = 0  # which of a compiled function's layouts this is (set by it)
        self.arguments: list = []  # the objects among the arguments it was found for
        # (id(module), attribute): those carried for the next call, whatever they hold now (one
        # holding no tensor yet is named once it does: the next call traces again)
        self.assigned: set[tuple[int, str]] = set()
        self.assigned_names: list[tuple[Any, str, str]] = []  # (see names_assigned)
        self._seen: set[int] = set()
        self._functions: set[int] = set()  # those whose defaults are watched already
        self._methods: set[tuple[int, int]] = set()  # (method, object) followed already
        self._arrays: list | None = None  # each tensor's array when :meth:`guard` last looked
        self._sharing: tuple = ()  # the labels of tensors on one memory, grouped (see guard)

    def add(self, name: str, obj: Any, depth: int = 0) -> None:
        """Follows ``obj`` (at most ``MAX_DEPTH`` links from the function): modules,
        optimizers and schedulers, tensors, containers, functions (their closures and the
        globals they name), objects that name the tensors a graph reads from them
        (``jit_state()``: a GradScaler's scale) and plain objects (their attributes)."""
        if depth > MAX_DEPTH or id(obj) in self._seen or isinstance(obj, NOT_FOLLOWED):
            return
        self._seen.add(id(obj))
        if isinstance(obj, Module):
            self._add_module(name, obj)
        elif isinstance(obj, Optimizer):
            self.optimizers.append((name, obj))
            for i, group in enumerate(obj.param_groups):
                for j, p in enumerate(group["params"]):
                    self._tensor(f"{name}.param_groups[{i}][{j}]", p)
        elif isinstance(obj, Tensor):
            self._tensor(name, obj)
        elif isinstance(obj, list | tuple):
            for i, item in enumerate(obj):
                self.add(f"{name}[{i}]", item, depth + 1)
        elif isinstance(obj, dict):
            for i, (key, item) in enumerate(list(obj.items())):
                self.add(f"{name}[{key_label(key, i)}]", item, depth + 1)
        elif isinstance(obj, types.FunctionType | types.MethodType):
            self.add_function(obj, depth + 1)
        elif isinstance(obj, functools.partial):  # (what its function reads of its arguments)
            self.add_partial(obj, name, depth)
            self.add(f"{name}.func", obj.func, depth)
            self.add_function(obj.func, depth + 1, arguments=partial_arguments(obj))
        elif callable(getattr(type(obj), "jit_state", None)):
            self.objects.append(obj)
            for key, t in obj.jit_state().items():
                self._tensor(f"{name}.{key}", t)
        elif plain_object(obj):
            self.objects.append(obj)
            self.object_labels[id(obj)] = name
            self.reads_state = self.reads_state or class_reads_state(type(obj))
            for key, item in list(vars(obj).items()):
                self.add(f"{name}.{key}", item, depth + 1)

    def add_function(self, fn: Any, depth: int = 0, owner: Any = None,
                     arguments: dict[str, Any] | None = None) -> None:
        """What a function reaches: its ``self`` (``owner`` for a class's function: a
        module's ``forward``, or a module's hook), default argument values, closure cells,
        the globals it names and the attributes it reads from them or from its ``arguments``
        by name (``cfg.scale``, ``self.cfg.scale``), also in the functions it defines."""
        target = getattr(fn, "__self__", None)
        if target is not None:
            self.add("self", target, depth)
        func = getattr(fn, "__func__", fn)
        code = getattr(func, "__code__", None)
        if code is None or library_code(func):
            wrapped = wrapped_by_library(func)  # (a module autocast's decorator wraps)
            if wrapped is not None:
                self.add(getattr(wrapped, "__name__", "wrapped"), wrapped, depth)
            return
        stored, assigned = names_assigned(func, code)
        self.assigned_names += assigned
        if (line := unseeded_line(func, code)) is not None:
            warn_random(f"{func.__qualname__}: a generator made without a seed", func, code,
                        line)
        self.reads_state = self.reads_state or not STATE_NAMES.isdisjoint(
            code_names(code, ATTRIBUTE_LOADS))
        defaults = Defaults(func) if isinstance(func, types.FunctionType) else None
        values = {} if defaults is None else {n: defaults.read(n) for n in defaults.names()}
        if values and id(func) not in self._functions:
            self._functions.add(id(func))  # its default values: inputs, as its globals are
            for name, value in values.items():
                self._bind(defaults, name, f"{func.__qualname__}: default {name}")
                self.add(name, value, depth)
        cells = {}
        for name, cell in zip(code.co_freevars, func.__closure__ or ()):
            try:
                value = cell.cell_contents
            except ValueError:  # an empty cell: a name the function assigns later
                continue
            cells[name] = value
            if name not in stored:
                self._bind(cell, name, f"{func.__qualname__}: closure variable {name}")
            self.add(name, value, depth)
        scope = getattr(func, "__globals__", {})
        for name in code_names(code, LOADS):
            if name in scope:
                if name not in stored:
                    self._bind(scope, name, f"{func.__qualname__}: global {name}")
                self.add(name, scope[name], depth)
        local = {**values, **(arguments or {})}  # (a parameter left out: its default)
        this = owner if owner is not None else target  # (an empty dict subclass is falsy)
        if code.co_argcount and this is not None:
            local[code.co_varnames[0]] = this
        roots = {"LOAD_GLOBAL": scope, "LOAD_NAME": scope, "LOAD_DEREF": cells, "LOAD_FAST": local}
        written = set(code_names(code, ATTRIBUTE_STORES))
        for op, name, attributes in attribute_chains(code):
            root = roots[op].get(name, MISSING)
            if root is not MISSING and root is not None and name not in stored:
                self._bind_attribute(root, func.__qualname__, name, attributes, written, depth)
        for op, name, links in item_chains(code):  # (``cfg['x']``, ``self.cfg[0]``)
            root = roots[op].get(name, MISSING)
            if root is not MISSING and name not in stored and draws_random(root, links):
                warn_random(f"{func.__qualname__}: {name}", func, code, draw_line(code, links))
            elif root is not MISSING and name not in stored:
                self._bind_items(root, f"{func.__qualname__}: {name}",
                                 known_keys(links, roots, stored), depth)
        for op, name, attributes in attribute_writes(code):  # (``model.h = h.detach()``)
            holder = roots[op].get(name, MISSING)
            for attribute in attributes[:-1]:
                holder = member(holder, attribute) if isinstance(holder, Module) or \
                    plain_object(holder) else MISSING
            if isinstance(holder, Module):
                label = next((label for label, m in zip(self.module_labels, self.modules)
                              if m is holder), None)
                if label is not None:
                    self._carry(holder, label, attributes[-1])

    def add_partial(self, p: functools.partial, name: str, depth: int) -> None:
        """What a partial binds; its ``keywords`` (a dict read at each call) watched too."""
        for key in p.keywords:  # (``p.keywords['c'] = d`` traces again)
            self._bind(p.keywords, key, f"{name}.keywords[{key!r}]")
        for key, arg in partial_arguments(p, positions=True).items():
            self.add(f"{name}.{key}", arg, depth + 1)

    def _bind_attribute(self, obj: Any, where: str, root: str, attributes: tuple[str, ...],
                        written: set[str], depth: int) -> None:
        """Watches the value at the end of ``root.a.b…`` (``root`` holding ``obj``) where the
        last link is an attribute of the user's plain object or class (a module's are watched
        already; one the function itself assigns is a counter, not an input). A class's
        attribute that is no number (a tensor) is followed too, as an object's are."""
        for i, name in enumerate(attributes):
            holder = obj
            if not (plain_object(holder) or isinstance(holder, Module) or
                    user_module(holder) or user_class(holder)):
                return
            obj = member(holder, name)
            if obj is MISSING:
                return
            if i == len(attributes) - 1 and not isinstance(holder, Module) and \
                    name not in written:
                self._bind(holder, name, f"{where}: {root}.{'.'.join(attributes)}")
            if isinstance(holder, type) and not is_plain(obj):
                self.add(".".join((root, *attributes[:i + 1])), obj, depth + 1)

    def _bind_items(self, obj: Any, label: str, links: tuple, depth: int) -> None:
        """Watches what a chain with subscripts (:func:`item_chains`) reads: each item a
        constant key reads from a dict or list (by value or identity, as a binding), and each
        attribute of a plain object after one; where the chain is read whole (``cfg[k]``,
        ``len(cfg)``, ``helper(cfg)``), all a dict, list or tuple holds (:class:`Contents`).
        A method called on the user's object or module, or those of :data:`PROTOCOL` where
        it is used otherwise, followed as a function it calls; the user's object used whole
        (``helper(obj)``, ``getattr(obj, name)``): its attributes too; called (``obj(x)``):
        its ``__call__`` alone. ``cfg.get('k')`` reads an item (or its absence), and an
        optimizer's ``param_groups`` are read as the user's list."""
        subscripted = False
        for kind, key in links:
            holder = obj
            if kind in ("attr", "method") and isinstance(holder, WATCHED):
                if key not in WRITE_METHODS:  # (a method: a read, but for ``log.append``)
                    self._watch_whole(holder, label)
                return
            if kind == "get" and getattr(type(holder), "get", None) is not dict.get:
                if isinstance(holder, WATCHED):  # (a class's own ``get``: a method it calls)
                    self._watch_whole(holder, label)
                self._follow_methods(holder, ("get",), depth)
                return
            if kind == "method":  # (its class's method; a callable it holds, ``self.t(x)``:
                held = stored_callable(holder, key)  # which one, and what it reads; a
                read = method_reads(holder, key)  # library's method that returns an
                if held is not None or read is not None:  # attribute: ``get_last_lr()``)
                    self._bind(holder if read is None else Numbers(holder), read or key,
                               f"{label}.{read or key}")
                    self.add(f"{label}.{key}", held, depth + 1)
                    self._follow_methods(held, ("__call__",), depth)  # (an object of yours)
                self._follow_methods(holder, (key,), depth)
                return
            if kind == "passed":  # (``helper(cfg)``: the helper's reads of it, if followed)
                if self._follow_passed(holder, key, depth):
                    return
                kind = "whole"
            if kind == "called" and own_call(holder):  # (``obj(x)``: what its ``__call__``
                self._follow_methods(holder, ("__call__",), depth)  # reads, not all it holds)
                return
            if kind != "attr" and kind != "get" and plain_object(holder):
                self._follow_methods(holder, PROTOCOL, depth)
                if isinstance(holder, WATCHED) and kind != "item":  # (a dict subclass's items)
                    self._watch_whole(holder, label)
                if kind != "item" and not isinstance(holder, Module):  # (``helper(obj)``,
                    self._watch_whole(vars(holder), f"{label}.__dict__")  # ``getattr``)
                if kind != "item" or not isinstance(holder, dict | list):
                    return  # (a dict or list subclass's item: also watched as a dict's, below)
            if kind == "attr":
                if not (plain_object(holder) or isinstance(holder, Module) or
                        user_module(holder) or user_class(holder)) or \
                        isinstance(holder, Optimizer) and key in STATE_NAMES:
                    if not (isinstance(holder, Optimizer) and key == "param_groups" or
                            isinstance(member(holder, key), Optimizer)):  # (``sch.optimizer``)
                        return  # (an optimizer's state: see :meth:`watch_states`; its
                    # ``param_groups`` are read as the user's list: ``['lr']`` a scheduler sets)
                obj = member(holder, key)
                if subscripted and obj is not MISSING and not isinstance(holder, Module):
                    self._bind(holder, key, f"{label}.{key}")
                label = f"{label}.{key}"
            elif isinstance(holder, WATCHED) and not isinstance(holder, dict | list | tuple):
                self._watch_whole(holder, label)  # (``queue[-1]``, ``table[0]``)
                return
            elif kind in ("item", "get"):
                subscripted = True
                obj = _item(holder, key)
                if isinstance(holder, dict):  # (an absent key too: the call may set it)
                    self._bind(holder, key, f"{label}[{key!r}]")
                elif isinstance(holder, list) and obj is not MISSING:
                    self._bind(holder, key, f"{label}[{key!r}]")
                elif obj is MISSING and isinstance(holder, list | tuple):  # (``L[True]``)
                    self._watch_whole(holder, label)
                label = f"{label}[{key!r}]"
            elif isinstance(holder, WATCHED):  # (read whole)
                self._watch_whole(holder, label)
            if obj is MISSING:
                return

    def _follow_passed(self, obj: Any, call: tuple, depth: int) -> bool:
        """Follows the user's function that ``obj`` (a container or the user's object, not a
        module) is passed to, ``call[2]``-th (:func:`item_chains`'s ``("passed", call)``),
        (the function itself and the position, resolved by :func:`known_keys`), with its
        parameter bound to ``obj``: what it reads of it is watched. False where that is no
        function of the user's, or its code nested in it reads the parameter (a closure's
        cell: ``sum(c[k] for k in c)``, ``lambda: c['b']``) (then ``obj`` is read whole)."""
        fn, i = call
        if not isinstance(fn, types.FunctionType) or library_code(fn) or \
                i >= fn.__code__.co_argcount or isinstance(obj, Module) or \
                fn.__code__.co_varnames[i] in fn.__code__.co_cellvars or \
                not (isinstance(obj, WATCHED) or plain_object(obj)) or depth >= MAX_DEPTH:
            return False
        if (id(fn), id(obj)) not in self._methods:
            self._methods.add((id(fn), id(obj)))
            self.add_function(fn, depth + 1, arguments={fn.__code__.co_varnames[i]: obj})
        return True

    def _watch_whole(self, container: Any, label: str) -> None:
        if any(seen.root is container for _, seen in self.contents):
            return
        seen = Contents(container)
        if not seen.complete:
            warnings.warn(f"ember.jit: {label} holds more than {WATCHED_ITEMS} items (nested "
                          f"ones counted) or containers nested over {MAX_DEPTH} levels down, "
                          "and is read whole or by a computed key: a change past them is not "
                          "seen, and the graph keeps the values it read. "
                          "Hint: hold large tables in a tensor, or pass them as arguments",
                          stacklevel=2)
        self.contents.append((label, seen))

    def _follow_methods(self, obj: Any, names: tuple[str, ...], depth: int) -> None:
        """The methods ``names`` of the class of the user's object or module ``obj`` (one
        it calls, or those Python runs for it: :data:`PROTOCOL`), followed as functions it
        calls, ``obj`` their ``self``."""
        if depth >= MAX_DEPTH or isinstance(obj, Optimizer) or \
                not (plain_object(obj) or isinstance(obj, Module)):
            return  # (an optimizer's step is traced as ops: its state is watched apart)
        for name in names:
            method = member(type(obj), name)
            if isinstance(method, types.FunctionType) and not library_code(method) and \
                    (id(method), id(obj)) not in self._methods:
                self._methods.add((id(method), id(obj)))
                self._bind_method(obj, name)
                self.add_function(method, depth + 1, owner=obj)

    def _bind_method(self, obj: Any, name: str, label: str | None = None) -> None:
        """Watches the function ``obj.name`` finds (``Model.forward = f`` traces again): a
        module's on its class, once (one set on a module later is another reach's)."""
        holder = type(obj) if isinstance(obj, Module) and name not in vars(obj) else obj
        if (id(holder), name) not in self._methods:
            self._methods.add((id(holder), name))
            if holder is not obj:
                return self.watch.on_class(holder, name, f"{holder.__name__}.{name}")
            where = label or self.object_labels.get(id(obj), type(obj).__name__)
            self._bind(holder, name, f"{where}.{name}")

    def watch_states(self) -> None:
        """Where code it follows reads some ``.state`` (of an optimizer, or through a helper
        given one), what each reached optimizer's state holds is part of the layout: a branch
        on ``p in opt.state`` traced before the first step is not the steady graph (another
        object's ``state`` read: one more trace, after the first step; LBFGS, one a step)."""
        self.watch.finish(self.modules, self.optimizers)  # (all reached now)
        if self.reads_state:
            self.states = [(name, opt, state_key(opt)) for name, opt in self.optimizers]

    def _bind(self, holder: Any, name: str, label: str) -> None:
        value = bound_value(holder, name)
        if not isinstance(value, types.ModuleType):  # (an imported module is not rebound)
            self.bindings.append((holder, name, label, value_key(value), value))

    def _add_module(self, name: str, module: Module) -> None:
        prefix = f"{name}." if name else ""
        # its tensors are named first: a hook that reaches them another way (an optimizer
        # stepped from a post-accumulate hook) must not name them ``opts[...]``
        named = [(prefix + tname, t) for tname, t in
                 (*module.named_parameters(), *module.named_buffers())]
        new = [(tname, t) for tname, t in named if self._label(tname, t)]
        # (all listed before any forward is followed: a parent's may assign its child's
        # attribute, ``self.cell.h = h``)
        members = [(prefix + mname if mname else name or "self", m)
                   for mname, m in module.named_modules()]
        for label, m in members:
            self.modules.append(m)
            self.module_labels.append(label)
        for label, m in members:
            for attr, value in list(vars(m).items()):  # (an optimizer a module holds)
                if isinstance(value, Optimizer):
                    self.add(f"{label}.{attr}", value, 1)
            if not is_library(m):  # (the globals a user's layer reads in its forward)
                self._carried_tensors(m, label)
                self.reads_state = self.reads_state or class_reads_state(type(m))
            own = vars(m).get("forward")  # (watched on the instance, else on its class: a
            self._bind_method(m, "forward", label)  # library's too, ``nn.Linear.forward = f``)
            self.add_function(*((type(m).forward, 1, m) if own is None else (own, 1)))
            for fn, *_ in hooks_around(m):  # (a hook's first argument is the module)
                self.add_function(fn, 1, owner=None if hasattr(fn, "__self__") else m)
        for tname, t in new:
            self._follow_hooks(tname, t)

    def _carried_tensors(self, m: Module, label: str) -> None:
        """Names, as state read at every call, the plain tensor attributes of the user's
        module ``m`` (a tensor, or a tuple, list or dict of them) that a method of its class
        other than ``__init__`` assigns (an RNN's ``self.h = h.detach()``, an LSTM's
        ``self.state = (h, c)``): the next call reads what this one left. (Others are
        constants, a table Python may read.) One sharing a reached tensor's memory
        (``self.w = self.lin.weight.detach()``) stays that tensor's."""
        assigned = assigned_attributes(type(m))
        for attr in [a for a in vars(m) if a in assigned] + sorted(assigned - vars(m).keys()):
            self._carry(m, label, attr)

    def _carry(self, m: Module, label: str, attr: str) -> None:
        """Names the tensors the attribute ``attr`` of module ``m`` (labelled ``label``) holds
        for the next call (a tensor, or a tuple, list or dict of them), unless one shares a
        reached tensor's memory."""
        self.assigned.add((id(m), attr))
        label = f"{label}.{attr}"
        held = held_tensors(vars(m).get(attr))
        reached = {id(t._data) for t in self.tensors} if held else set()
        for where, t in held:
            if id(t._data) not in reached:
                self._tensor(label + where, t)

    def _tensor(self, name: str, t: Tensor) -> None:
        if self._label(name, t):
            self._follow_hooks(name, t)

    def _label(self, name: str, t: Tensor) -> bool:
        """Names ``t`` unless it has a name already; whether it is new."""
        if id(t) in self.labels:
            return False
        self.labels[id(t)] = name
        self.tensors.append(t)
        if t.requires_grad:
            self.params.append(t)
        return True

    def _follow_hooks(self, name: str, t: Tensor) -> None:
        for hook in tensor_hooks(t):
            self.add(f"hook of {name}", hook)

    def plain_objects(self) -> list[Any]:
        """The user's reached objects (not modules, optimizers or library objects)."""
        return [obj for obj in self.objects if plain_object(obj)]

    def carried_tensors(self) -> list[tuple[dict, str, Any]]:
        """``(members, name, value)`` for each attribute of the reached modules (see
        :meth:`_carried_tensors`) and of the user's reached objects that holds tensors named
        by it (a tensor, or a tuple, list or dict of them): where a function may rebind
        tensors for its next call."""
        holders = [(label, vars(m)) for label, m in zip(self.module_labels, self.modules)] + \
            [(self.object_labels[id(o)], vars(o)) for o in self.plain_objects()]
        return [(members, name, value) for label, members in holders
                for name, value in members.items() if (held := held_tensors(value)) and
                all(self.labels.get(id(t)) == f"{label}.{name}{where}" for where, t in held)]

    def optimizer_state(self, opt: Optimizer) -> list[tuple[str, Tensor]]:
        """The tensors ``opt`` holds in its ``state`` now, with labels
        (``opt.state[model.fc1.weight]['exp_avg']``): a trace that reads one reads it at every
        call, as the step writes it."""
        name = next((name for name, seen in self.optimizers if seen is opt), type(opt).__name__)
        return [(f"{name}.state[{self.labels.get(id(p), '?')}][{key!r}]", value)
                for p, state in opt.state.items() if isinstance(state, dict)
                for key, value in state.items() if isinstance(value, Tensor)]

    def guard(self, grads: bool = True) -> tuple:
        """The part of the cache key read on every call (what changes without a count in
        :data:`~ember.tensor.STRUCTURE`): each reached tensor's ``requires_grad`` (freezing
        or unfreezing one changes the graph) and, with ``grads``, whether its ``.grad`` is
        set (:func:`~ember.jit.layout_keys.grad_key`), and which of them share memory: looked
        at again where one holds another array (``W.data = F[:3]`` after a trace: the next
        call traces again, and :func:`~ember.jit.outside_memory.shared_state` sees it)."""
        if self._arrays is None or any(map(is_not, map(_DATA, self.tensors), self._arrays)):
            self._arrays = list(map(_DATA, self.tensors))
            self._sharing = shared_groups(self.tensors, self.labels)
        return (tuple(map(_REQUIRES_GRAD, self.tensors)),
                tuple(map(grad_key, self.tensors)) if grads else (), (self._sharing,))

    def moved(self) -> bool:
        """Whether a global or closure name holds another object or number, a ``forward``
        moved, or a module's members or a tensor's ``.data`` changed (see :meth:`layout`)."""
        return STRUCTURE.value != self.structure or self.watch.moved() or any(
            (now := bound_value(holder, name)) is not value and value_key(now) != key
            for holder, name, _, key, value in self.bindings) or bool(self.contents) and not all(
            seen.holds() for _, seen in self.contents) or bool(self.states) and any(
            state_key(opt) != key for _, opt, key in self.states)

    def layout(self) -> dict[str, Any]:
        """What the graph was built against, by readable name: each binding's object (its
        value, for a number or string), each reached module with its hooks and the numbers
        among its attributes (``p``, ``eps``, ``training``), each optimizer's parameters and
        step hooks, and each reached tensor with its shape, dtype, strides and hooks (the hook
        functions themselves: compared by identity, and kept alive)."""
        out = {label: key for _, _, label, key, _ in self.bindings} | self.watch.layout()
        for label, seen in self.contents:
            out.update(seen.entries(label))
        for label, m in zip(self.module_labels, self.modules):
            out[label] = ("object", id(m))
            for attr, value in vars(m).items():  # (``training`` among them)
                if is_plain(value):
                    out[f"{label}.{attr}"] = value_key(value)
            hooks = hooks_around(m)  # (and their flags: with_kwargs changes the call)
            out[f"hooks of {label}"] = ("hooks", tuple(h for h, *_ in hooks),
                                        tuple(flags for _, *flags in hooks))
        for label, opt in self.optimizers:
            out[f"parameters of {label}"] = ("parameters", tuple(
                tuple(map(id, g["params"])) for g in opt.param_groups))
            pre, post = opt._step_hooks()  # (global ones too: registering one retraces)
            out[f"step hooks of {label}"] = ("hooks", (*pre, *post), len(pre))
        for label, opt, _ in self.states:
            out[f"state of {label}"] = ("state", state_key(opt))
        for t in self.tensors:
            label = self.labels[id(t)]
            out[label] = ("tensor", id(t), t._data.shape, t.dtype,  # (lazy ones have no .shape)
                          strides_key(t._data))
            out[f"hooks of {label}"] = ("hooks", tensor_hooks(t))
        return out

    def guard_names(self) -> tuple[list[str], ...]:
        """Readable names for the entries of :meth:`guard` (for recompile reasons)."""
        return ([f"{self.labels[id(t)]}.requires_grad" for t in self.tensors],
                [f"{self.labels[id(t)]}.grad is None" for t in self.tensors],
                ["the reached tensors on one memory"])


def reach(fn: Callable, args: tuple, names: list[str] | None = None,
          kwargs: dict | None = None, hooks: list | tuple = ()) -> Reach:
    """Everything ``fn`` (a function, method, module, ``functools.partial`` or callable
    object) reaches by name before it runs (see the module docstring); objects among ``args``
    are named by ``names`` (default ``arg0``, ``arg1``, …), those among ``kwargs`` by their
    keys; ``hooks`` are the hooks of its tensor arguments (followed as functions it calls).

    Example:
        >>> found = reach(train_step, (x, y))
        >>> found.labels[id(model.fc1.weight)]
        'model.fc1.weight'
    """
    found = Reach()
    while (wrapped := wrapped_by_library(fn)) is not None:  # (followed as a plain call is)
        fn = wrapped
    bound = {}
    if isinstance(fn, functools.partial):
        found.add_partial(fn, "partial", 0)
        bound = {k: v for k, v in partial_arguments(fn).items() if not isinstance(v, Tensor)}
        fn = fn.func
    if isinstance(fn, Module):
        found.add("", fn)
        fn = fn.forward
    elif not isinstance(fn, types.FunctionType | types.MethodType) and hasattr(fn, "__dict__"):
        found.add("self", fn)  # a callable object: its attributes, then its __call__
        fn = fn.__call__
    named = [(names[i] if names else f"arg{i}", arg) for i, arg in enumerate(args)]
    objects = {name: arg for name, arg in named + list((kwargs or {}).items())
               if not isinstance(arg, Tensor)}  # (tensor arguments are inputs, not state)
    for name, arg in objects.items():  # (first: the function may assign their attributes,
        found.add(name, arg, 1)  # ``model.h = h``)
    found.add_function(fn, arguments={**bound, **objects})
    for hook in hooks:
        found.add("hook of an argument", hook)
    found.watch_states()
    return found


def _item(container: Any, key: Any) -> Any:
    """``container[key]`` for a dict, list or tuple (MISSING for a key it lacks, or for any
    other container: a tensor's or the user's ``__getitem__`` is not run)."""
    return bound_value(container, key) if isinstance(container, dict | list | tuple) \
        else MISSING
