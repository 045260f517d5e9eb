"""Code generation: a :class:`Graph` becomes one plain Python function over backend arrays.

Each equation is one line (``v7 = matmul(xp, v3, v4)``) ending in a comment with the user's
source line; the function is registered with :mod:`linecache`, so tracebacks and debuggers
show and step through it. Names in the code are the graph's variables; everything else it
uses (primitive kernels, constants, state tensors, params that have no literal form) is a
global of the generated module, listed in ``globals``.
"""

from __future__ import annotations

import builtins
import math
import re
from dataclasses import dataclass
from operator import is_
from typing import Any

from ember.dtypes import DType
from ember.jit.control.branch import fresh
from ember.jit.ir import Effect, Eqn, Graph, Var, sub_graphs
from ember.jit.kernels import KERNEL_GLOBALS, Kernel, may_share
from ember.jit.passes.hoist import cached_state
from ember.jit.reached_values import is_plain
from ember.tensor import _wrap
from ember.utils.generated_code import define


@dataclass
class Generated:
    """The generated function, its source text and the globals it runs with."""

    fn: Any
    code: str
    globals: dict[str, Any]


class _Namer:
    """Globals of the generated module, each under a readable, unique name."""

    def __init__(self) -> None:
        self.globals: dict[str, Any] = {}
        self.by_id: dict[int, str] = {}

    def name(self, value: Any, hint: str, key: Any = None) -> str:
        """A global holding ``value``; the same ``key`` object (default: the value) always
        gets the same name."""
        known = self.by_id.get(id(key if key is not None else value))
        if known is not None:
            return known
        base = "".join(c if c.isalnum() else "_" for c in hint) or "k"
        if base[0].isdigit():
            base = f"_{base}"
        name, n = base, 1
        while name in self.globals:
            n += 1
            name = f"{base}_{n}"
        self.globals[name] = value
        self.by_id[id(key if key is not None else value)] = name
        return name

    def literal(self, value: Any, hint: str | None = None) -> str:
        """Source text for a param: a literal when it has one, else a global's name (``hint``,
        the param's name, by default its type's)."""
        if value is None or isinstance(value, bool | int | str):
            return repr(value)
        if isinstance(value, float):
            return repr(value) if math.isfinite(value) else self.name(value, "k")
        if isinstance(value, tuple | list) and all(map(is_plain, value)):
            text = ", ".join(self.literal(v) for v in value)
            return f"({text},)" if isinstance(value, tuple) and len(value) == 1 else (
                f"({text})" if isinstance(value, tuple) else f"[{text}]")
        if isinstance(value, DType):
            return self.name(value, value.name)
        hint = hint or type(value).__name__.lower()
        return self.name(value, f"{hint}_" if hasattr(builtins, hint) else hint)  # (not tuple)


def _kernel_name(eqn: Eqn, namer: _Namer) -> str:
    prim = eqn.prim
    if isinstance(prim, Effect):
        return namer.name(prim.run, prim.name)
    if isinstance(prim, Kernel):  # defined in the generated module itself, from its source
        return namer.name(prim, prim.name)
    return namer.name(prim.forward, prim.name, key=prim)


def emit_eqn(eqn: Eqn, namer: _Namer) -> str:
    """One line of code for one equation (without its source comment)."""
    outs = ", ".join(v.name for v in eqn.outputs) or "_"
    if len(eqn.outputs) == 1 and isinstance(eqn.prim, Effect):
        outs += ","
    fn = _kernel_name(eqn, namer)
    args = [v.name for v in eqn.inputs]
    if isinstance(eqn.prim, Effect):
        return f"{outs} = {fn}({', '.join(args)})"
    args = ["xp", *args, *(f"{k}={namer.literal(v, k)}" for k, v in eqn.params.items())]
    if eqn.out is not None:
        args.append(f"out={eqn.out.name}")
    call = f"{fn}({', '.join(args)})"
    if len(eqn.outputs) == 1 and not eqn.outputs[0].shape:
        call = f"asarray({call})"  # a 0-d result may come back as a NumPy scalar
    return f"{outs} = {call}"


def _comment(eqn: Eqn) -> str:
    src = eqn.source
    if src is None:
        return ""
    text = f"  `{src.text}`" if src.text else ""
    return f"  # {src}{text}"


def generate(graph: Graph, xp: Any, device: Any, frees: dict[int, list] | None = None) -> \
        Generated:
    """Python source for ``graph`` and the compiled function; ``frees`` maps an equation's
    index to the variables whose last use it is (``del``-ed after it, so memory is freed as
    early as eager frees it)."""
    namer = _Namer()
    namer.globals.update(xp=xp, asarray=xp.asarray, _store=_store, _grad=_grad_of,
                         _device=device, _fresh=fresh, **KERNEL_GLOBALS)
    defs: list[str] = []  # the functions of sub-graphs (a cond's branches), in the module
    args = ", ".join(v.name for v in graph.inputs)
    function = _identifier(graph.name)
    while function in namer.globals or VAR_NAME.fullmatch(function):  # (a user's xp or c1)
        function = f"f_{function}"
    namer.globals[function] = None  # (its own name: no kernel or state takes it)
    lines = [f"def {function}({args}):"]
    kernels: list[Kernel] = []
    for ref in graph.state:
        holder = namer.name(ref.tensor, ref.label)
        read = f"{holder}.grad._data" if ref.grad else f"{holder}._data"
        lines.append(f"    {ref.var.name} = {read}  # state {ref.label}"
                     f"{'.grad' if ref.grad else ''}")
    # the .grad tensors written in place at the end, as they are when the call starts (an
    # optimizer effect binds others to .grad while the code runs)
    kept = {id(t): f"_grad{i}" for i, t in enumerate(graph.grads_in_place)}
    for t in graph.grads_in_place:
        lines.append(f"    {kept[id(t)]} = {namer.name(t, graph.label(t))}.grad")
    for var, array in graph.consts.items():
        namer.globals[var.name] = array
    if graph.hoisted:
        cache = namer.name(HoistCache(), "_cached")
        read = cached_state(graph)
        stamps = "".join(f"{namer.name(ref.tensor, ref.label)}._vc.stamp(), "
                         for ref in graph.state if ref.var in read)
        arrays = "".join(f"{v.name}, " for v in read)
        lines.append(f"    _state = ({arrays}), ({stamps})")
        lines.append(f"    _hoisted = {cache}.get(*_state)")
        lines.append("    if _hoisted is None:  # state changed?")
    for i, eqn in enumerate(graph.eqns):
        pad = "        " if i < graph.hoisted else "    "
        lines.extend(_eqn_lines(eqn, namer, defs, pad))
        if isinstance(eqn.prim, Kernel):
            kernels.append(eqn.prim)
        dead = (frees or {}).get(i)
        if dead:
            lines.append(f"{pad}del {', '.join(v.name for v in dead)}")
        if graph.hoisted and i == graph.hoisted - 1:
            values = ", ".join(v.name for v in graph.cached)
            lines.append(f"        _hoisted = {cache}.put(*_state, ({values},))")
            lines.append(f"    {values}, = _hoisted")
    copies, writes = ordered_writes(graph)
    for var in copies:
        lines.append(f"    {var.name} = xp.array({var.name}, copy=True)  # (written before read)")
    for tensor, var in writes:
        lines.append(f"    _store({namer.name(tensor, graph.label(tensor))}, {var.name})")
    # arrays the world already sees (a returned gradient is that .grad: eager returns it)
    handed = {v for _, v in graph.writes}
    for tensor, var in graph.grads:
        holder = namer.name(tensor, graph.label(tensor))
        if id(tensor) in kept:
            lines.append(f"    {holder}.grad = {kept[id(tensor)]}")
            lines.append(f"    _store({kept[id(tensor)]}, {var.name})")
            continue
        # a constant, state or input array, or one another .grad holds: its own copy, as eager
        # never lets two .grad (or a .grad and anything else) share memory
        shared = var is not None and (var.kind != "eqn" or var in handed)
        value = "None" if var is None else \
            f"_grad({var.name}, _device{', copy=True' if shared else ''})"
        handed.add(var)
        lines.append(f"    {holder}.grad = {value}")
    # the return values, then the new values and .grads of written arguments (the caller
    # stores them: the code sees arrays, not the argument tensors)
    ends = [*graph.outputs, *(v for _, v in graph.arg_writes), *(v for _, v in graph.arg_grads)]
    # (a constant's array is the graph's own: each call hands out a copy the caller may write)
    outs = ", ".join("None" if v is None else f"xp.array({v.name}, copy=True)"
                     if v.kind == "const" else v.name for v in ends)
    lines.append(f"    return ({outs}{',' if len(ends) == 1 else ''})")
    kernel_code = "".join(_kernel_source(k, namer) + "\n\n" for k in kernels)
    code = kernel_code + "".join(d + "\n\n" for d in defs) + "\n".join(lines) + "\n"
    fn = define(code, f"ember.jit {graph.name}", function, namer.globals)
    return Generated(fn, code, namer.globals)


def _eqn_lines(eqn: Eqn, namer: _Namer, defs: list[str], pad: str) -> list[str]:
    """An equation's lines of code, indented by ``pad``, the first with its source comment
    (several for a ``cond`` or ``while_loop``, whose sub-graphs' functions go to ``defs``)."""
    lines = _emit_control(eqn, namer, defs) if sub_graphs(eqn) else [emit_eqn(eqn, namer)]
    return [f"{pad}{lines[0]}{_comment(eqn)}", *(f"{pad}{line}" for line in lines[1:])]


def _emit_control(eqn: Eqn, namer: _Namer, defs: list[str]) -> list[str]:
    """The lines of a higher-order equation (``if``/``else``, ``while``), from its primitive's
    ``emit(eqn, function)``; ``function(graph, role)`` names a sub-graph's function, defined
    once in the module (its source added to ``defs``)."""
    named: list[tuple[Graph, str]] = []  # (all of this equation's functions are named first)

    def function(graph: Graph, role: str) -> str:
        known = namer.by_id.get(id(graph))
        if known is not None:
            return known
        name = namer.name(graph, f"{eqn.prim.name}_{role}")
        named.append((graph, name))
        return name

    lines = eqn.prim.emit(eqn, function)
    for graph, name in named:
        defs.append(_sub_function(graph, name, namer, defs))
    return lines


def _sub_function(graph: Graph, name: str, namer: _Namer, defs: list[str]) -> str:
    """A sub-graph as a function of its inputs returning a tuple of new arrays."""
    lines = [f"def {name}({', '.join(v.name for v in graph.inputs)}):"]
    for var, array in graph.consts.items():
        lines.append(f"    {var.name} = {namer.name(array, f'{name}_{var.name}')}")
    for eqn in graph.eqns:
        lines.extend(_eqn_lines(eqn, namer, defs, "    "))
    outs = ", ".join(f"_fresh(xp, {v.name}{', True' if v in graph.consts else ''})"
                     for v in graph.outputs)
    lines.append(f"    return ({outs},)")
    return "\n".join(lines)


class HoistCache:
    """The values of a graph's hoisted equations, with the state they were computed from (its
    arrays, by identity, and their version stamps), held as one tuple that a call replaces
    whole: threads calling at once each see a matching key and values."""

    def __init__(self) -> None:
        self.held: tuple = (None, None, None)  # (nothing computed yet: even from no state)

    def get(self, arrays: tuple, stamps: tuple) -> tuple | None:
        """The cached values if they were computed from these arrays at these stamps."""
        held_arrays, held_stamps, values = self.held
        if stamps == held_stamps and len(arrays) == len(held_arrays) and all(
                map(is_, arrays, held_arrays)):
            return values
        return None

    def put(self, arrays: tuple, stamps: tuple, values: tuple) -> tuple:
        """Keeps ``values``, computed from ``arrays`` at ``stamps``; returns them."""
        self.held = (arrays, stamps, values)
        return values


def _kernel_source(kernel: Kernel, namer: _Namer) -> str:
    """A kernel's function, under its global's name in the generated module."""
    name = namer.name(kernel, kernel.name)
    return kernel.source.replace(f"def {kernel.name}(", f"def {name}(", 1)


VAR_NAME = re.compile(r"[cv]\d+")  # a variable's name in the code (see ir.Var.name)


def _identifier(name: str) -> str:
    text = "".join(c if c.isalnum() or c == "_" else "_" for c in name)
    return text if text and not text[0].isdigit() else f"f_{text}"


def ordered_writes(graph: Graph) -> tuple[list[Var], list[tuple[Any, Var]]]:
    """The graph's state writes as one parallel assignment, as Python's rebinding is
    (``self.prev = self.h; self.h = new``; ``self.a, self.b = self.b, self.a``): the values
    to copy first (those of a cycle of writes, each reading memory another overwrites, and
    the values the call hands out that may share memory a write overwrites: a delay line's
    ``out = self.buf; self.buf = x``), and the writes in an order where each runs before any
    write into memory its value may share.

    Example:
        >>> copies, writes = ordered_writes(graph)  # ([], [(prev, v1), (h, v2)])
    """
    pending = list(graph.writes)
    state = {ref.var: {i} for i, (t, _) in enumerate(pending) for ref in graph.state
             if ref.tensor is t and not ref.grad}
    # (a .grad written in place after the writes, `W.grad <- v9 (in place)`: no write to
    # order, but a value handed out must not share its memory: `y.copy_(W.grad)`, returned)
    stored = len(pending)
    state.update((ref.var, {stored}) for ref in graph.state
                 if ref.grad and any(t is ref.tensor for t in graph.grads_in_place))
    # (an effect's outputs are the arrays it wrote in place: the memory of its inputs at
    # their positions, so a value made from one, `b.copy_(w[:, 0])` after the step, is
    # stored before w's own new value)
    shared = may_share(graph.eqns, state, effects=True)
    grads = {v for _, v in graph.grads}
    ends = [*graph.outputs, *(v for _, v in graph.arg_writes),
            *(v for _, v in graph.arg_grads), *grads]
    copies = list(dict.fromkeys(v for v in ends if v is not None and shared.get(v, set()) - (
        {stored} if v in grads else set())))
    reads = {i: set() if v in copies else shared.get(v, set()) - {i}
             for i, (_, v) in enumerate(pending)}
    order: list[int] = []
    while len(order) < len(pending):
        left = [i for i in reads if i not in order]
        ready = [j for j in left if not any(j in reads[i] for i in left)]
        if not ready:  # a cycle: one write's value is copied, so it reads no memory
            i = next(i for i in left if reads[i] & set(left))
            copies.append(pending[i][1])
            reads[i] = set()
        order.extend(ready)
    return copies, [pending[i] for i in order]


def _store(tensor: Any, value: Any) -> None:
    """A state tensor's new value, written into its memory (views of it see the change)."""
    if tensor._data is not value:
        tensor._data[...] = value
        tensor._vc.value += 1


def _grad_of(array: Any, device: Any, copy: bool = False) -> Any:
    return _wrap(array.copy() if copy else array, device)
