"""The reverse-mode engine: walks the tape backwards, iteratively, in topological order.

Cost is linear in the graph's size and depth is unlimited (no recursion). Gradients are summed
where a tensor is used more than once; hooks run as each gradient completes; saved values are
released as each node finishes unless ``retain_graph``. Under ``create_graph`` the vjp rules
(written in Ember ops) are themselves recorded, which gives higher-order derivatives. How
the contributions to one gradient add up, and how a leaf's gradient goes into ``.grad``, is
:mod:`ember.autograd.accumulate`; where a pass starts (the outputs and their gradients,
checked) is :mod:`ember.autograd.roots`, and the running pass as hooks see it
:mod:`ember.autograd.graph_task`.
"""

from __future__ import annotations

import threading
import warnings
from collections.abc import Callable
from typing import Any

from ember.autograd.accumulate import (
    Sum,
    accumulate_grad,
    add_grad,
    grad_as,
    grad_lock,
    sums_in_place,
    unwrap_sum,
)
from ember.autograd.anomaly import ANOMALY, check_finite
from ember.autograd.forward import ForwardTrace, alias
from ember.autograd.grad_mode import GRAD, request_grad, set_grad_enabled
from ember.autograd.gradient_edge import EdgeTarget, edge_target
from ember.autograd.graph import BACKWARD_FILTER, Node, NodeHooks, leaf_hooks, restore_inputs
from ember.autograd.graph_task import (  # noqa: F401 (the last three: imported from here)
    CALLBACKS,
    GRAPH_TASK,
    PASS_IDS,
    GraphTask,
    queue_callback,
    running_task,
)
from ember.autograd.hook_calls import (
    held_elsewhere,
    hook_name,
    run_hooks,
    run_leaf_hooks,
    run_node_hooks,
)
from ember.autograd.roots import as_list, batched_seeds, root_grads
from ember.autograd.saved_hooks import forget_unpacked
from ember.errors import ArgumentError, GradError, ShapeError, user_stacklevel
from ember.grad_assign import SAME_DTYPE
from ember.ops.overrides import TENSOR_LIKE, handler_of
from ember.ops.primitive import DISPATCH
from ember.tensor import Tensor


class _VjpHook(threading.local):
    """``around`` is None, or ``around(node, grads)`` which must return ``node.prim.vjp(node,
    *grads)``: how the profiler and a jit trace see each backward rule (one check per node
    when off). Per thread, as the dispatch state is."""

    def __init__(self) -> None:
        self.around: Any = None


VJP_HOOK = _VjpHook()

# PyTorch's words (TORCH_WARN_ONCE), so warning filters written for PyTorch match them
CYCLE_WARNING = ("Using backward() with create_graph=True will create a reference cycle "
                 "between the parameter and its gradient which can cause a memory leak. We "
                 "recommend using autograd.grad when creating the graph to avoid this. If you "
                 "have to use this function, make sure to reset the .grad fields of your "
                 "parameters to None after use to break the cycle and avoid the leak.")
CYCLE_WARNED = [False]  # once a process, as PyTorch


def backward(tensors: Any, grad_tensors: Any = None, retain_graph: bool | None = None,
             create_graph: bool = False, inputs: Any = None) -> None:
    """Accumulates gradients of ``tensors`` into the ``.grad`` of the leaves (or of ``inputs``).

    Example:
        >>> w = ember.tensor([1.0, 2.0], requires_grad=True)
        >>> ember.autograd.backward((w * w).sum())
        >>> w.grad
        tensor([2., 4.])
    """
    if type(tensors) is not Tensor or grad_tensors is not None or inputs is not None:
        inputs = _read_once(inputs)  # (not on loss.backward()'s path)
        handler = TENSOR_LIKE and handler_of((tensors, grad_tensors, inputs))
        if handler:
            return handler(backward, (tensors, grad_tensors), dict(
                retain_graph=retain_graph, create_graph=create_graph, inputs=inputs))
    roots = root_grads(tensors, grad_tensors, "backward")
    targets = None if inputs is None else as_list(inputs)
    if targets is not None and not targets:
        raise GradError("backward: inputs= is empty; pass the tensors to accumulate into, or "
                        "leave it out for all leaves")
    for i, t in enumerate(targets or ()):
        if not getattr(t, "requires_grad", True):
            raise GradError(f"backward: inputs[{i}] (shape {tuple(t.shape)}) does not require "
                            "grad, so no gradient can be accumulated into it (PyTorch: can't "
                            "retain_grad on Tensor that has requires_grad=False)")
    if create_graph and not CYCLE_WARNED[0]:
        CYCLE_WARNED[0] = True
        warnings.warn(CYCLE_WARNING, UserWarning, stacklevel=user_stacklevel())
    owners: set[int] = set()
    found = _run(roots, targets, create_graph if retain_graph is None else retain_graph,
                 create_graph, owners)
    if targets is not None:
        done = set()
        grad_mode = GRAD.enabled, GRAD.requested, GRAD.inference  # (as _run: no `with` block)
        request_grad(bool(create_graph))  # the hooks of the leaves see backward's mode
        try:
            for t, g in zip(targets, found):
                # each tensor once, however often it is listed; a tensor that retains its grad
                # got it during the pass already
                if g is not None and id(t) not in done and \
                        not (t._retains and t._node is not None):
                    _deliver(t, g, create_graph, owners)
                done.add(id(t))
        finally:
            GRAD.enabled, GRAD.requested, GRAD.inference = grad_mode


def _read_once(inputs: Any) -> Any:
    """``inputs``, made a list where it is an iterator or another iterable (a generator of
    parameters, read once here, before the tensor-likes are looked for in it)."""
    if inputs is None or isinstance(inputs, (Tensor, list, tuple)) or \
            type(inputs) in TENSOR_LIKE:  # (a GradientEdge is a tuple)
        return inputs
    return list(inputs)


def grad(outputs: Any, inputs: Any, grad_outputs: Any = None, retain_graph: bool | None = None,
         create_graph: bool = False, only_inputs: bool = True, allow_unused: bool | None = None,
         is_grads_batched: bool = False, materialize_grads: bool = False) -> tuple:
    """Returns d(outputs)/d(inputs) without touching any ``.grad``, as
    ``torch.autograd.grad``.

    Args:
        outputs: the tensor(s) to differentiate.
        inputs: the tensor(s) to differentiate with respect to, or
            :class:`~ember.autograd.graph.GradientEdge` objects (the gradient flowing into
            that output of that node).
        grad_outputs: the vector(s) of the vector-Jacobian product, one per output (None for
            a scalar output: 1).
        retain_graph: keep the graph for another backward (default: ``create_graph``).
        create_graph: record the backward pass, for higher-order derivatives.
        only_inputs: deprecated and ignored, as in PyTorch.
        allow_unused: give None for an input the outputs do not depend on, instead of
            raising (default: ``materialize_grads``).
        is_grads_batched: the first dimension of every ``grad_outputs`` tensor is a batch:
            one vector-Jacobian product each, stacked along a new first dimension.
        materialize_grads: zeros instead of None for unused inputs.

    Example:
        >>> x = ember.tensor([1.0, 2.0], requires_grad=True)
        >>> (dx,) = ember.autograd.grad((x ** 3).sum(), x, create_graph=True)
        >>> (ddx,) = ember.autograd.grad(dx.sum(), x)
        >>> dx, ddx                                         # 3x², 6x
        (tensor([ 3., 12.], grad_fn=<MulBackward0>), tensor([ 6., 12.]))
    """
    if not only_inputs:
        warnings.warn("grad: only_inputs is deprecated and ignored (it is always True)",
                      stacklevel=2)
    if type(inputs) is not Tensor:
        inputs = _read_once(inputs)
    # tensor-likes outside the core (nested tensors) differentiate themselves
    handler = TENSOR_LIKE and handler_of((outputs, inputs, grad_outputs))
    if handler:
        return handler(grad, (outputs, inputs, grad_outputs), dict(
            retain_graph=retain_graph, create_graph=create_graph, allow_unused=allow_unused,
            is_grads_batched=is_grads_batched, materialize_grads=materialize_grads))
    inputs = as_list(inputs)
    if not inputs:
        raise GradError("grad: the inputs argument cannot be empty (as PyTorch's `inputs` "
                        "argument to `grad()`). Hint: pass the tensors to differentiate "
                        "with respect to")
    if allow_unused is None:
        allow_unused = materialize_grads
    elif materialize_grads and not allow_unused:
        raise ArgumentError("grad: materialize_grads=True needs allow_unused to be True or not "
                            "given")
    if is_grads_batched:
        return _grad_batched(outputs, inputs, grad_outputs, retain_graph, create_graph,
                             allow_unused, materialize_grads)
    roots = root_grads(outputs, grad_outputs, "grad")
    targets = [edge_target(t) for t in inputs]
    for i, t in enumerate(targets):
        if materialize_grads and type(t) is EdgeTarget:
            raise GradError(f"grad: input {i} is a GradientEdge of {t._node.name()}, whose "
                            "shape is not known: materialize_grads=True needs tensors")
        if not t.requires_grad:
            raise GradError(f"grad: input {i} (shape {tuple(t.shape)}) does not require grad")
    found = _run(roots, targets, create_graph if retain_graph is None else retain_graph,
                 create_graph, accumulates=False)
    for i, g in enumerate(found):
        want = getattr(targets[i], "_grad_dtype", None)  # (a leaf's grad_dtype, as torch)
        if g is not None and want is not SAME_DTYPE and want is not None and g.dtype is not want:
            g = found[i] = g.to(want)
        if g is None and not allow_unused:
            raise GradError(f"grad: input {i} ({_what(targets[i])}) was not used to compute "
                            "the outputs. Hint: pass allow_unused=True to get None for it")
        if g is None and materialize_grads:
            from ember.ops.creation import zeros_like

            # (a leaf that requires grad under create_graph, as PyTorch's: a gradient of it
            # may be differentiated again with the others)
            found[i] = zeros_like(targets[i], requires_grad=create_graph)
        elif g is not None and not create_graph:
            found[i] = g.detach() if DISPATCH.handler is None else _without_history(g)
    return tuple(found)


def _without_history(g: Tensor) -> Tensor:
    """``g`` detached; where it is a dual (a dual ``grad_outputs`` gives one), as the same
    value made under ``no_grad``, which keeps its tangents, as PyTorch's ``grad`` does."""
    if any(isinstance(h, ForwardTrace) and h.tangent(g) is not None for h in DISPATCH.stack):
        with set_grad_enabled(False):
            return alias(g)
    return g.detach()


def _what(target: Any) -> str:
    """A target of ``grad`` in an error message: its shape, or the edge it is."""
    return f"shape {tuple(target.shape)}" if isinstance(target, Tensor) else repr(target)


def _grad_batched(outputs: Any, inputs: Any, grad_outputs: Any, retain_graph: bool | None,
                  create_graph: bool, allow_unused: bool, materialize_grads: bool) -> tuple:
    """``grad`` with ``is_grads_batched``: one pass per row of the ``grad_outputs``."""
    from ember.ops.join import stack

    seeds, n = batched_seeds(outputs, grad_outputs)
    rows = [grad(outputs, inputs, [g[i] for g in seeds],
                 retain_graph=True if i < n - 1 else retain_graph, create_graph=create_graph,
                 allow_unused=allow_unused, materialize_grads=materialize_grads)
            for i in range(n)]
    return tuple(None if col[0] is None else stack(col) for col in zip(*rows))


def _second_time(node: Node) -> GradError:
    return GradError(f"backward through {node.name()} a second time: its saved values were "
                     "freed by the first backward (in this thread or another). Hint: pass "
                     "retain_graph=True to the first backward() if you need to go through the "
                     "graph again.")


def _topological(root_nodes: list[Node], refuse_released: bool,
                 stop: frozenset | set = frozenset()) -> list[Node]:
    """Nodes reachable from the roots, producers before consumers (iterative post-order; the
    last root first). ``refuse_released``: every one will run (``backward()``), so one whose
    saved values a backward freed is refused before anything runs. The walk does not go
    past a node in ``stop`` (which is listed)."""
    order: list[Node] = []
    seen: set[Node] = set()
    for root in reversed(root_nodes):
        if root in seen:
            continue
        if refuse_released and root.released:
            raise _second_time(root)
        seen.add(root)
        stack = [(root, iter(() if root in stop else root.edges))]
        while stack:
            node, edges = stack[-1]
            for edge in edges:
                if edge is not None:
                    child = edge[0]
                    if child is not None and child not in seen:
                        if refuse_released and child.released:
                            raise _second_time(child)
                        seen.add(child)
                        stack.append((child, iter(() if child in stop else child.edges)))
                        break
            else:
                stack.pop()
                order.append(node)
    return order


def nodes_to(outputs: list, targets: list) -> set[Node]:
    """The nodes that ``grad(outputs, targets)`` runs: those on a path to a target, for
    targets none of which leads to another (a transform's fresh inputs): the walk stops at
    the targets, so the graph behind them (an outer level's, however long) costs nothing."""
    stop = {t._node for t in targets if t._node is not None}
    return _needed(_topological(list({t._node: None for t in outputs
                                      if t._node is not None}), False, stop), targets)[0]


def _needed(order: list[Node], targets: list) -> tuple[set[Node], Callable[[tuple], bool]]:
    """Nodes on some path to a target (the only ones ``grad(…, inputs)`` must run), and
    whether an edge leads to a target. One of them whose saved values a backward freed is
    refused; one it only reaches is not, as PyTorch's."""
    ends: set = {id(t) if t._node is None else t._node for t in targets}  # (+ needed nodes)
    needed: set[Node] = set()

    def leads_to_target(edge: tuple) -> bool:  # (a leaf's edge by the leaf's id)
        return (id(edge[1]) if edge[0] is None else edge[0]) in ends

    for node in order:  # producers first (leads_to_target's one expression: a call less an edge)
        for edge in node.edges:
            if edge is not None and (id(edge[1]) if edge[0] is None else edge[0]) in ends:
                if node.released:
                    raise _second_time(node)
                needed.add(node)
                ends.add(node)
                break
    return needed, leads_to_target


def _run(roots: list, targets: list | None, retain_graph: bool, create_graph: bool,
         owners: set[int] | None = None, accumulates: bool = True) -> list:
    """Runs the backward pass; ``owners`` collects the memory handed to a ``.grad`` or given by
    the caller (a gradient found there is copied before it lands in another ``.grad``);
    ``accumulates``: a ``backward`` (into ``.grad``), not a ``grad`` (hooks may ask)."""
    node_grads: dict[Node, list] = {}
    leaf_grads: dict[int, list] = {}  # id(leaf) -> [leaf, summed grad]
    owners = set() if owners is None else owners
    for t, g in roots:
        add_grad(node_grads, leaf_grads, t, g)
        owners.add(id(g._data if g._data.base is None else g._data.base))
    if len(roots) == 1:  # (one output, as a loss's backward: no duplicates to drop)
        order = _topological([] if roots[0][0]._node is None else [roots[0][0]._node],
                             targets is None)
    else:
        order = _topological(list({t._node: None for t, _ in roots if t._node is not None}),
                             targets is None)
    _follow_retained(order)
    needed, leads_to_target = (None, None) if targets is None else _needed(order, targets)
    wanted = None if targets is None else {(t._node, t._idx): i for i, t in enumerate(targets)
                                             if t._node is not None}
    found: list = [None] * (len(targets) if targets is not None else 0)

    # backward(): a leaf's gradient is final once every node with an edge to it has run, and
    # then its hooks run and it lands in .grad at once, during the backward pass (how DDP
    # starts all-reducing a bucket while the rest of backward computes)
    pending, leaf_edges = _leaf_edge_counts(order) if targets is None else (None, None)
    outer_filter, BACKWARD_FILTER.edge = BACKWARD_FILTER.edge, leads_to_target
    outer_task = GRAPH_TASK.current
    at_exit: list[Callable[[], None]] = []  # (what hooks ask to run once the pass is done)
    GRAPH_TASK.current = (next(PASS_IDS), order, needed, wanted, targets, at_exit,
                          accumulates)  # made a GraphTask only when a hook asks for it
    # hooks and queued callbacks run in backward's grad mode, as PyTorch's (set and restored
    # here, not by a `with` block: ~2 µs less a pass)
    grad_mode = GRAD.enabled, GRAD.requested, GRAD.inference
    request_grad(create_graph)
    try:
        for node in reversed(order):
            grads = node_grads.pop(node, None)
            runs = needed is None or node in needed
            if grads is not None and (runs or any((node, i) in wanted
                                                  for i in range(len(grads)))):
                if len(grads) > 1:
                    grads = [unwrap_sum(g) for g in grads]
                elif type(grads[0]) is Sum:
                    grads[0] = grads[0].tensor  # (the list is the pass's own)
                if node.hooks or node.retained or wanted:
                    _finish_outputs(node, grads, wanted, found, create_graph, owners)
                if runs:
                    try:
                        _propagate(node, grads, node_grads, leaf_grads)
                    except Exception as exc:
                        if node.released:  # by another thread's backward, since the start
                            raise _second_time(node) from exc
                        raise
            if runs and not retain_graph:
                node.release()  # (one that grad(..., inputs) does not run keeps its saved
                #                 values, as PyTorch's: another backward may run it)
            elif node.packed is not None:
                forget_unpacked(node)
            if pending is not None and node in leaf_edges:
                for key in leaf_edges[node]:
                    pending[key] -= 1
                    if not pending[key] and key in leaf_grads:
                        leaf, g = leaf_grads.pop(key)
                        _finish_leaf(leaf, unwrap_sum(g), None, found, create_graph, owners)
        for leaf, g in leaf_grads.values():
            _finish_leaf(leaf, unwrap_sum(g), targets, found, create_graph, owners)
        for callback in at_exit:
            callback()
        while targets is None and CALLBACKS:
            CALLBACKS.pop(0)()
    finally:
        GRAD.enabled, GRAD.requested, GRAD.inference = grad_mode
        BACKWARD_FILTER.edge = outer_filter
        GRAPH_TASK.current = outer_task
        if targets is None:
            CALLBACKS.clear()
    return found



def _follow_retained(order: list[Node]) -> None:
    """A tensor that retains its grad and was written in place since retains the gradient of
    its new value: its registration moves to its current node, as PyTorch moves the
    ``retain_grad`` hook to the new ``grad_fn`` (hooks of ``register_hook`` stay)."""
    for node in order:
        retained = node.retained
        if not retained:
            continue
        for i, ref in list(retained.items()):
            t = ref()
            if t is None:
                continue
            # (grad_fn: a view whose base was written since takes its new history now)
            if t.grad_fn is node and t._idx == i:
                continue
            del retained[i]
            if t._node is not None:
                if t._node.retained is None:
                    t._node.retained = {}
                t._node.retained[t._idx] = ref


def _leaf_edge_counts(order: list[Node]) -> tuple[dict[int, int], dict[Node, list[int]]]:
    """For each leaf (by id), how many edges of the nodes in ``order`` lead to it; and for
    each node with such edges, the leaves they lead to (once per edge)."""
    counts: dict[int, int] = {}
    leaf_edges: dict[Node, list[int]] = {}
    for node in order:
        for edge in node.edges:
            if edge is not None and edge[0] is None:
                key = id(edge[1])
                counts[key] = counts.get(key, 0) + 1
                keys = leaf_edges.get(node)
                if keys is None:
                    leaf_edges[node] = [key]
                else:
                    keys.append(key)
    return counts, leaf_edges


def _finish_leaf(leaf: Any, g: Any, targets: list | None, found: list, create_graph: bool,
                 owners: set) -> None:
    """A leaf's complete gradient: through its hooks, then into ``.grad`` (``backward``) or
    into the answer (``grad``, which runs the hooks of the leaves it returns only)."""
    if targets is not None:
        for t in targets:
            if t is leaf:
                break
        else:
            return
    if leaf._hooks:
        g, kept = run_leaf_hooks(leaf._hooks, g)
        if kept:
            held_elsewhere(g, owners)
    if targets is None:
        _deliver(leaf, g, create_graph, owners)
    else:
        for i, t in enumerate(targets):
            if t is leaf:
                found[i] = g


def _deliver(t: Any, g: Any, create_graph: bool, owners: set) -> None:
    """Into ``t.grad`` through the leaf's ``AccumulateGrad``, as PyTorch's: its pre-hooks,
    the sum, the ``register_post_accumulate_grad_hook`` hooks, then its post-hooks. A leaf
    whose ``requires_grad`` was turned off since the forward pass takes no sum (as torch's
    AccumulateGrad; its hooks still run)."""
    hooks = leaf_hooks(t) if t._node is None else None
    if hooks is None:
        if t.requires_grad:  # (a sparse leaf is no Tensor)
            accumulate_grad(t, g, create_graph, owners)
        return
    (g,) = run_node_hooks(hooks.pre, (g,), "a prehook of AccumulateGrad")
    if g is not None and t.requires_grad:
        accumulate_grad(t, g, create_graph, owners)
    for hook in list(hooks.post_accumulate):
        if hook(t) is not None:
            raise GradError(f"post-accumulate-grad hook {hook_name(hook)} returned a value; "
                            "such a hook reads or updates tensor.grad in place and returns None")
    run_node_hooks(hooks.post, (), "a hook of AccumulateGrad", (g,))


def _finish_outputs(node: Node, grads: list, wanted: dict | None, found: list,
                    create_graph: bool, owners: set) -> None:
    """Runs the output hooks of a node whose gradients are complete; retains and collects."""
    if node.hooks:
        for i, hooks in node.hooks.items():
            if grads[i] is not None:
                grads[i] = run_hooks(hooks, grads[i])
    if node.retained:  # as PyTorch's retain_grad: a copy first, then out-of-place sums
        for i, ref in node.retained.items():
            t, g = ref(), grads[i]
            if t is None or g is None:
                continue
            if t.grad is None:
                held_elsewhere(g, owners)
                accumulate_grad(t, g, create_graph, owners)
            else:
                with grad_lock(t):  # (backward passes in other threads add theirs)
                    t.grad = t.grad + (g if create_graph else g.detach())
    if wanted:
        for i, g in enumerate(grads):
            slot = wanted.get((node, i))
            if slot is not None:
                found[slot] = g


def _propagate(node: Node, grads: list, node_grads: dict, leaf_grads: dict) -> None:
    restore_inputs(node)
    node.check_versions()
    prim = node.prim
    hooks: NodeHooks | None = node.node_hooks
    if hooks is not None:
        grads = list(run_node_hooks(hooks.pre, tuple(grads), f"a prehook of {node.name()}"))
    elif prim.view and sums_in_place():  # (only views of one input have a region)
        region = prim.grad_region(node)
        if region is not None:
            if node.edges[0] is not None:
                g = grads[0]
                t = node.inputs[0]
                if ANOMALY.enabled:
                    check_finite(node, (g,))
                if g._data.dtype != t._data.dtype:
                    g = grad_as(g, t)
                add_grad(node_grads, leaf_grads, t, g, node.edges[0], region)
            return
    result = _rule(node, grads)
    if hooks is not None:
        result = run_node_hooks(hooks.post, tuple(None if e is None else g for g, e in
                                                   zip(result, node.edges)),
                                 f"a hook of {node.name()}", tuple(grads))
    if ANOMALY.enabled:
        check_finite(node, result)
    for t, edge, g in zip(node.inputs, node.edges, result):
        if g is None or edge is None:
            continue
        if not isinstance(g, Tensor):  # a sparse gradient (embedding with sparse=True)
            if edge[0] is not None:  # into another op's vjp, which reads dense gradients
                g = g.to_dense()
            add_grad(node_grads, leaf_grads, t, g, edge)
            continue
        a, like = g._data, t._data
        if a.shape != like.shape:
            g = _summed_to_input(g, t, prim.name)
        if a.dtype != like.dtype:
            g = grad_as(g, t)
        add_grad(node_grads, leaf_grads, t, g, edge)


def _rule(node: Node, grads: Any) -> tuple:
    """The node's vjp rule on ``grads``: one gradient (or None) per input."""
    prim = node.prim
    try:
        hook = VJP_HOOK.around
        result = prim.vjp(node, *grads) if hook is None else hook(node, grads)
    except GradError:
        raise
    except Exception as exc:
        raise GradError(f"backward of {prim.name} failed: {type(exc).__name__}: {exc}"
                        + node.where()) from exc
    if prim.nout == 1 and len(node.inputs) == 1 and not isinstance(result, (tuple, list)):
        result = (result,)
    if len(result) != len(node.inputs):
        raise GradError(f"the vjp rule of {prim.name} returned {len(result)} gradients for "
                        f"{len(node.inputs)} inputs")
    return result


def call_node(node: Node, grads: tuple) -> Any:
    """``node(*grads)``: the gradients of its inputs given those of its outputs, as calling
    PyTorch's ``grad_fn`` (None for an input needing none; one input gives one tensor). Each
    gradient has its input's shape; PyTorch's may leave a broadcast input's unsummed."""
    if node.released:
        raise GradError(f"{node.name()}: its saved values were freed by backward. Hint: pass "
                        "retain_graph=True to backward() to call it after.")
    if len(grads) != node.prim.nout:
        raise TypeError(f"{node.name()}: expected {node.prim.nout} gradients (one per output), "
                        f"got {len(grads)}")
    restore_inputs(node)
    node.check_versions()
    result = tuple(None if e is None else g for g, e in zip(_rule(node, grads), node.edges))
    return result[0] if len(result) == 1 else result


def _summed_to_input(g: Tensor, t: Any, name: str) -> Tensor:
    """A gradient of an input's shape broadcast (as a custom Function's backward may return)
    summed back to that shape, as PyTorch does; any other shape is refused."""
    from ember.ops.broadcast import sum_to

    shape, got = tuple(t._data.shape), tuple(g._data.shape)
    if len(shape) > len(got) or any(s not in (1, n) for s, n in zip(shape[::-1], got[::-1])):
        raise ShapeError(f"the vjp rule of {name} returned a gradient of shape {got} for an "
                         f"input of shape {shape}; it must have the input's shape (or one it "
                         "broadcasts to)")
    return sum_to(g, shape)
