"""Custom ``autograd.Function``s with a ``vmap`` static method under :func:`ember.func.vmap`
(PyTorch's ``Function.vmap(info, in_dims, *args) -> (output, out_dims)``): the rule runs once
on the physical arguments, and where a gradient is needed one logical node (a bridge) pulls
gradients back through the physical graph the rule made."""

from __future__ import annotations

import weakref
from typing import TYPE_CHECKING, Any

from ember.autograd.engine import grad as tape_grad
from ember.autograd.grad_mode import GRAD, enable_grad, no_grad
from ember.autograd.graph import Node
from ember.errors import GradError, OpError, ShapeError
from ember.func.batching import batched, move
from ember.ops.primitive import _FLOAT, DISPATCH, run_below
from ember.tensor import Tensor

if TYPE_CHECKING:
    from ember.func.vmap import _BatchTrace

__all__ = ["NestedRuleBackward", "VmapInfo", "differentiated_below", "function_per_sample",
           "function_vmap"]


class VmapInfo:
    """The ``info`` a Function's ``vmap`` static method receives (as PyTorch's)."""

    __slots__ = ("batch_size", "randomness")

    def __init__(self, batch_size: int, randomness: str) -> None:
        self.batch_size, self.randomness = batch_size, randomness

    def __repr__(self) -> str:
        return f"VmapInfo(batch_size={self.batch_size}, randomness={self.randomness!r})"


class _RuleCtx:
    """The ctx of a Function batched by its ``vmap`` rule: its ``forward`` ran on the batched
    arguments, so no per-sample ``ctx`` exists for a forward-mode level above."""

    materialize_grads = True
    _in_jvp = False

    def __init__(self, name: str) -> None:
        self._name = name

    @property
    def saved_tensors(self) -> tuple:
        raise GradError(f"{self._name}: forward mode (jvp) inside vmap reached this Function, "
                        "whose vmap rule ran its forward on the batched tensors, so its jvp "
                        "has no per-sample saved tensors. Hint: put jvp outside vmap "
                        "(jvp(vmap(f))), or write jvp without ctx.saved_tensors")


def _no_batched_kwargs(trace: _BatchTrace, cls: type, kwargs: dict) -> None:
    for k, v in kwargs.items():
        if isinstance(v, Tensor) and trace.physical(v) is not None:
            raise OpError(f"vmap: {cls.__name__}.apply got the batched tensor keyword argument "
                          f"{k!r}; pass batched tensors positionally")


def _leaf(x: Tensor) -> Tensor:
    """A private tensor to differentiate with respect to: a new leaf, or an identity op on
    ``x`` when an outer level differentiates ``x`` (so it sees through)."""
    from ember.autograd.forward import alias

    with enable_grad():
        t = alias(x)
    if not t.requires_grad:
        t._requires_grad = True
    return t


def function_vmap(trace: _BatchTrace, cls: type, args: tuple, phys: list,
                  kwargs: dict) -> Any:
    """Runs ``cls.vmap(info, in_dims, *physical args)`` below ``trace`` and hands back logical
    outputs. When a logical argument needs a gradient (``vmap(grad(f))``), the rule runs on
    private physical leaves under grad mode and one logical node pulls gradients back through
    the physical graph it made (:func:`_bridge`)."""
    name = cls.__name__
    _no_batched_kwargs(trace, cls, kwargs)
    xs = [a if p is None else p for a, p in zip(args, phys)]
    dims = [None if p is None else 0 for p in phys]
    record = GRAD.enabled and any(isinstance(a, Tensor) and a.requires_grad for a in args)
    diff = [i for i, a in enumerate(args)
            if record and isinstance(a, Tensor) and a.requires_grad and a._data.dtype in _FLOAT]
    for i in diff:
        x = xs[i] if dims[i] == 0 else run_below(trace, batched, xs[i], trace.size, False)
        xs[i], dims[i] = run_below(trace, _leaf, x), 0
    result = run_below(trace, cls.vmap, VmapInfo(trace.size, trace.randomness), tuple(dims),
                       *xs, **kwargs)
    if not (isinstance(result, tuple) and len(result) == 2):
        raise OpError(f"{name}.vmap must return a pair (output, out_dims), got "
                      f"{type(result).__name__}")
    out, out_dims = result
    outs = out if isinstance(out, tuple) else (out,)
    odims = (out_dims,) * len(outs) if out_dims is None or isinstance(out_dims, int) \
        else tuple(out_dims)
    if len(odims) != len(outs):
        raise OpError(f"{name}.vmap returned out_dims={out_dims!r} for {len(outs)} outputs; "
                      "give one int (or None) per output")
    physical = []
    for j, (o, d) in enumerate(zip(outs, odims)):
        if not isinstance(o, Tensor):
            raise OpError(f"{name}.vmap must return tensors, output {j} is a "
                          f"{type(o).__name__}")
        if d is not None:
            if not (isinstance(d, int) and -o.ndim <= d < o.ndim and o.shape[d] == trace.size):
                raise ShapeError(f"{name}.vmap: out_dims {d!r} for output {j} of shape "
                                 f"{tuple(o.shape)} does not name a dimension of size "
                                 f"{trace.size} (the batch size)")
            o = run_below(trace, move, o, d, 0)
        elif record:
            o = run_below(trace, batched, o, trace.size, False)
        physical.append((o, d is not None or record))
    if not record:
        logical = [trace.logical(o) if is_b else o for o, is_b in physical]
    else:
        if not any(o.requires_grad for o, _ in physical):
            raise GradError(f"{name}.vmap: a gradient is needed through this Function under "
                            f"vmap, but its outputs have no gradient history. Hint: have "
                            f"vmap call {name}.apply on the batched arguments (or Ember ops), "
                            "so that backward can run through it")
        logical = _bridge(trace, name, tuple(args[i] for i in diff), tuple(xs[i] for i in diff),
                          [o for o, _ in physical])
    return tuple(logical) if isinstance(out, tuple) else logical[0]


def differentiated_below(trace: _BatchTrace, args: tuple, phys: list) -> bool:
    """Whether a derivative from outside the vmap must pass through a Function called with
    ``args``: an argument requires grad at the bottom, under every vmap (``trace``'s and those
    outside it; ``grad(vmap(f))`` or backward of its result), or has a tangent at a
    forward-mode level below (``jvp(vmap(f))``), while none requires grad at this level
    (where ``vmap(grad(f))`` records)."""
    if not any(p is not None for p in phys) or any(
            p is not None and a.requires_grad for a, p in zip(args, phys)):
        return False
    below = DISPATCH.stack[:DISPATCH.stack.index(trace)]
    for a, p in zip(args, phys):
        if isinstance(a, Tensor):
            t = a if p is None else p
            for level in reversed(below):  # (each level sees the tensor as the one above
                tangent = getattr(level, "tangent", None)  # hands it down)
                if tangent is not None and tangent(t) is not None:
                    return True
                deeper = level.physical(t) if hasattr(level, "physical") else None
                t = t if deeper is None else deeper
            if GRAD.enabled and t.requires_grad:
                return True
    return False


def function_per_sample(trace: _BatchTrace, cls: type, args: tuple, phys: list,
                        kwargs: dict) -> Any:
    """Runs ``cls.apply`` once per sample below ``trace`` and stacks the outputs: a Function
    without a ``vmap`` rule differentiated from outside the vmap (PyTorch's
    ``generate_vmap_rule``: each sample goes through the Function's own ``backward`` and
    ``jvp``; run op by op, the levels below would differentiate ``forward``'s ops instead).
    A non-tensor output is the first sample's."""
    _no_batched_kwargs(trace, cls, kwargs)

    def run() -> tuple[list, bool]:
        from ember.ops.join import stack

        outs = [cls.apply(*[a if p is None else p[b] for a, p in zip(args, phys)], **kwargs)
                for b in range(trace.size)]
        single = not isinstance(outs[0], tuple)
        columns = zip(*[(o,) if single else o for o in outs], strict=True)
        return [stack(list(col)) if isinstance(col[0], Tensor) else col[0]
                for col in columns], single

    physical, single = run_below(trace, run)
    logical = [trace.logical(o) if isinstance(o, Tensor) else o for o in physical]
    return logical[0] if single else tuple(logical)


class NestedRuleBackward(GradError):
    """A :class:`_Bridge` backward met gradients batched by a vmap nested inside its own."""


class _Bridge:
    """The rule of a logical node whose backward runs on a physical graph: from the physical
    ``outs`` (batch axis 0) back to the private physical ``leaves`` of the node's inputs."""

    differentiable = True
    save_inputs = save_outputs = view = False

    def __init__(self, trace: _BatchTrace, name: str, leaves: tuple, outs: list) -> None:
        self.trace, self.name, self.leaves, self.outs = trace, name, leaves, outs
        self.nout = len(outs)

    def reads(self, ctx: Any, i: int) -> bool:
        return False

    def vjp(self, ctx: Any, *grads: Any) -> tuple:
        trace = self.trace
        if trace not in DISPATCH.stack:
            raise GradError(f"backward of {self.name} (batched by its vmap rule) ran after its "
                            "vmap returned; run it inside the vmapped function")
        stack = DISPATCH.stack
        inner = [h for h in stack[stack.index(trace) + 1:] if getattr(h, "physical", None)
                 and any(g is not None and h.physical(g) is not None for g in grads)]
        if inner:  # vmap(vmap(vjp_fn)): the innermost vmap's samples one at a time
            return self._per_sample(inner[-1], ctx, grads)
        outs, cots, logical_cots, cot_leaves = [], [], [], []
        for o, g in zip(self.outs, grads):
            if g is None or not o.requires_grad:
                continue
            p = trace.physical(g)
            p = run_below(trace, batched, g, trace.size, False) if p is None else p
            create = GRAD.enabled and g.requires_grad
            leaf = run_below(trace, _leaf, p) if create else p
            if create:
                logical_cots.append(g)
                cot_leaves.append(leaf)
            outs.append(o)
            cots.append(leaf)
        if not outs:
            return (None,) * len(ctx.inputs)
        create = GRAD.enabled
        with enable_grad() if create else no_grad():
            found = run_below(trace, tape_grad, outs, list(self.leaves), cots,
                              retain_graph=True, create_graph=create, allow_unused=True)
        inputs = (*ctx.inputs, *logical_cots)
        if create and any(t.requires_grad for t in inputs):
            live = [g for g in found if g is not None]
            back = iter(_bridge(trace, self.name, inputs, (*self.leaves, *cot_leaves), live))
            return tuple(None if g is None else next(back) for g in found)
        return tuple(None if g is None else trace.logical(g) for g in found)


    def _per_sample(self, inner: _BatchTrace, ctx: Any, grads: tuple) -> tuple:
        """The vjp of gradients batched by ``inner``, a vmap nested inside this rule's own
        (``vmap(vmap(vjp_fn))``): the physical backward once per sample of ``inner`` (a vmap
        between the two levels is peeled the same way), the results stacked as ``inner``'s
        batch. (PyTorch vectorizes this; the values are the same.)"""
        if GRAD.enabled and _from_inner_leaves(inner, grads):
            raise NestedRuleBackward(
                f"vmap: the backward of {self.name} (batched by its vmap rule) got gradients "
                "that require grad, batched by a vmap inside that vmap (vmap(vmap(vjp_fn)) "
                "differentiated with respect to its cotangents); this is not supported. Hint: "
                "call the inner vjp_fn once per gradient, or give the Function no vmap rule "
                "(its forward then runs op by op)")
        size = inner.size
        phys = [None if g is None else inner.physical(g) for g in grads]
        if not size:  # (no samples: one row of zeros gives the results' shapes, kept empty)
            phys = [p if p is None else run_below(inner, Tensor.new_zeros, p, (1, *p.shape[1:]))
                    for p in phys]
        rows = [run_below(inner, self.vjp, ctx, *(g if p is None else run_below(
                    inner, Tensor.select, p, 0, k) for g, p in zip(grads, phys)))
                for k in range(max(size, 1))]
        return tuple(None if r[0] is None else
                     _logical(inner, run_below(inner, _stack, list(r), size)) for r in zip(*rows))


def _stack(tensors: list, size: int) -> Tensor:
    from ember.ops.join import stack

    out = stack(tensors)
    return out if size else out[:0]


_PER_SAMPLE: weakref.WeakValueDictionary = weakref.WeakValueDictionary()  # id -> result


def _logical(trace: _BatchTrace, phys: Tensor) -> Tensor:
    """A logical tensor of ``trace`` for ``phys``, requiring grad as it does (so that a level
    cutting its results, ``vjp_fn``'s, cuts the physical history too): a leaf at ``trace``'s
    level, whose history is its physical one."""
    t = trace.logical(phys, phys.requires_grad)
    _PER_SAMPLE[id(t)] = t
    return t


def _from_inner_leaves(inner: _BatchTrace, grads: tuple) -> bool:
    """Whether the history of ``grads`` reaches a leaf batched by ``inner`` other than a
    per-sample result (:func:`_logical`): a cotangent a reverse level inside ``inner``
    differentiates, which the per-sample results would not link to."""
    def foreign(leaf: Tensor) -> bool:
        return inner.physical(leaf) is not None and _PER_SAMPLE.get(id(leaf)) is not leaf

    nodes, seen = [], set()
    for g in grads:
        if g is not None and g.requires_grad:
            if g._node is None and foreign(g):
                return True
            nodes += [g._node] if g._node is not None else []
    while nodes:
        node = nodes.pop()
        if node in seen:
            continue
        seen.add(node)
        for edge in node.edges:
            if edge is not None and edge[0] is None and foreign(edge[1]):
                return True
            if edge is not None and edge[0] is not None:
                nodes.append(edge[0])
    return False


def _bridge(trace: _BatchTrace, name: str, inputs: tuple, leaves: tuple, outs: list) -> list:
    """Logical tensors for the physical ``outs``, recorded as one node on the logical
    ``inputs`` whose vjp differentiates ``outs`` with respect to ``leaves`` (the private
    physical stand-ins of ``inputs``), again through a bridge when differentiated twice."""
    tensors = [trace.logical(o, o.requires_grad) for o in outs]
    node = Node(_Bridge(trace, name, leaves, outs), inputs, {}, None, None, tensors[0]._device)
    for i, t in enumerate(tensors):
        if t.requires_grad:
            t._node, t._idx = node, i
    return tensors
