"""The static graph: an SSA list of equations over variables that carry shape and dtype.

A :class:`Graph` has tensor ``inputs`` (the compiled function's tensor arguments), ``state``
(tensors the function reads from outside — parameters, buffers, gradients — fetched fresh at
every call), ``consts`` (values fixed at trace time), ``eqns`` (each one primitive applied to
variables, with its params and the user's source line) and ``outputs``. What the function
does to the world besides returning values is explicit: ``writes`` (a state tensor's new value
at the end), ``grads`` (what each parameter's ``.grad`` holds at the end) and effect equations
(an optimizer step), which no pass removes or reorders.

Example:
    >>> fast = ember.jit.compile(lambda x: (x * 2).relu())
    >>> fast(ember.ones(3))
    tensor([2., 2., 2.])
    >>> print(fast.graph)                            # doctest: +SKIP
    graph <lambda>(v0: f32[3]) {
      c1: f32[] = const
      v3: f32[3] = fused_mul_relu(v0, c1)            # <stdin>:1
      return v3
    }
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any

from ember.dtypes import DType

_SHORT = {"float32": "f32", "float64": "f64", "float16": "f16", "bfloat16": "bf16",
          "int64": "i64", "int32": "i32", "int16": "i16", "int8": "i8", "uint8": "u8",
          "bool": "bool"}


def type_str(dtype: DType, shape: tuple, sep: str = ", ") -> str:
    """A value's dtype and shape as graphs print them.

    Example:
        >>> type_str(ember.float32, (2, 3))
        'f32[2, 3]'
    """
    dims = sep.join(str(d) for d in shape)
    return f"{_SHORT.get(dtype.name, dtype.name)}[{dims}]"


class Var:
    """One SSA value: made once (by an equation, or as an input, state or constant).

    ``kind`` is ``"input"``, ``"state"``, ``"const"`` or ``"eqn"``.
    """

    __slots__ = ("id", "shape", "dtype", "kind")

    def __init__(self, id: int, shape: tuple[int, ...], dtype: DType, kind: str) -> None:
        self.id, self.shape, self.dtype, self.kind = id, tuple(shape), dtype, kind

    @property
    def name(self) -> str:
        return f"{'c' if self.kind == 'const' else 'v'}{self.id}"

    @property
    def nbytes(self) -> int:
        """The size of its array in bytes."""
        return math.prod(self.shape) * self.dtype.itemsize

    @property
    def type_str(self) -> str:
        return type_str(self.dtype, self.shape, ",")

    def __repr__(self) -> str:
        return f"{self.name}: {self.type_str}"


@dataclass(eq=False)
class Source:
    """Where an equation came from in the user's code (``what`` says e.g. "backward of"), and
    the path of the module whose call made it (``scope``: ``"encoder.0"``; set while
    ``SCOPE.path`` is, as ONNX export does)."""

    file: str
    line: int
    text: str = ""
    what: str = ""
    scope: str = ""

    def __str__(self) -> str:
        short = self.file.rsplit("/", 1)[-1]
        return f"{self.what}{short}:{self.line}"


class Effect:
    """An equation kind with an effect outside the graph (an optimizer step): passes keep it,
    in order, and never merge or fold it. ``run(*arrays)`` returns its output arrays.

    An effect on ``items`` independent items (an elementwise optimizer's parameters), whose
    input and output ``j`` belong to item ``j % items``, may be split (see
    :mod:`ember.jit.passes.early_update`) when it has ``split = (part, writes)``:
    ``part(ks, first)`` is the ``run`` of the items ``ks`` alone (``first``: the first part
    to run, which checks all items first), and ``writes(k)`` the arrays item ``k`` writes.
    """

    pure = False

    def __init__(self, name: str, run: Any, items: int = 0, split: Any = None) -> None:
        self.name, self.run, self.items, self.split = name, run, items, split

    def __repr__(self) -> str:
        return f"<effect {self.name}>"


@dataclass(eq=False)
class Eqn:
    """``outputs = prim(*inputs, **params)``; ``source`` is the user's line that made it;
    ``out``, set by memory planning, names the dead variable whose buffer it writes into."""

    prim: Any
    inputs: list[Var]
    params: dict[str, Any]
    outputs: list[Var]
    source: Source | None = None
    out: Var | None = None

    def __str__(self) -> str:
        outs = ", ".join(repr(v) for v in self.outputs) or "_"
        args = [v.name for v in self.inputs]
        args += [f"{k}={_short_param(v)}" for k, v in self.params.items()
                 if not _holds_graphs(v)]
        if self.out is not None:
            args.append(f"out={self.out.name}")
        where = f"  # {self.source}" if self.source is not None else ""
        return f"{outs} = {self.prim.name}({', '.join(args)}){where}"


def sub_graphs(eqn: Eqn) -> tuple[Graph, ...]:
    """The sub-graphs a higher-order equation (``cond``, ``while_loop``) holds in its params:
    a graph, or a tuple of graphs; none for a plain equation."""
    found: list[Graph] = []
    for value in eqn.params.values():
        if _holds_graphs(value):
            found.extend(value if isinstance(value, tuple) else (value,))
    return tuple(found)


def _holds_graphs(value: Any) -> bool:
    return isinstance(value, Graph) or (isinstance(value, tuple) and bool(value) and
                                        all(isinstance(v, Graph) for v in value))


def _short_param(value: Any) -> str:
    text = repr(value) if not isinstance(value, DType) else value.name
    return text if len(text) <= 40 else text[:37] + "..."


@dataclass(eq=False)
class StateRef:
    """A tensor the graph reads from outside at each call: ``tensor._data``, or with ``grad``
    ``tensor.grad._data``; ``label`` names it (``fc1.weight``) in printed graphs."""

    var: Var
    tensor: Any
    label: str
    grad: bool = False


@dataclass(eq=False)
class Graph:
    """A traced function as a static graph (see the module docstring)."""

    name: str
    inputs: list[Var] = field(default_factory=list)
    state: list[StateRef] = field(default_factory=list)
    consts: dict[Var, Any] = field(default_factory=dict)  # var -> backend array
    eqns: list[Eqn] = field(default_factory=list)
    outputs: list[Var | None] = field(default_factory=list)
    writes: list[tuple[Any, Var]] = field(default_factory=list)  # (state tensor, new value)
    grads: list[tuple[Any, Var | None]] = field(default_factory=list)  # (param, its .grad)
    # the tensors among `grads` whose .grad is at the end the tensor it was when the call
    # started (zero_grad(set_to_none=False), clipping, an optimizer step): the value is written
    # into that tensor, as eager writes into it in place
    grads_in_place: list[Any] = field(default_factory=list)
    # what the function does to its tensor arguments: (argument index, new value / new .grad)
    arg_writes: list[tuple[int, Var]] = field(default_factory=list)
    arg_grads: list[tuple[int, Var | None]] = field(default_factory=list)
    arg_grads_in_place: list[int] = field(default_factory=list)  # (as grads_in_place)
    # the first `hoisted` equations read only state and constants: cached between calls,
    # their values `cached` read by the rest (see ember.jit.passes.hoist)
    hoisted: int = 0
    cached: list[Var] = field(default_factory=list)
    # for each optimizer step split by the early-update pass, what its parts write: a call
    # whose arguments share that memory runs eagerly (a part would change what they read)
    split_writes: list[tuple[int, Any]] = field(default_factory=list)  # (items, writes)

    def unused_id(self) -> int:
        """The number after every variable's: where a pass numbers the variables it adds."""
        made = [v for e in self.eqns for v in e.outputs]
        known = [*self.inputs, *(ref.var for ref in self.state), *self.consts, *made]
        return 1 + max((v.id for v in known), default=-1)

    def live_roots(self) -> set[Var]:
        """The variables the world sees after a call: outputs, writes, grads."""
        roots = {v for v in self.outputs if v is not None}
        roots.update(v for _, v in self.writes)
        roots.update(v for _, v in self.grads if v is not None)
        roots.update(v for _, v in self.arg_writes)
        roots.update(v for _, v in self.arg_grads if v is not None)
        roots.update(self.cached)  # (kept by the cache between calls)
        return roots

    def uses(self) -> dict[Var, int]:
        """How many times each variable is read (by equations and by the graph's ends)."""
        counts: dict[Var, int] = {}
        for eqn in self.eqns:
            for v in eqn.inputs:
                counts[v] = counts.get(v, 0) + 1
        for v in self.live_roots():
            counts[v] = counts.get(v, 0) + 1
        return counts

    def __str__(self) -> str:
        args = ", ".join(repr(v) for v in self.inputs)
        lines = [f"graph {self.name}({args}) {{"]
        for ref in self.state:
            lines.append(f"  {ref.var!r} = state {ref.label}{'.grad' if ref.grad else ''}")
        for var in self.consts:
            lines.append(f"  {var!r} = const")
        for eqn in self.eqns:
            lines.append(f"  {eqn}")
            for sub in sub_graphs(eqn):  # a branch or loop body, indented under its equation
                lines.extend(f"    {line}" for line in str(sub).splitlines())
        for tensor, var in self.writes:
            lines.append(f"  {self.label(tensor)} <- {var.name}")
        for tensor, var in self.grads:
            kept = " (in place)" if any(t is tensor for t in self.grads_in_place) else ""
            lines.append(f"  {self.label(tensor)}.grad <- {var.name if var else None}{kept}")
        for i, var in self.arg_writes:
            lines.append(f"  argument {i} <- {var.name}")
        for i, var in self.arg_grads:
            kept = " (in place)" if i in self.arg_grads_in_place else ""
            lines.append(f"  argument {i}.grad <- {var.name if var else None}{kept}")
        outs = ", ".join(v.name if v is not None else "None" for v in self.outputs)
        lines.append(f"  return {outs}")
        lines.append("}")
        return "\n".join(lines)

    def label(self, tensor: Any) -> str:
        """The name of a state tensor in printed graphs."""
        for ref in self.state:
            if ref.tensor is tensor:
                return ref.label
        return f"<tensor {tuple(tensor.shape)}>"
