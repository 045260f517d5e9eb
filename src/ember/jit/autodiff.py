"""Compiled calls that stay differentiable: ``fast = ember.jit.compile(model)`` used inside an
eager training loop (``F.cross_entropy(fast(x), y).backward()``).

While tracing such a call, the tracer also runs the backward pass of its outputs (``autograd.
grad`` with cotangent inputs), so the graph holds forward and backward. :func:`split` cuts it
in two graphs — the forward returns the outputs plus the values the backward reads, the
backward maps those values and the cotangents to gradients — and :class:`CompiledCall` runs
them as one autograd node: the forward when called, the backward when ``backward()`` reaches
it, gradients flowing on to the parameters and inputs as eager's would.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from ember.autograd.engine import grad as autograd_grad
from ember.autograd.function import Function, once_differentiable
from ember.errors import GradError
from ember.jit.ir import Effect, Graph, Var
from ember.jit.trace import Tracer
from ember.ops.creation import ones_like, zeros
from ember.tensor import Tensor, _wrap


@dataclass
class Joint:
    """What the traced backward added: the cotangent inputs (one per differentiable output),
    what is differentiated — tensor arguments (by position) that require grad, then
    parameters — and one gradient variable each (None where unused)."""

    cotangents: list[Var]
    differentiable: list[int]  # positions (among output leaves) of outputs with a gradient
    input_slots: list[int]  # positions (among tensor arguments) of those that require grad
    params: list[Tensor]
    grads: list[Var | None]


def trace_backward(tracer: Tracer, inputs: list[Tensor], outputs: list) -> Joint:
    """Runs, under ``tracer``, the backward of the outputs that require grad with respect to
    the tensor arguments and parameters that do."""
    diff = [i for i, t in enumerate(outputs) if isinstance(t, Tensor) and t.requires_grad]
    seeds = [ones_like(outputs[i]) for i in diff]
    cotangents = [tracer.add_input(s) for s in seeds]
    del tracer.graph.inputs[-len(seeds):]  # (they are the backward graph's inputs)
    slots = [i for i, t in enumerate(inputs) if t.requires_grad]
    params = [ref.tensor for ref in tracer.graph.state
              if not ref.grad and ref.tensor.requires_grad and ref.tensor._node is None]
    grads = autograd_grad([outputs[i] for i in diff], [inputs[i] for i in slots] + params,
                          seeds, retain_graph=True, allow_unused=True)
    return Joint(cotangents, diff, slots, params,
                 [None if g is None else tracer.var_of(g) for g in grads])


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
                [*graph.outputs, *saved], list(graph.writes), list(graph.grads))
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


class CompiledCall(Function):
    """One autograd node for a compiled call: forward and backward are generated code.
    ``apply(entry, *tensor_arguments, *parameters)`` returns the tensor outputs."""

    @staticmethod
    def forward(ctx: Any, entry: Any, *tensors: Tensor) -> tuple:
        n_in = len(entry.graph.inputs)
        arrays = entry.generated.fn(*(t._data for t in tensors[:n_in]))
        n_out = len(arrays) - entry.n_saved
        ctx.entry, ctx.saved, ctx.n_in = entry, arrays[n_out:], n_in
        ctx.versions = [(t, t._vc.value) for t in tensors]  # the backward may read them all
        outs = tuple(_wrap(a, entry.device) for a in arrays[:n_out] if a is not None)
        fixed = [i for i, o in enumerate(entry.graph.outputs[:n_out]) if o is not None]
        ctx.mark_non_differentiable(*(outs[k] for k, i in enumerate(fixed)
                                      if i not in entry.joint.differentiable))
        return outs

    @staticmethod
    @once_differentiable
    def backward(ctx: Any, *grads: Tensor | None) -> tuple:
        entry, joint = ctx.entry, ctx.entry.joint
        if ctx.saved is None:
            raise GradError(f"backward through the compiled {entry.graph.name} a second time: "
                            "its saved values are freed after the first (as eager's are). "
                            "Hint: backward(retain_graph=True) is not available for compiled "
                            "calls; run the call again")
        for i, (t, version) in enumerate(ctx.versions):
            if t._vc.value != version:
                raise GradError(
                    f"backward of the compiled {entry.graph.name}: its "
                    f"{'argument' if i < ctx.n_in else 'parameter'} of shape "
                    f"{tuple(t.shape)} was modified in place after the call: version "
                    f"{version} then, {t._vc.value} now. Hint: call backward() before "
                    "optimizer.step(), or avoid the in-place change")
        fixed = [i for i, o in enumerate(entry.graph.outputs) if o is not None]
        by_leaf = dict(zip(fixed, grads))
        cts = [by_leaf.get(i) for i in joint.differentiable]
        arrays = entry.backward.fn(*ctx.saved, *(
            g._data if g is not None else zeros(v.shape, dtype=v.dtype)._data
            for g, v in zip(cts, joint.cotangents)))
        ctx.saved = None  # freed, as eager frees the tape
        dev = entry.device
        per_input: list[Tensor | None] = [None] * ctx.n_in
        for slot, a in zip(joint.input_slots, arrays):
            per_input[slot] = None if a is None else _wrap(a, dev)
        params = [None if a is None else _wrap(a, dev)
                  for a in arrays[len(joint.input_slots):]]
        return (None, *per_input, *params)
