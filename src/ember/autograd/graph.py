"""The tape: one :class:`Node` per recorded op application.

A node is also the ``ctx`` a primitive's rules receive: ``ctx.inputs`` (the input tensors, with
their own history, so rules written in Ember ops are differentiable again), ``ctx.params``,
``ctx.outputs`` / ``ctx.out`` (rebuilt on demand, so a node never holds its outputs and no
reference cycle forms), and ``ctx.needs_input_grad``.

Inside :class:`saved_tensors_hooks` a node records its saved values through the user's
``pack_hook`` and reads them back through ``unpack_hook`` each time backward needs them (the
``inputs``/``outputs`` slots stay empty until then and are emptied again after, so the plain
path pays one attribute check).

As PyTorch's ``grad_fn``, a node shows the graph (:attr:`Node.next_functions`, where a leaf
appears as its :class:`AccumulateGrad`) and takes hooks of its own (:meth:`Node.register_prehook`,
:meth:`Node.register_hook`); the engine runs them.
"""

from __future__ import annotations

import copy
import threading
import weakref
from abc import ABCMeta
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from ember.autograd.saved_hooks import (
    HOOKS_OPEN,
    SAVED_HOOKS,
    Unsaved,
    _pack,
    _unpack,
    forget_unpacked,
    saved_tensors_hooks,  # (importable from here, as from torch.autograd.graph)
)
from ember.errors import GradError
from ember.hooks import RemovableHandle, add_hook

if TYPE_CHECKING:
    from ember.ops.primitive import Primitive
    from ember.tensor import Tensor


class NodeHooks:
    """The hooks of one node: ``pre`` run on its output gradients before its rule, ``post`` on
    its input gradients after it (and, for a leaf's :class:`AccumulateGrad`,
    ``post_accumulate`` run with the leaf once its ``.grad`` holds the new sum)."""

    __slots__ = ("pre", "post", "post_accumulate")

    def __init__(self) -> None:
        self.pre: list[Callable] = []
        self.post: list[Callable] = []
        self.post_accumulate: list[Callable] = []


class _Hookable:
    """``register_prehook`` and ``register_hook``, shared by :class:`Node` and
    :class:`AccumulateGrad` (each keeps a ``node_hooks`` slot)."""

    __slots__ = ()
    node_hooks: NodeHooks | None

    def hooks_made(self) -> NodeHooks:
        if self.node_hooks is None:
            self.node_hooks = NodeHooks()
        return self.node_hooks

    @property
    def metadata(self) -> dict:
        """A dict of the user's own data about this node, as PyTorch's ``grad_fn.metadata``.

        Example:
            >>> y = ember.ones(2, requires_grad=True) * 2
            >>> y.grad_fn.metadata["layer"] = "fc1"
        """
        return _METADATA.setdefault(self, {})

    def register_prehook(self, hook: Callable[[tuple], tuple | None]) -> RemovableHandle:
        """Calls ``hook(grad_outputs)`` before this node's backward runs (after the hooks of
        the tensors it made); a returned tuple replaces ``grad_outputs``, as PyTorch's.

        Example:
            >>> y = ember.ones(2, requires_grad=True) * ember.full((2,), 3.0, requires_grad=True)
            >>> h = y.grad_fn.register_prehook(lambda go: (go[0] * 2,))
        """
        return add_hook(self.hooks_made().pre, hook)

    def register_hook(self, hook: Callable[[tuple, tuple], tuple | None]) -> RemovableHandle:
        """Calls ``hook(grad_inputs, grad_outputs)`` after this node's backward has run; a
        returned tuple replaces ``grad_inputs`` (None for an input needing no gradient), as
        PyTorch's.

        Example:
            >>> y = ember.ones(2, requires_grad=True) * ember.full((2,), 3.0, requires_grad=True)
            >>> h = y.grad_fn.register_hook(lambda gi, go: print([g.shape for g in gi]))
        """
        return add_hook(self.hooks_made().post, hook)


_METADATA: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()  # node -> its metadata


class AccumulateGrad(_Hookable):
    """Where a leaf's gradient ends in a backward (PyTorch's ``AccumulateGrad``): found in
    :attr:`Node.next_functions`, with the leaf as ``variable``. One per leaf while it lives.

    Example:
        >>> x = ember.ones(2, requires_grad=True)
        >>> y = x * 2
        >>> acc, _ = y.grad_fn.next_functions[0]
        >>> acc.variable is x
        True
    """

    __slots__ = ("_ref", "node_hooks", "__weakref__")
    next_functions: tuple = ()

    def __init__(self, leaf: Tensor) -> None:
        self._ref = weakref.ref(leaf)  # the leaf holds its accumulator, not the other way
        self.node_hooks: NodeHooks | None = None

    @property
    def variable(self) -> Tensor:
        """The leaf tensor whose ``.grad`` this accumulates into."""
        return self._ref()

    def name(self) -> str:
        return "torch::autograd::AccumulateGrad"

    def __repr__(self) -> str:
        return "<AccumulateGrad>"


_ACCUMULATORS: dict[int, AccumulateGrad] = {}  # id(leaf) -> its accumulator, while it lives


def accumulator(leaf: Tensor) -> AccumulateGrad:
    """The leaf's :class:`AccumulateGrad`, made on first use and kept while the leaf lives."""
    acc = _ACCUMULATORS.get(id(leaf))
    if acc is None or acc.variable is not leaf:
        key = id(leaf)
        acc = _ACCUMULATORS[key] = AccumulateGrad(leaf)
        weakref.finalize(leaf, _ACCUMULATORS.pop, key, None)
    return acc


_RENAMED: dict[tuple[int, str], Any] = {}  # (id of a primitive, name) -> its renamed copy


def name_node(t: Any, name: str) -> Any:
    """Gives the node that made ``t`` the name PyTorch gives ``t.grad_fn``, where ``t`` ends a
    composite: ``mean`` records a sum and a division, and PyTorch's users see
    ``MeanBackward0``, not ``DivBackward0``. The node keeps its primitive's rules (it points
    to a copy that differs only in ``backward_name``); ``t`` is returned.

    Example:
        >>> name_node(ember.ones(2, requires_grad=True).sum() / 4, "MeanBackward0").grad_fn
        <MeanBackward0>
    """
    node = getattr(t, "_node", None)
    if type(node) is Node:
        key = (id(node.prim), name)
        renamed = _RENAMED.get(key)
        if renamed is None:
            renamed = _RENAMED[key] = copy.copy(node.prim)
            renamed.backward_name = name
        node.prim = renamed
    return t


def leaf_hooks(leaf: Tensor) -> NodeHooks | None:
    """The node hooks of a leaf's accumulator, if it has any (what the engine asks)."""
    acc = _ACCUMULATORS.get(id(leaf))
    return None if acc is None or acc.variable is not leaf else acc.node_hooks


WORTH_DROPPING = 64 * 1024  # bytes: smaller saved inputs are not worth the bookkeeping


class Node(_Hookable, metaclass=ABCMeta):
    """A recorded application of a primitive (PyTorch's ``grad_fn``). As PyTorch's
    ``graph.Node``, an ABC: an :class:`AccumulateGrad` is one too (registered), and so is a
    class passed to ``Node.register``.
    """

    __slots__ = ("prim", "inputs", "edges", "params", "versions", "outputs", "device", "hooks",
                 "retained", "stack", "released", "packed", "node_hooks", "__weakref__")

    def __init__(self, prim: Primitive, inputs: tuple, params: dict, versions: tuple | None,
                 outputs: tuple | None, device: Any) -> None:
        self.prim = prim
        self.inputs = inputs
        # Where each input's gradient goes, fixed now: (producing node, output index), or
        # (None, the leaf) for a leaf, or None for an input that needs no gradient. An in-place
        # op later gives a tensor new history; it does not change what was recorded before it.
        self.edges = tuple(None if not t._requires_grad else (t._node, t._idx)
                           if t._node is not None else (None, t) for t in inputs)
        self.params = params
        self.versions = versions  # input versions when recorded, if the rule reads inputs
        self.outputs = outputs    # ((array, version counter, version) or None, …) if the rule
        #                           reads outputs: one entry per output, None for those unread
        self.device = device
        self.hooks = None         # {output index: [hook, …]} of non-leaf tensors
        self.retained = None      # {output index: weakref to a tensor that retains its grad}
        self.stack = None         # the user's stack at creation, in anomaly mode
        self.released = False
        self.node_hooks = None    # a NodeHooks, once register_prehook/register_hook is called
        self.packed = None        # what saved-tensor hooks packed, if any
        if HOOKS_OPEN.count and SAVED_HOOKS.top is not None:
            _pack(self, SAVED_HOOKS.top)

    def __getattr__(self, attr: str) -> Any:
        # reached for the empty inputs/outputs slots of a node packed by saved-tensor hooks,
        # and for what a primitive reads of its nodes itself (a custom Function: its ctx's)
        if attr in ("inputs", "outputs"):
            packed = object.__getattribute__(self, "packed")
            if packed is not None:  # (the values themselves: another thread's backward may
                inputs, outputs = _unpack(self, packed)  # empty the slots again meanwhile)
                return inputs if attr == "inputs" else outputs
        elif not attr.startswith("__"):
            read = getattr(object.__getattribute__(self, "prim"), "node_attribute", None)
            if read is not None:
                return read(self, attr)
            if attr.startswith("_saved_"):
                try:
                    return self._read_saved(attr[len("_saved_"):])
                finally:
                    forget_unpacked(self)
        raise AttributeError(f"'Node' object has no attribute {attr!r}")

    def _read_saved(self, name: str) -> Any:
        """PyTorch's ``grad_fn._saved_<name>``: ``self`` and ``other`` (the first and second
        inputs) and ``result`` (the output) where the rule keeps their values, or a parameter
        of the op; or, for a primitive with a ``saved_as`` ({name: reader of a node}), those
        names only (``IndexBackward0._saved_indices``). Example: ``(x * w).grad_fn._saved_other
        is w``."""
        if self.released:
            raise GradError(f"{self.name()}._saved_{name}: its saved values were freed by "
                            "backward. Hint: pass retain_graph=True to backward() to read them "
                            "after it.")
        named = getattr(self.prim, "saved_as", None)  # (a rule's own names, PyTorch's)
        if named is not None:
            if name in named:
                return named[name](self)
        elif name in self.params:
            return self.params[name]
        elif name == "result" and self.outputs is not None and self.outputs[0] is not None:
            return self.out
        elif name in ("self", "other") and self.prim.save_inputs:
            i = name == "other"
            if i < len(self.inputs):
                return self.saved_input(i)
        raise AttributeError(f"'{self.name()}' object has no attribute '_saved_{name}'")

    def saved_input(self, i: int) -> Any:
        """Input ``i`` as ``grad_fn._saved_<name>`` gives it: None where the rule does not
        read its values (kept as :class:`Unsaved`), as PyTorch's."""
        held = self.inputs[i]
        return None if type(held) is Unsaved else held

    def __dir__(self) -> list[str]:
        names = getattr(self.prim, "saved_as", None) or ("self", "other", "result",
                                                         *self.params)
        saved = [f"_saved_{n}" for n in names if not self.released and _has(self, f"_saved_{n}")]
        return sorted({*super().__dir__(), *saved})

    def name(self) -> str:
        """PyTorch-style name, e.g. ``MulBackward0`` (PyTorch numbers its overloads; an Ember
        primitive has one, so always 0). A primitive may name itself with a ``backward_name``,
        as custom ops do."""
        given = getattr(self.prim, "backward_name", None)
        if given is not None:
            return given
        name = self.prim.name
        return "".join(part[:1].upper() + part[1:] for part in name.split("_")) + "Backward0"

    def __repr__(self) -> str:
        return f"<{self.name()}>"

    def __call__(self, *grads: Tensor) -> Any:
        """This node's backward on the gradients of its outputs: the gradients of its inputs
        (None for one needing none; one input gives one tensor), as calling PyTorch's
        ``grad_fn``.

        Example:
            >>> x = ember.tensor([1.0, 2.0], requires_grad=True)
            >>> (x * 3).grad_fn(ember.ones(2))
            (tensor([3., 3.]), None)
        """
        from ember.autograd.engine import call_node

        return call_node(self, grads)

    @property
    def next_functions(self) -> tuple[tuple[Node | AccumulateGrad | None, int], ...]:
        """Per input, where its gradient goes: ``(node, output index)``, ``(AccumulateGrad of
        the leaf, 0)``, or ``(None, 0)`` for an input needing none, as PyTorch's.

        Example:
            >>> (ember.ones(2, requires_grad=True) * 3).sum().grad_fn.next_functions
            ((<MulBackward0>, 0),)
        """
        return tuple((None, 0) if e is None else (accumulator(e[1]), 0) if e[0] is None else e
                     for e in self.edges)

    # -- what rules read ---------------------------------------------------------------------
    @property
    def out(self) -> Tensor:
        """The (first) output, as a tensor whose history is this node."""
        return self.output(0)

    @property
    def out_tensors(self) -> tuple[Tensor, ...]:
        """All outputs, as tensors whose history is this node."""
        return tuple(self.output(i) for i in range(len(self.outputs)))

    def output(self, index: int) -> Tensor:
        """Output ``index`` as a tensor; needs the primitive's ``save_outputs``."""
        from ember.tensor import _wrap

        saved = None if self.outputs is None else self.outputs[index]
        if saved is None:
            raise GradError(f"{self.prim.name}: its rule reads output {index} but the "
                            f"primitive's save_outputs does not keep it")
        array, counter, _ = saved
        return _wrap(array, self.device, True, self, index, counter)

    @property
    def needs_input_grad(self) -> tuple[bool, ...]:
        """For each input, whether it requires a gradient."""
        return tuple(t.requires_grad for t in self.inputs)

    def wants_grad(self, i: int) -> bool:
        """Whether the running backward pass uses input ``i``'s gradient: it requires one and,
        under ``autograd.grad(…, inputs)``, leads to one of those inputs (PyTorch's
        ``task_should_compute_output``). A rule with no derivative in an input raises only
        then, so ``grad(zeta(x, q), q)`` works while ``x`` requires grad, as in PyTorch."""
        edge = self.edges[i]
        return edge is not None and (BACKWARD_FILTER.edge is None or BACKWARD_FILTER.edge(edge))

    # -- bookkeeping the engine does ---------------------------------------------------------
    def check_versions(self) -> None:
        """Raises if a tensor this node's rule reads was modified in place since recording."""
        if self.versions is not None:
            for t, v in zip(self.inputs, self.versions):
                if t._vc.value != v:  # (then find which, and whether the rule reads it)
                    for i, (t, v) in enumerate(zip(self.inputs, self.versions)):
                        if t._vc.value != v and self.prim.reads(self, i):
                            self._modified("input", i, t.shape, t.dtype, v, t._vc.value)
                    break
        if self.outputs is not None:
            for i, saved in enumerate(self.outputs):
                if saved is None:
                    continue
                array, counter, v = saved
                if counter.value != v:
                    self._modified("output", i, array.shape, array.dtype, v, counter.value)

    def _modified(self, role: str, i: int, shape: tuple, dtype: object, saved: int,
                  now: int) -> None:
        raise GradError(
            f"backward of {self.prim.name}: {role} {i} of {self.prim.name} (a tensor of shape "
            f"{tuple(shape)}, dtype {getattr(dtype, 'name', dtype)}) was modified in place after "
            f"{self.prim.name} saved it for backward: it was at version {saved} and is now at "
            f"version {now}. Hint: call .clone() on it before the in-place op, or use the "
            f"out-of-place form (e.g. x = x + 1 instead of x += 1)."
            + self.where())

    def where(self) -> str:
        """In anomaly mode, the user's source line that made this node."""
        if not self.stack:
            return ""
        frame = self.stack[-1]
        return (f"\nThe forward op {self.prim.name} was called at {frame.filename}:"
                f"{frame.lineno}:\n    {frame.line}")

    def release(self) -> None:
        """Frees what backward needed, after backward (unless ``retain_graph``). The edges
        stay, as PyTorch keeps the graph's shape (``next_functions``) after backward. A node
        whose rule reads no values but small constants (``expand``, ``add``, ``x * 2``) keeps
        those and its inputs' shapes, and can be gone through again, as PyTorch's nodes that
        save no tensors can."""
        if _KEPT and self in _KEPT:  # (a live vjp_fn goes through it again)
            return
        free = getattr(self.prim, "release", None)  # (a custom Function's: its ctx's)
        if free is None and self.packed is None:
            kept = self._kept_inputs()
            if kept is not None:
                self.inputs = kept
                return
        self.inputs = self.outputs = self.versions = None
        self.released = True
        self.packed = None
        if free is not None:
            free(self)

    def _kept_inputs(self) -> tuple | None:
        """What a released node keeps of its inputs: small constants as they are, the others'
        shape and recorded history; None when releasing frees values the rule reads (an
        output's, or an input's other than a small constant's). One pass: this runs once a
        node, each backward."""
        if self.outputs is not None:
            for o in self.outputs:
                if o is not None:
                    return None
        prim = self.prim
        saves = prim.save_inputs
        kept = []
        for i, (t, e) in enumerate(zip(self.inputs, self.edges)):
            if type(t) is Unsaved or (t._node is None and not t.requires_grad and
                                      t._data.nbytes < WORTH_DROPPING):  # a small constant
                kept.append(t)
            elif saves and prim.reads(self, i):
                return None
            else:
                kept.append(Unsaved.as_recorded(t, e))
        return tuple(kept)


Node.register(AccumulateGrad)  # (isinstance(acc, Node), as torch's; type(acc) is not Node)

_KEPT: dict[Node, int] = {}  # nodes backward does not free: {node: how many holders keep it}
_KEPT_LOCK = threading.Lock()  # (holders sharing nodes may be dropped in two threads at once)


def pin_saved(nodes: Any, holder: object) -> None:
    """Backward passes leave ``nodes``' saved values while ``holder`` lives: a ``vjp_fn``
    goes through its level's nodes at each call, after a plain backward through its results
    too (PyTorch's level has a graph of its own, which that backward does not free)."""
    nodes = tuple(nodes)
    with _KEPT_LOCK:
        for node in nodes:
            _KEPT[node] = _KEPT.get(node, 0) + 1
    weakref.finalize(holder, _unpin, nodes)


def _unpin(nodes: tuple) -> None:
    with _KEPT_LOCK:
        for node in nodes:
            left = _KEPT.pop(node) - 1
            if left:
                _KEPT[node] = left


def _has(node: Node, attr: str) -> bool:
    try:
        getattr(node, attr)
    except AttributeError:
        return False
    return True


# -- the running backward pass ---------------------------------------------------------------
class _BackwardFilter(threading.local):
    """``edge`` is None (``backward()``: every input that requires grad gets one), or, while
    ``autograd.grad(…, inputs)`` runs, whether a node input's edge leads to one of ``inputs``;
    the engine sets it, :meth:`Node.wants_grad` reads it. Per thread, as the engine's run."""

    def __init__(self) -> None:
        self.edge: Callable[[tuple], bool] | None = None


BACKWARD_FILTER = _BackwardFilter()


def restore_inputs(node: Node) -> None:
    """Before a rule runs: the inputs the tape set aside (``drop_unread_inputs`` in
    ``ember.ops.primitive``), as tensors again."""
    inputs = node.inputs
    for t in inputs:
        if type(t) is Unsaved:
            node.inputs = tuple(e.tensor(node.device) if type(e) is Unsaved else e
                                for e in inputs)
            return


def keep_saved(roots: list, tensors: list[Tensor]) -> None:
    """The nodes in the history of ``roots`` that saved one of ``tensors`` or a view of one,
    unchanged since, read a copy of its value from now on: code about to write into a
    tensor's memory outside
    the tape (a compiled call's state write, eager code's rebinding) leaves their backward as
    eager's would be, reading the old tensor's value.

    Example:
        >>> x, h = ember.ones(2, requires_grad=True), ember.full((2,), 3.0)
        >>> y = (x * h).sum()
        >>> ember.autograd.graph.keep_saved([y], [h])
        >>> _ = h.data.fill_(5.0)  # (behind the tape, as a compiled call writes state)
        >>> y.backward()
        >>> x.grad
        tensor([3., 3.])
    """
    from ember.tensor import _wrap

    wanted = {id(t._vc) for t in tensors}  # (a view shares its base's counter)
    copies: dict[int, Tensor] = {}
    todo = [t._node for t in roots if getattr(t, "_node", None) is not None]
    seen: set[int] = set()
    while todo and wanted:
        node = todo.pop()
        if id(node) in seen or not isinstance(node, Node):
            continue
        seen.add(id(node))
        todo += [e[0] for e in node.edges if e is not None and e[0] is not None]
        if node.versions is None or node.packed is not None:
            continue
        inputs, versions = list(node.inputs), list(node.versions)
        for i, t in enumerate(inputs):
            if id(getattr(t, "_vc", None)) in wanted and versions[i] == t._vc.value:
                if id(t) not in copies:
                    copies[id(t)] = _wrap(t._data.copy(), t._device)
                inputs[i], versions[i] = copies[id(t)], copies[id(t)]._vc.value
        node.inputs, node.versions = tuple(inputs), tuple(versions)


LET_GO_BUDGET = 8  # nodes let_go looks at: x.op_(f(x)) and a write into a view need 1-4


def let_go(x: Tensor, start: Node, stop: Node | None) -> None:
    """``x`` (small: large inputs are not held anyway, see ``drop_unread_inputs``) is about to
    take the history ``start`` of an in-place op, recorded since its history was ``stop``. The
    nodes in between that hold ``x`` itself without reading its values (``x.add_(x.exp())``,
    the view node of ``x[0].mul_(2)``) keep its shape and recorded history instead: ``x``'s new
    history leads back to them, a reference cycle only the gc would free (PyTorch's nodes save
    no such input). Looks at a few nodes at most; a longer way keeps its cycle."""
    if _nothing_to_let_go(x, start, stop):
        return
    todo, seen, budget = [start], set(), LET_GO_BUDGET
    while todo and budget:
        node = todo.pop()
        if node is stop or type(node) is not Node or id(node) in seen:
            continue
        seen.add(id(node))
        budget -= 1
        if node.packed is None and node.inputs is not None:
            prim = node.prim
            unread = [i for i, t in enumerate(node.inputs)
                      if t is x and not (prim.save_inputs and prim.reads(node, i))]
            if unread:
                node.inputs = tuple(Unsaved.as_recorded(t, e) if i in unread else t
                                    for i, (t, e) in enumerate(zip(node.inputs, node.edges)))
        todo += [e[0] for e in node.edges if e is not None and e[0] is not None]


def _nothing_to_let_go(x: Tensor, node: Node, stop: Node | None) -> bool:
    """Whether ``node`` neither holds ``x`` nor leads elsewhere than to ``stop`` (``relu_``,
    ``y += z``): the usual case, told without the walk's allocations."""
    if type(node) is not Node or node.packed is not None or node.inputs is None:
        return False
    for t in node.inputs:
        if t is x:
            return False
    for e in node.edges:
        if e is not None and e[0] is not None and e[0] is not stop:
            return False
    return True


# the tools built on the above, importable from here as from torch.autograd.graph
from ember.autograd.gradient_edge import GradientEdge, get_gradient_edge  # noqa: E402
from ember.autograd.multi_grad_hook import register_multi_grad_hook  # noqa: E402
from ember.autograd.saved_values import (  # noqa: E402
    allow_mutation_on_saved_tensors,
    disable_saved_tensors_hooks,
    increment_version,
    save_on_cpu,
)

__all__ = ["AccumulateGrad", "GradientEdge", "Node", "allow_mutation_on_saved_tensors",
           "disable_saved_tensors_hooks", "get_gradient_edge", "increment_version",
           "register_multi_grad_hook", "save_on_cpu", "saved_tensors_hooks"]
