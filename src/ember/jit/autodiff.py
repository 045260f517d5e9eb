"""Compiled calls that stay differentiable: ``fast = ember.jit.compile(model)`` used inside an
eager training loop (``F.cross_entropy(fast(x), y).backward()``).

While tracing such a call, the tracer also runs the backward pass of its outputs (``autograd.
grad`` with cotangent inputs), so the graph holds forward and backward. :func:`split` cuts it
in two graphs — the forward returns the outputs plus the values the backward reads, the
backward maps those values and the cotangents to gradients — and :class:`CompiledCall` runs
them as one autograd node: the forward when called, the backward when ``backward()`` reaches
it, gradients flowing on to the parameters and inputs as eager's would.

As eager's tape, the node checks the version of everything its backward reads (arguments,
parameters, and the outputs and buffers a saved value shares memory with), keeps its saved
values until it is released (so ``retain_graph=True`` works), and refuses a second derivative
clearly. Outputs that alias (views of one another or of an argument, an argument returned, a
``detach()``) are not outputs of the node: they are made after it from its *roots*, as eager
made them (see :class:`Joint`), so in-place writes through them move histories as eager's
do. The tracing call returns its outputs through the same kind of node
(:class:`TracedCall`, over the trace's own eager graph), so every call behaves alike.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

from ember.autograd.engine import grad as autograd_grad
from ember.autograd.function import Function, _OnceDifferentiable
from ember.autograd.grad_mode import GRAD, enable_grad, no_grad
from ember.autograd.graph import Node
from ember.errors import GradError
from ember.jit.ir import Effect, Graph, Var
from ember.jit.kernels import owner
from ember.jit.sources import TraceError, _at
from ember.jit.tracer import Tracer
from ember.ops.creation import ones_like, zeros
from ember.ops.primitive import replay_view
from ember.tensor import Tensor, _wrap


@dataclass
class Joint:
    """What the traced backward added, and how a call's outputs are made.

    The node's own outputs (``roots``) are the outputs that alias nothing the caller has,
    plus the bases of returned views that the function does not return (hidden roots); every
    other tensor output is made after the node, from a root, an argument or a state tensor,
    as eager made it: the same tensor, its ``detach()``, or a view of it (``make``). So an
    in-place write through a returned view, or into the tensor it views, moves histories and
    version counters exactly as in eager code.

    ``cotangents``: one input of the backward graph per root with a gradient
    (``differentiable``: their positions among the roots); what is differentiated: tensor
    arguments (by position, ``input_slots``) that require grad, then ``params`` (the state
    tensors that do: parameters, and tensors with a history that the function captured); one
    gradient variable each in ``grads`` (None where unused)."""

    cotangents: list[Var]
    differentiable: list[int]  # positions (among the roots) of those with a gradient
    input_slots: list[int]  # positions (among tensor arguments) of those that require grad
    params: list[Tensor]
    grads: list[Var | None]
    roots: list[int]  # positions (among the returned values) of the node's outputs
    make: list[tuple]  # per tensor output: (source, where, steps), see _Plan
    buffers: list[Tensor] | None = None  # the other state tensors (found at the first call)
    graded: list[Tensor] | None = None  # the state tensors whose .grad the graph reads (too)
    grad_roots: frozenset[int] = frozenset()  # roots that views of a .grad are made from
    consts: dict[int, None] | None = None  # the memory of the graph's constants, by id


class _Plan:
    """How each tensor output relates to what the caller has, from the values a trace
    returned: ``make`` holds ``(source, where, steps)`` per tensor output — source ``"out"``
    (``where``: a root's position among the roots), ``"input"`` (a tensor argument's
    position), ``"state"`` (the tensor itself) or ``"same"`` (an earlier tensor output: the
    same tensor again) — and the steps applied to it in order, ``("detach",)`` or ``("view",
    chain)``. ``returned``: the outputs, then the hidden roots (see :class:`Joint`)."""

    def __init__(self, inputs: list[Tensor], state: list[Tensor], outputs: list,
                 viewed: Callable[[Tensor], tuple | None] = lambda t: None) -> None:
        self.inputs, self.state, self.viewed = inputs, state, viewed
        self.outputs, self.returned = outputs, list(outputs)
        self.roots: list[int] = []
        tensors = [i for i, t in enumerate(outputs) if isinstance(t, Tensor)]
        made: dict[int, tuple] = {}
        # (outputs that need grad first: a detached alias among the others then finds them)
        for i in sorted(tensors, key=lambda i: not outputs[i].requires_grad):
            first = next(j for j in tensors if outputs[j] is outputs[i])
            made[i] = ("same", tensors.index(first), ()) if first != i else \
                self.resolve(outputs[i])
        self.make = [made[i] for i in tensors]

    def resolve(self, t: Tensor) -> tuple:
        for k, x in enumerate(self.inputs):
            if x is t:
                return ("input", k, ())
        for s in self.state:
            if s is t:
                return ("state", s, ())
        for r, p in enumerate(self.roots):
            if self.returned[p] is t:
                return ("out", r, ())
        info = t._view
        if info is not None and info.base is not t:
            return self.view_of(info.base, info.chain)
        if not t.requires_grad:  # detach() or .data of a tensor: its memory and counter
            for x in [*self.inputs, *self.state, *(self.returned[p] for p in self.roots)]:
                if t._vc.source is x._vc.source and x._data is t._data and x is not t:
                    source, where, steps = self.resolve(x)
                    return (source, where, (*steps, _alias_step(x, t)))
            seen = self.viewed(t)  # (of a view: ``y[1:].detach()`` keeps no view record)
            if seen is not None:
                roots, returned = len(self.roots), len(self.returned)
                source, where, steps = self.view_of(*seen)
                if len(self.roots) == roots or any(x is seen[0] for x in self.outputs):
                    return (source, where, (*steps, _alias_step(seen[0], t)))
                # (a base the caller cannot reach: no memory to share, t is a value of its
                # own, as a gradient the engine made from a view's array)
                del self.roots[roots:], self.returned[returned:]
        if not any(x is t for x in self.returned):
            self.returned.append(t)  # the base of returned views: the node returns it too
        position = next(p for p, x in enumerate(self.returned) if x is t)
        self.roots.append(position)
        return ("out", len(self.roots) - 1, ())

    def view_of(self, base: Tensor, chain: tuple) -> tuple:
        """How the view ``chain`` of ``base`` is made: from the argument that is the longest
        prefix of that chain (an argument that is itself a view of the caller's tensor), else
        from what makes ``base``."""
        for k, x in sorted(enumerate(self.inputs), key=lambda kx: -_chain_length(kx[1])):
            prefix = () if x._view is None else x._view.chain
            if x._view is not None and x._view.base is base and \
                    _same(chain[:len(prefix)], prefix):
                return ("input", k, (("view", chain[len(prefix):]),))
        source, where, steps = self.resolve(base)
        return (source, where, (*steps, ("view", chain)))


def _chain_length(t: Tensor) -> int:
    return 0 if t._view is None else len(t._view.chain)


def _same(a: tuple, b: tuple) -> bool:
    try:
        return len(a) == len(b) and all(pa is pb and qa == qb for (pa, qa), (pb, qb) in zip(a, b))
    except (TypeError, ValueError):  # (a param without a plain equality)
        return False


def plan_outputs(tracer: Tracer, inputs: list[Tensor], outputs: list) -> _Plan:
    """How a call's tensor outputs are made from what the caller has (see :class:`_Plan`): a
    state tensor the function rebound (``out = self.buf; self.buf = x``) is a value the graph
    returns, not the tensor, which then holds the new value."""
    rebound = set(map(id, tracer.carried.rebound()))
    state = {id(t): t for t in [ref.tensor for ref in tracer.graph.state if not ref.grad] +
             [t for _, t in tracer.known.values()]  # (also what it reached but never read)
             if id(t) not in rebound}
    return _Plan(inputs, list(state.values()), outputs, tracer.viewed_as)


def differentiable(tracer: Tracer, inputs: list[Tensor], outputs: list) -> bool:
    """Whether the traced call is differentiable (one autograd node, see
    :func:`trace_backward`): an output requires grad, and it is no training step. A call that
    ran a backward is one (its outputs need no grad: see :func:`as_later_calls`) where that
    backward set a ``.grad`` or an optimizer step ran, or where every output that requires
    grad has a graph a backward freed (see :func:`_spent`). A call whose backwards only
    returned gradients (``autograd.grad(loss, params, create_graph=True)``: a gradient
    penalty; or ``retain_graph=True``) is not: the gradient of its outputs goes on through
    their graph (the recorded backward, under ``create_graph``), as in eager code."""
    wanted = [x for x in outputs if isinstance(x, Tensor) and x.requires_grad]
    if not tracer.ran_backward or not wanted:
        return bool(wanted)
    entry, state = tracer.entry_grads, [ref.tensor for ref in tracer.graph.state]
    stops = {id(t._node) for t in [*inputs, *state] if t.requires_grad}
    if tracer.stepped or tracer.binds_grads or tracer.grad_inputs or \
            any(ref.grad for ref in tracer.graph.state) or \
            any(t._grad is not g for t, g in zip(tracer.inputs, tracer.input_grads)) or any(
            t._grad is not entry.get(id(t), t._grad)
            for t in state + [t for _, t in tracer.known.values()]):  # (a .grad set or read)
        _refuse_grad_history(tracer, inputs, wanted, stops)
        return False
    return not all(_spent(x, stops) for x in wanted)


def _refuse_grad_history(tracer: Tracer, inputs: list[Tensor], wanted: list[Tensor],
                         stops: set[int]) -> None:
    """A training step (it sets ``.grad``) returns its values without history; one made from
    a ``.grad`` that ``backward(create_graph=True)`` gave a history (a gradient-norm penalty)
    needs it to differentiate as in eager code, so it is refused rather than returned
    detached (a loss outside adding it would silently lose its gradient)."""
    holders = [*((t, f"argument {i}") for i, t in enumerate(inputs)),
               *((t, None) for t in [*(ref.tensor for ref in tracer.graph.state),
                                     *(t for _, t in tracer.known.values())])]
    grads = {id(t._grad._node): (t, label) for t, label in holders
             if t._grad is not None and t._grad._node is not None}
    if not grads:  # (a training step returning its loss: no .grad has a history)
        return
    for x in wanted:
        hit = next((grads[n] for n in _history(x, stops) if n in grads), None)
        if hit is not None:
            label = hit[1] or _reached_name(tracer, hit[0])
            raise TraceError(
                f"ember.jit: {tracer.graph.name} returns a value made from the .grad of {label}"
                ", which backward(create_graph=True) inside gave a history: a compiled step "
                "that sets .grad returns its values without history, so a loss outside would "
                "lose this one's gradient. Hint: compute the gradient with `g, = ember.autograd"
                ".grad(loss, w, create_graph=True)` inside instead (what the call returns from "
                "it stays differentiable), return `.detach()` of a value only logged, or run "
                "the function under `with ember.jit.disable():`")



def _reached_name(tracer: Tracer, t: Tensor) -> str:
    """The label of a tensor the function reached; for one it made (a leaf that requires
    grad, labelled ``captured0``), its shape and the user's line that first used it."""
    if tracer.fresh.get(id(t._data)) is not t._data:
        return tracer.labels.get(id(t), "a tensor")
    var = next((ref.var for ref in tracer.graph.state if ref.tensor is t and not ref.grad), None)
    src = next((e.source for e in tracer.graph.eqns if var in e.inputs), None)
    return f"a tensor (shape {tuple(t.shape)}) made inside the function and first used{_at(src)}"

def as_later_calls(plan: _Plan, outputs: list) -> list:
    """The tracing call's outputs as a later call of a graph that ran its backward inside
    makes them: an output made from the graph's own values (a loss) needs no grad there, so
    it is detached here too; arguments, state and their views stay what they are."""
    made: list[Tensor] = []
    it = iter(plan.make)
    for x in outputs:
        if isinstance(x, Tensor):
            source, where, _ = next(it)
            made.append(made[where] if source == "same" else
                        x.detach() if source == "out" and x.requires_grad else x)
    it = iter(made)
    return [next(it) if isinstance(x, Tensor) else x for x in outputs]


def trace_backward(tracer: Tracer, inputs: list[Tensor], outputs: list) -> \
        tuple[Joint, list]:
    """Runs, under ``tracer``, the backward of the roots that require grad with respect to
    the tensor arguments and parameters that do. Returns the joint and the values the graph
    must return: the outputs, then the hidden roots."""
    plan = plan_outputs(tracer, inputs, outputs)
    roots = [plan.returned[p] for p in plan.roots]
    slots = [i for i, t in enumerate(inputs) if t.requires_grad]
    # (also a tensor with history it captured: the gradient goes on into that history)
    params = [ref.tensor for ref in tracer.graph.state if not ref.grad and ref.tensor.requires_grad]
    targets = [inputs[i] for i in slots] + params
    stops = {id(t._node) for t in targets} if tracer.ran_backward else None
    diff = [r for r, t in enumerate(roots) if t.requires_grad and not (
        stops is not None and _spent(t, stops))]
    seeds = [ones_like(roots[r]) for r in diff]
    cotangents = [tracer.add_input(s) for s in seeds]
    if seeds:
        del tracer.graph.inputs[-len(seeds):]  # (they are the backward graph's inputs)
    grads: Any = [None] * len(targets)
    if diff:
        with _as_leaves(targets):
            grads = autograd_grad([roots[r] for r in diff], targets, seeds, retain_graph=True,
                                  allow_unused=True)
    joint = Joint(cotangents, diff, slots, params,
                  [None if g is None else tracer.var_of(g) for g in grads], plan.roots,
                  plan.make)
    return joint, plan.returned


def _spent(t: Tensor, stops: set[int]) -> bool:
    """Whether ``t``'s history, up to the nodes in ``stops`` (the call's arguments' and
    parameters'), holds a node a backward inside the call released (``loss`` after a plain
    ``autograd.grad(loss, x)``): a backward of it would fail in eager code, so it is no
    differentiable output of the call (as a training step's loss)."""
    return any(node.released for node in _nodes(t, stops))


def _history(t: Tensor, stops: set[int]) -> Iterator[int]:
    """The ids of the nodes of ``t``'s history, up to the nodes in ``stops``."""
    return (id(node) for node in _nodes(t, stops))


def _nodes(t: Tensor, stops: set[int]) -> Iterator[Node]:
    todo, seen = [t._node], set(stops)
    while todo:
        node = todo.pop()
        if node is None or id(node) in seen:
            continue
        yield node
        seen.add(id(node))
        todo.extend(edge[0] for edge in node.edges or () if edge is not None)


@contextmanager
def _as_leaves(targets: list[Tensor]) -> Iterator[None]:
    """While a compiled call's own backward is computed: its tensor arguments and parameters
    are where the gradient stops, as leaves — no hook of theirs runs and no gradient goes on
    into their history (the engine does both after the node, once)."""
    saved: dict[int, tuple] = {}
    try:
        for t in targets:
            node = t._node
            if node is None:
                saved.setdefault(id(t), (t, t._hooks))
                t._hooks = None
            elif id(node) not in saved and node.edges is not None:
                saved[id(node)] = (node, node.edges, node.hooks, node.retained)
                node.edges = (None,) * len(node.edges)
                node.hooks = node.retained = None
        yield
    finally:
        for entry in saved.values():
            if len(entry) == 2:
                entry[0]._hooks = entry[1]
            else:
                node = entry[0]
                node.edges, node.hooks, node.retained = entry[1:]


def split(graph: Graph, joint: Joint) -> tuple[Graph, Graph, list[Var]]:
    """The forward graph (outputs, then the saved values) and the backward graph (saved
    values and cotangents in, one gradient per target out), and the saved variables."""
    made_by = {v: i for i, e in enumerate(graph.eqns) for v in e.outputs}
    forward = _needed(graph, [v for v in graph.live_roots() if v is not None], made_by)
    backward = _needed(graph, [v for v in joint.grads if v is not None], made_by) - forward
    fwd_eqns = [e for i, e in enumerate(graph.eqns) if i in forward]
    bwd_eqns = [e for i, e in enumerate(graph.eqns) if i in backward]
    if any(isinstance(e.prim, Effect) for e in bwd_eqns):
        raise AssertionError("an effect in a compiled call's backward")  # none records one
    made_fwd = {v for e in fwd_eqns for v in e.outputs} | set(graph.inputs) | {
        ref.var for ref in graph.state}
    needed = [v for e in bwd_eqns for v in e.inputs] + [v for v in joint.grads if v is not None]
    saved = list(dict.fromkeys(v for v in needed if v in made_fwd))
    fwd = Graph(graph.name, list(graph.inputs), list(graph.state), dict(graph.consts), fwd_eqns,
                [*graph.outputs, *saved], list(graph.writes), list(graph.grads),
                grads_in_place=list(graph.grads_in_place))
    # the backward reads state values as the forward saw them (eager's tape does the same)
    bwd = Graph(f"{graph.name}_backward", [*saved, *joint.cotangents], [], dict(graph.consts),
                bwd_eqns, list(joint.grads))
    return fwd, bwd, saved


def _needed(graph: Graph, roots: list[Var], made_by: dict[Var, int]) -> set[int]:
    todo, seen = list(roots), set()
    while todo:
        i = made_by.get(todo.pop())
        if i is not None and i not in seen:
            seen.add(i)
            todo.extend(graph.eqns[i].inputs)
    return seen


def compiled_call(entry: Any, tensors: list[Tensor]) -> list[Tensor]:
    """A differentiable call of a compiled signature: the generated forward as one autograd
    node (its backward the generated backward), then the outputs made from its roots.
    Returns the tensor outputs, in order. The node is recorded even under an outer
    ``no_grad()``: the trace, under the same grad mode, found outputs needing grad, so the
    function turned grad on itself (``with ember.enable_grad():`` inside)."""
    if not entry.joint.roots:  # (every output made from an argument or state: no node)
        entry.generated.fn(*(t._data for t in tensors))
        return assemble(entry.joint.make, tensors, ())
    with enable_grad():
        outs = CompiledCall.apply(entry, *tensors, *entry.joint.params)
    return assemble(entry.joint.make, tensors, outs)


def traced_call(entry: Any, tensors: list[Tensor], returned: list) -> list[Tensor]:
    """The tracing call's outputs, made as later calls make theirs: one node over the
    trace's own (eager) roots, whose backward runs their eager backward. So ``retain_graph``,
    ``create_graph``, views and in-place writes behave the same on every call."""
    roots = tuple(returned[p] for p in entry.joint.roots)
    if not roots:  # (as in compiled_call)
        return assemble(entry.joint.make, tensors, ())
    with enable_grad():  # (as in compiled_call)
        outs = TracedCall.apply(entry, roots, *tensors, *entry.joint.params)
    return assemble(entry.joint.make, tensors, outs)


def assemble(make: list[tuple], tensors: list[Tensor], outs: Any) -> list[Tensor]:
    """The tensor outputs from the call's own outputs (the roots), the arguments and the
    state, as the trace made them (``make``: see :class:`_Plan`)."""
    outs = outs if isinstance(outs, tuple) else (outs,)
    made: list[Tensor] = []
    for source, where, steps in make:
        t = outs[where] if source == "out" else tensors[where] if source == "input" else \
            made[where] if source == "same" else where
        for step in steps:
            t = t.detach() if step[0] == "detach" else t.data if step[0] == "data" else \
                replay_view(t, step[1])
        made.append(t)
    return made


def _alias_step(x: Tensor, t: Tensor) -> tuple:
    """How ``t``, an alias of ``x``'s memory without history, was made from it: ``detach()``
    (sharing its version counter) or ``.data`` (a counter of its own)."""
    return ("detach",) if t._vc is x._vc else ("data",)


def _find_held(entry: Any) -> None:
    """Notes, at the first call, the state tensors other than parameters, those whose
    ``.grad`` the graph reads, and the memory of the graph's constants."""
    joint = entry.joint
    if joint.buffers is None:
        params = {id(p) for p in joint.params}
        joint.buffers = [ref.tensor for ref in entry.graph.state
                         if not ref.grad and id(ref.tensor) not in params]
        joint.graded = [ref.tensor for ref in entry.graph.state if ref.grad]
        joint.consts = {owner(a): None for a in entry.graph.consts.values()}


class CompiledCall(Function):
    """One autograd node for a compiled call: forward and backward are generated code.
    ``apply(entry, *tensor_arguments, *parameters)`` returns the roots (see :class:`Joint`)."""

    @staticmethod
    def forward(ctx: Any, entry: Any, *tensors: Tensor) -> tuple:
        joint = entry.joint
        n_in = len(entry.graph.inputs)
        arrays = entry.generated.fn(*(t._data for t in tensors[:n_in]))
        n_out = len(arrays) - entry.n_saved
        _find_held(entry)
        # memory the caller or the graph holds; the roots own theirs, as eager's outputs do
        # (so a value the passes made one with another — two equal outputs, an output that is
        # an argument or a constant kept for every call — is copied)
        held: dict[int, tuple | None] = dict(joint.consts)
        held.update((owner(t._data), (t, None)) for t in joint.buffers)
        held.update((owner(t._data), (t, None)) for t in tensors)
        if joint.graded:
            held.update((owner(t._grad._data), None) for t in joint.graded if t._grad is not None)
        outs = []
        dev = entry.device
        for r, p in enumerate(joint.roots):
            a = arrays[p]
            if owner(a) in held and r not in joint.grad_roots:
                a = a.copy()
            t = _wrap(a, dev)
            held[owner(a)] = (t, r)
            outs.append(t)
        ctx.entry, ctx.saved, ctx.n_in = entry, arrays[n_out:], n_in
        ctx.versions = [(t, t._vc.value) for t in tensors]  # the backward may read them all
        # the roots and buffers the backward reads (by memory), at their versions now
        read = {owner(a): held.get(owner(a)) for a in ctx.saved}
        ctx.read = [(t, r, t._vc.value) for t, r in filter(None, read.values())
                    if r is not None or not any(t is x for x in tensors)]
        ctx._on_release = _free
        ctx.set_materialize_grads(False)
        diff = set(joint.differentiable)
        ctx.mark_non_differentiable(*(o for r, o in enumerate(outs) if r not in diff))
        return tuple(outs)

    @staticmethod
    def backward(ctx: Any, *grads: Tensor | None) -> tuple:
        return _once(ctx, _compiled_backward, grads)


def _compiled_backward(ctx: Any, grads: tuple) -> tuple:
    entry, joint = ctx.entry, ctx.entry.joint
    name = entry.graph.name
    for i, (t, version) in enumerate(ctx.versions):
        if t._vc.value != version:
            role = f"argument {i}" if i < ctx.n_in else \
                f"parameter {entry.graph.label(t)}"
            _modified(name, role, t, version, "Hint: call backward() before optimizer.step(), "
                      "or avoid the in-place change" if i >= ctx.n_in else None)
    for t, r, version in ctx.read:
        if t._vc.value != version:
            role = f"buffer {entry.graph.label(t)}" if r is None else \
                f"output {joint.roots[r]}" if joint.roots[r] < len(entry.out_consts) else \
                "a tensor its outputs view"
            _modified(name, role, t, version, None)
    cts = [grads[r] for r in joint.differentiable]
    arrays = entry.backward.fn(*ctx.saved, *(
        g._data if g is not None else zeros(v.shape, dtype=v.dtype)._data
        for g, v in zip(cts, joint.cotangents)))
    dev = entry.device
    per_input: list[Tensor | None] = [None] * ctx.n_in
    for slot, a in zip(joint.input_slots, arrays):
        per_input[slot] = None if a is None else _wrap(a, dev)
    params = [None if a is None else _wrap(a, dev) for a in arrays[len(joint.input_slots):]]
    return (None, *per_input, *params)


def _modified(name: str, role: str, t: Tensor, version: int, hint: str | None) -> None:
    """Eager's error for a value saved for backward and then written in place."""
    raise GradError(
        f"backward of the compiled {name}: {role} (a tensor of shape {tuple(t.shape)}, dtype "
        f"{t.dtype.name}) was modified in place after the call saved it for backward: it was "
        f"at version {version} and is now at version {t._vc.value}. " + (
            hint or "Hint: call .clone() on it before the in-place op, or use the out-of-place "
            "form (e.g. x = x + 1 instead of x += 1)."))


def _free(ctx: Any) -> None:
    """The node is released (a backward without ``retain_graph``): what backward reads goes,
    as eager's tape frees its saved values."""
    ctx.saved = ctx.versions = ctx.read = ctx.roots = None


class TracedCall(Function):
    """The tracing call as one node, like the later calls: ``apply(entry, roots,
    *tensor_arguments, *parameters)`` returns the trace's roots (sharing their memory and
    version counters); its backward is their eager backward, with respect to the arguments
    and parameters (the gradient goes on from there through the node's edges)."""

    @staticmethod
    def forward(ctx: Any, entry: Any, roots: tuple, *tensors: Tensor) -> tuple:
        ctx.entry, ctx.roots, ctx.n_in = entry, roots, len(entry.graph.inputs)
        ctx._on_release = _free
        ctx.set_materialize_grads(False)
        _find_held(entry)
        # (a root the graph keeps as a constant: a copy, or writing into it changes later calls)
        # (order "K": in the constant's layout, a channels-last zeros_like(x) stays one)
        outs = tuple(_wrap(r._data.copy(order="K"), r._device)
                     if owner(r._data) in entry.joint.consts else r.detach() for r in roots)
        diff = set(entry.joint.differentiable)
        ctx.mark_non_differentiable(*(o for r, o in enumerate(outs) if r not in diff))
        return outs

    @staticmethod
    def backward(ctx: Any, *grads: Tensor | None) -> tuple:
        return _once(ctx, _traced_backward, grads)


def _traced_backward(ctx: Any, grads: tuple) -> tuple:
    joint = ctx.entry.joint
    tensors = ctx._inputs
    targets = [tensors[i] for i in joint.input_slots] + list(tensors[ctx.n_in:])
    pairs = [(ctx.roots[r], grads[r]) for r in joint.differentiable if grads[r] is not None]
    found: Any = [None] * len(targets)
    if pairs:
        with _as_leaves(targets):
            found = autograd_grad([r for r, _ in pairs], targets, [g for _, g in pairs],
                                  retain_graph=True, allow_unused=True)
    per_input: list[Tensor | None] = [None] * ctx.n_in
    for slot, g in zip(joint.input_slots, found):
        per_input[slot] = g
    return (None, None, *per_input, *found[len(joint.input_slots):])


class _NotTwice(_OnceDifferentiable):
    """Marks a gradient a compiled call's backward made: differentiating it raises."""

    def vjp(self, ctx: Any, g: Any) -> tuple:
        raise GradError(
            f"ember.jit: the backward of the compiled {self.where} cannot be differentiated "
            "again (create_graph=True through the outputs of a compiled call, for a "
            "higher-order gradient): it is generated code, not recorded ops. Hint: call the "
            "function under `with ember.jit.disable():` for this, or compute the whole "
            "higher-order gradient inside the compiled function")


def _once(ctx: Any, backward: Any, grads: tuple) -> tuple:
    """``backward(ctx, grads)`` without recording; under ``create_graph`` its gradients get
    a history that refuses a second derivative clearly (as ``@once_differentiable``)."""
    with no_grad():
        result = backward(ctx, grads)
    sources = [t for t in (*ctx._inputs, *grads) if t is not None and t.requires_grad]
    if not (GRAD.enabled and sources):
        return result
    rule = _NotTwice(ctx.entry.graph.name)
    return tuple(None if r is None or not isinstance(r, Tensor) else
                 _wrap(r._data, r._device, True, Node(rule, tuple(sources[:1]), {}, None, None,
                                                      r._device))
                 for r in result)
