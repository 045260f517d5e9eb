"""Branch functions as sub-graphs: what :func:`ember.cond` and :func:`ember.while_loop` hold.

A branch is traced on its own, with every other handler (an outer jit trace, vmap) set aside:
it runs once, for real, on aliases of its operands (new array objects over the same memory,
which it may not write into), and the ops it applies become a :class:`~ember.jit.ir.Graph`
whose inputs are the operands followed by the tensors it *captures* (closed over:
parameters, tensors made before the call), so that the higher-order equation holding it
names everything it reads and gradients reach captured tensors too.
A sub-graph runs on backend arrays (:func:`run_graph`, the kernels only) or on tensors
(:func:`call_graph`, through ``apply``: differentiable and seen by every transform).
"""

from __future__ import annotations

import itertools
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

from ember.autograd.engine import VJP_HOOK
from ember.autograd.grad_mode import no_grad
from ember.errors import OpError
from ember.func.pytree import tree_flatten
from ember.jit.discover import Reach, reach
from ember.jit.ir import Effect, Graph, Var
from ember.jit.outside_memory import note_write, written_outside
from ember.jit.tracer import TraceError, Tracer, _at, user_source
from ember.ops.primitive import DISPATCH, apply, pop_handler, push_handler
from ember.ops.random import default_generator
from ember.optim.optimizer import OPTIMIZER_TRACE
from ember.tensor import Tensor, _wrap, add_wrap_hook, remove_wrap_hook


class BranchTracer(Tracer):
    """A tracer for one branch: a tensor made outside the branch (one the branch function
    reaches by name, or any other not made while it runs) is a captured input."""

    def __init__(self, op: str, name: str, found: Reach) -> None:
        super().__init__(name, found)
        self.op = op
        self.captured: list[tuple[Tensor, Var]] = []

    def on_value_read(self, t: Tensor, what: str) -> None:
        if self.lookup(t._data) in self.dynamic:
            where = _at(user_source())
            raise TraceError(f"{self.op}: {self.graph.name} reads the values of a tensor "
                             f"(shape {tuple(t.shape)}) with {what}{where}; a branch is traced "
                             "once, for every value it may see, so Python cannot branch on "
                             "them. Hint: nest ember.cond or use ember.where inside it", where)

    def on_alias(self, alias: Tensor, x: Tensor) -> None:
        """An in-place op is about to write into ``x``: refused, before the write, when ``x``
        is (or views) an operand or a tensor from outside the branch, as PyTorch refuses
        mutating a higher-order op's inputs (the tensor stays as it was)."""
        var = self.var_of(x)
        root = self.view_root.get(var, var)
        self.keep_constants(x._data)  # (constants read from its memory keep their values)
        note_write(self.outside, x, self.mark)  # (memory from outside: see trace_branch)
        if root.kind != "input":
            return
        what = ("a tensor it captures" if any(root is v for _, v in self.captured)
                else "its operand")
        raise OpError(f"{self.op}: {self.graph.name} writes in place into {what} (shape "
                      f"{tuple(x.shape)}){_at(user_source())}; a branch may not change "
                      "tensors from outside it, as in PyTorch. Hint: return the new value "
                      "and assign it after the call")

    def add_state(self, t: Tensor, grad_of: Tensor | None = None) -> Var:
        var = self.new_var(t._data, "input")
        self.captured.append((t, var))
        self.dynamic.add(var)
        return var

    def var_of(self, t: Tensor) -> Var:
        if self.lookup(t._data) is None and id(t._data) not in self.fresh:
            return self.add_state(t)
        return super().var_of(t)


@contextmanager
def set_aside(tracer: BranchTracer | None = None) -> Iterator[None]:
    """Every handler (an outer trace, vmap), the backward hook and the optimizer's trace set
    aside: ops compute plain values, seen only by ``tracer`` when one is given."""
    saved = DISPATCH.stack, DISPATCH.handler, DISPATCH.casting, VJP_HOOK.around, \
        OPTIMIZER_TRACE.tracer
    DISPATCH.stack, DISPATCH.handler, DISPATCH.casting = [], None, False
    VJP_HOOK.around, OPTIMIZER_TRACE.tracer = None, tracer
    try:
        yield
    finally:
        DISPATCH.stack, DISPATCH.handler, DISPATCH.casting, VJP_HOOK.around, \
            OPTIMIZER_TRACE.tracer = saved


@contextmanager
def _alone(tracer: BranchTracer) -> Iterator[None]:
    """Only ``tracer`` sees the ops (an outer trace or vmap records the branch as one
    equation, later); the branch records no tape (its gradient is the equation's rule), and
    the default generator is put back after it (the op draws what the branch taken draws).
    Ambient handlers (autocast) stay active above the tracer, which records what they do."""
    generator = default_generator._state()  # (bookkeeping: no effect in the outer trace)
    ambient, casting = [h for h in DISPATCH.stack if h in DISPATCH.ambient], DISPATCH.casting
    with set_aside(tracer):
        push_handler(tracer)
        for handler in ambient:
            push_handler(handler, ambient=True)
        DISPATCH.casting = casting
        add_wrap_hook(tracer.see_new_tensor)
        tracer.thread = threading.get_ident()
        try:
            with no_grad():
                yield
        finally:
            remove_wrap_hook(tracer.see_new_tensor)
            for handler in reversed(ambient):
                pop_handler(handler)
            pop_handler(tracer)
            default_generator._restore(generator._data)


class Branch:
    """A traced branch: its graph (inputs: the operands, then ``captured``'s variables),
    the tensors it captured with their variables, and the structure of what it returned."""

    def __init__(self, graph: Graph, captured: list[tuple[Tensor, Var]], spec: Any,
                 operands: int) -> None:
        self.graph, self.captured, self.spec, self.operands = graph, captured, spec, operands


def trace_branch(op: str, role: str, fn: Callable, operands: list[Tensor],
                 user_fn: Callable | None = None) -> Branch:
    """Traces ``fn(*operands)`` into a sub-graph named ``role``; ``op`` names the control-flow
    op in errors; ``user_fn`` (default ``fn``) is the function whose closure, globals and
    defaults name the tensors it captures. Its results must be tensors that alias none of
    its inputs."""
    tracer = BranchTracer(op, role, reach(user_fn or fn, ()))
    with _alone(tracer):
        aliases = [_wrap(x._data.view(), x._device) for x in operands]
        in_vars = [tracer.add_input(a) for a in aliases]
        try:
            out = fn(*aliases)
        finally:
            rebound = tracer.carried.undo()
        if rebound:
            raise OpError(f"{op}: {role} rebinds {rebound[0]}, state of a module it calls (a "
                          "side effect outside the branch, which PyTorch refuses too); it is "
                          "left as it was. Hint: return the new value and assign it after "
                          "the call")
        tracer.carried.refuse_untracked(lambda t: tracer.lookup(t._data) in tracer.dynamic,
                                        f"{op}: {role}")
        leaves, spec = tree_flatten(out)
        for leaf in leaves:
            if not isinstance(leaf, Tensor):
                raise OpError(f"{op}: {role} must return tensors (or a tuple, list or dict "
                              f"of them), but returned a {type(leaf).__name__}")
        if not leaves:
            raise OpError(f"{op}: {role} returned no tensor; it must return at least one")
        out_vars = [tracer.var_of(t) for t in leaves]
    outside = written_outside(tracer)
    if outside is not None:
        raise OpError(f"{op}: {role} writes in place into {outside}; a branch may not change "
                      "memory from outside it (it is traced once), as in PyTorch. Hint: "
                      "return the new value and assign it after the call")
    graph = tracer.graph
    for i, var in enumerate(out_vars):
        if var.kind == "input" or tracer.view_root.get(var, var).kind == "input" or \
                out_vars.index(var) != i:
            raise OpError(f"{op}: output {i} of {role} aliases one of its inputs or another "
                          "output (it is an operand, a captured tensor or a view of one); "
                          "higher-order ops do not support aliasing, as in PyTorch. Hint: "
                          "return x.clone()")
    for eqn in graph.eqns:
        if isinstance(eqn.prim, Effect):
            raise OpError(f"{op}: {role} runs {eqn.prim.name}, an effect on Python objects, "
                          "which a branch cannot hold. Hint: step the optimizer outside")
    graph.inputs = in_vars + [var for _, var in tracer.captured]
    graph.outputs = out_vars
    return Branch(graph, tracer.captured, spec, len(in_vars))


def join_captures(branches: list[Branch]) -> list[Tensor]:
    """Every tensor the branches capture, once; each branch's graph then takes them all, in
    that order, after the operands (one it does not read is an unused input)."""
    union: list[Tensor] = []
    for b in branches:
        for t, _ in b.captured:
            if not any(t is u for u in union):
                union.append(t)
    for b in branches:
        ids = itertools.count(b.graph.unused_id())
        extra = []
        for t in union:
            var = next((v for u, v in b.captured if u is t), None)
            extra.append(var if var is not None else
                         Var(next(ids), tuple(t.shape), t.dtype, "input"))
        b.graph.inputs = b.graph.inputs[:b.operands] + extra
    return union


def run_graph(graph: Graph, xp: Any, arrays: tuple) -> list:
    """Runs a sub-graph's kernels on backend arrays; each output is a new array."""
    env: dict[Var, Any] = dict(zip(graph.inputs, arrays))
    env.update(graph.consts)
    for eqn in graph.eqns:
        out = eqn.prim.forward(xp, *(env[v] for v in eqn.inputs), **eqn.params)
        env.update(zip(eqn.outputs, out if eqn.prim.nout > 1 else (out,)))
    return [fresh(xp, env[v], v in graph.consts) for v in graph.outputs]


def fresh(xp: Any, array: Any, const: bool = False) -> Any:
    """``array`` if it owns its memory, else a copy: what a branch returns is never a
    constant of its graph or a view of one (which the caller could write into), nor a NumPy
    scalar; ``const`` says that ``array`` is one of the graph's constants."""
    array = xp.asarray(array)
    return array if array.base is None and not const else array.copy()


def call_graph(graph: Graph, tensors: tuple) -> list[Tensor]:
    """Runs a sub-graph with Ember ops on tensors (differentiable, and seen by transforms)."""
    device = tensors[0]._device if tensors else None
    env: dict[Var, Any] = dict(zip(graph.inputs, tensors))
    for var, array in graph.consts.items():
        env[var] = _wrap(array, device)
    for eqn in graph.eqns:
        out = apply(eqn.prim, *(env[v] for v in eqn.inputs), **eqn.params)
        env.update(zip(eqn.outputs, out if eqn.prim.nout > 1 else (out,)))
    return [env[v] for v in graph.outputs]

