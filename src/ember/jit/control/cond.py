"""``ember.cond``: PyTorch's ``torch.cond``, a branch on a tensor that every transform keeps.

Both branches are traced into sub-graphs (:mod:`ember.jit.control.branch`) and one ``cond``
equation holds them, with the predicate, the operands and the tensors the branches capture
as its inputs. Eagerly the equation runs the branch the predicate picks; under ``ember.jit``
it is one equation of the graph (an ``if``/``else`` in the generated code); its gradient is a
``cond`` over the branches' gradients, so compiled training steps and higher derivatives
work; ``vmap`` keeps it when the predicate is the same for every sample and otherwise runs
both branches and selects with ``where``.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager
from functools import cache
from typing import Any

from ember.autograd.engine import grad as autograd_grad
from ember.autograd.grad_mode import enable_grad
from ember.errors import GradError, OpError
from ember.func.forward import jvp
from ember.func.pytree import tree_flatten, tree_unflatten
from ember.jit.control.branch import Branch, call_graph, join_captures, run_graph, trace_branch
from ember.jit.ir import Graph
from ember.ops.creation import zeros, zeros_like
from ember.ops.primitive import _FLOAT, DISPATCH, Primitive, TensorSpec, apply
from ember.ops.random import default_generator
from ember.tensor import Tensor


class Cond(Primitive):
    """``outputs = cond(pred, *operands, *captured, branches=(true_graph, false_graph))``:
    one instance per number of outputs and purity (a branch that draws random numbers
    makes the equation impure: no pass folds, merges or drops it)."""

    name = "cond"
    complex_grad = True

    def __init__(self, nout: int, pure: bool) -> None:
        self.nout, self.pure = nout, pure

    def forward(self, xp: Any, pred: Any, *arrays: Any, branches: tuple[Graph, Graph],
                rng: Any = None) -> Any:
        outs = run_graph(branches[0] if bool(pred) else branches[1], xp, arrays)
        return outs[0] if self.nout == 1 else tuple(outs)

    def infer(self, pred: TensorSpec, *specs: TensorSpec, branches: tuple[Graph, Graph],
              rng: Any = None) -> Any:
        outs = tuple(TensorSpec(v.shape, v.dtype) for v in branches[0].outputs)
        return outs[0] if self.nout == 1 else outs

    def emit(self, eqn: Any, function: Callable[[Graph, str], str]) -> list[str]:
        """Generated code: ``if pred:`` one branch's function ``else:`` the other's."""
        true_graph, false_graph = eqn.params["branches"]
        pred, *args = (v.name for v in eqn.inputs)
        outs = ", ".join(v.name for v in eqn.outputs) + ("," if self.nout == 1 else "")
        call = f"({', '.join(args)})"
        return [f"if {pred}:", f"    {outs} = {function(true_graph, 'true')}{call}",
                "else:", f"    {outs} = {function(false_graph, 'false')}{call}"]

    def vjp(self, ctx: Any, *grads: Tensor | None) -> tuple:
        pred, *xs = ctx.inputs
        true_graph, false_graph = ctx.params["branches"]
        rng = ctx.params.get("rng")
        if not self.pure and rng is None:
            raise GradError("cond: the gradient of a branch that draws random numbers (dropout, "
                            "randn) cannot be taken in compiled code (ember.jit) or under a "
                            "transform: its backward recomputes the branch and would draw "
                            "other numbers than the forward did. Hint: differentiate it in "
                            "eager code, or draw the random values outside the cond and pass "
                            "them in as operands")
        wanted = [x.dtype.np in _FLOAT and need for x, need in zip(xs, ctx.needs_input_grad[1:])]
        cotangents = [zeros(v.shape, dtype=v.dtype, device=pred.device) if g is None else g
                      for v, g in zip(true_graph.outputs, grads) if v.dtype.np in _FLOAT]
        n = len(xs)

        def backward_of(graph: Graph) -> Callable:
            def branch(*args: Tensor) -> tuple:
                return _unaliased(graph_vjp(graph, args[:n], args[n:], wanted), args)
            return branch

        with _drawing_from(rng):
            found = cond(pred, backward_of(true_graph), backward_of(false_graph),
                         (*xs, *cotangents))
        found = iter(found)
        return (None, *(next(found) if w else None for w in wanted))

    def jvp(self, ctx: Any, *tangents: Tensor | None) -> Any:
        pred, *xs = ctx.inputs
        true_graph, false_graph = ctx.params["branches"]
        ts = [zeros_like(x) if t is None else t for x, t in zip(xs, tangents[1:])]
        n = len(xs)

        def tangent_of(graph: Graph) -> Callable:
            def branch(*args: Tensor) -> tuple:
                return _unaliased(jvp(lambda *a: tuple(call_graph(graph, a)), tuple(args[:n]),
                                      tuple(args[n:]))[1], args)
            return branch

        out = cond(pred, tangent_of(true_graph), tangent_of(false_graph), (*xs, *ts))
        return out[0] if self.nout == 1 else tuple(out)


@contextmanager
def _drawing_from(state: Any) -> Iterator[None]:
    """The default generator at ``state`` (where a random branch's forward drew from), if
    given, while its backward recomputes it; put back after."""
    if state is None:
        yield
        return
    now = default_generator._state()  # (bookkeeping: no effect recorded in a trace)
    default_generator._restore(state._data)
    try:
        yield
    finally:
        default_generator._restore(now._data)


def graph_vjp(graph: Graph, xs: tuple, cotangents: tuple, wanted: list[bool]) -> tuple:
    """The gradients of a sub-graph's float outputs, weighted by ``cotangents``, with respect
    to its inputs marked ``wanted`` (zeros where an output does not depend on one)."""
    with enable_grad():
        leaves = [x.detach().requires_grad_(w) for x, w in zip(xs, wanted)]
        outs = [o for o, v in zip(call_graph(graph, tuple(leaves)), graph.outputs)
                if v.dtype.np in _FLOAT]
        pairs = [(o, g) for o, g in zip(outs, cotangents) if o.requires_grad]
        targets = [x for x, w in zip(leaves, wanted) if w]
        found = autograd_grad([o for o, _ in pairs], targets, [g for _, g in pairs],
                              allow_unused=True) if pairs else [None] * len(targets)
    return tuple(zeros_like(x) if g is None else g for x, g in zip(targets, found))


def _unaliased(outs: tuple, args: tuple) -> tuple:
    """A derivative branch's results, copied where one is (a view of) an argument: the
    derivative of ``x + 1`` is its cotangent itself, and a branch may not return an input."""
    return tuple(o.clone() if any(o._device.xp.may_share_memory(o._data, a._data)
                                  for a in args) else o for o in outs)


@cache
def cond_primitive(nout: int, pure: bool) -> Cond:
    return Cond(nout, pure)


def cond(pred: bool | Tensor, true_fn: Callable, false_fn: Callable,
         operands: tuple | list = ()) -> Any:
    """Returns ``true_fn(*operands)`` if ``pred`` else ``false_fn(*operands)``, as
    ``torch.cond``: a branch on a tensor that ``ember.jit`` compiles (both branches become
    sub-graphs of one ``cond`` equation), ``vmap`` batches and autograd differentiates
    through the branch taken.

    ``pred`` is a Python bool (the branch simply runs, as in PyTorch) or a tensor with one
    element. The branches take the operands (a tuple or list of possibly nested tuples,
    lists and dicts of tensors) and must return the same structure of tensors, with the same
    shapes and dtypes, none of them an operand or a view of one. Both branches run once each
    call to check this (in eager code; compiled code runs one).

    Example:
        >>> x = ember.tensor([1.0, 2.0])
        >>> ember.cond(x.sum() > 0, lambda x: x * 2, lambda x: x - 1, (x,))
        tensor([2., 4.])
    """
    if isinstance(pred, bool | int | float):
        return true_fn(*operands) if pred else false_fn(*operands)
    _check_arguments(pred, true_fn, false_fn, operands)
    leaves, spec = tree_flatten(tuple(operands))
    branches = [trace_branch("cond", role, lambda *xs, fn=fn: fn(*tree_unflatten(list(xs), spec)),
                             leaves, fn)
                for role, fn in (("true_fn", true_fn), ("false_fn", false_fn))]
    _check_same_outputs(*branches)
    captured = join_captures(branches)
    graphs = (branches[0].graph, branches[1].graph)
    pure = all(e.prim.pure for g in graphs for e in g.eqns)
    prim = cond_primitive(len(graphs[0].outputs), pure)
    # (eager: where a random branch draws from, for its backward to draw the same numbers)
    rng = {"rng": default_generator.get_state()} if not pure and \
        DISPATCH.only_observers() else {}
    out = apply(prim, pred, *leaves, *captured, branches=graphs, **rng)
    return tree_unflatten(list(out) if prim.nout > 1 else [out], branches[0].spec)


def _check_arguments(pred: Any, true_fn: Any, false_fn: Any, operands: Any) -> None:
    if not isinstance(pred, Tensor):
        raise OpError(f"cond: expected pred to be a bool or a tensor, but got "
                      f"{type(pred).__name__} {pred!r}")
    if pred.numel() != 1:
        raise OpError(f"cond: expected pred to be a bool or a single-element tensor, but got "
                      f"a tensor of shape {tuple(pred.shape)}. Hint: reduce it first "
                      "(pred.all(), pred.any(), x.sum() > 0)")
    if not callable(true_fn) or not callable(false_fn):
        raise OpError("cond: expected both branches (true_fn, false_fn) to be callable")
    if not isinstance(operands, tuple | list) or not all(
            isinstance(t, Tensor) for t in tree_flatten(tuple(operands))[0]):
        raise OpError("cond: expected operands to be a tuple or list of (possibly nested "
                      f"tuples, lists and dicts of) tensors, but got {type(operands).__name__}")


def _check_same_outputs(a: Branch, b: Branch) -> None:
    """Both branches return one structure, with equal shapes and dtypes (PyTorch's rule)."""
    if a.spec != b.spec:
        raise OpError(f"cond: true_fn and false_fn return different structures: {a.spec} and "
                      f"{b.spec}")
    for i, (u, v) in enumerate(zip(a.graph.outputs, b.graph.outputs)):
        if u.shape != v.shape or u.dtype is not v.dtype:
            raise OpError(f"cond: output {i} of true_fn is {u.type_str}, of false_fn "
                          f"{v.type_str}: the branches must return the same shapes and dtypes. "
                          "Hint: cast or reshape in the branch that differs")
