"""What the transforms share: choosing the differentiated arguments (``argnums``, pytrees),
and giving one reverse-mode level its own inputs and cutting its results loose."""

from __future__ import annotations

import weakref
from collections.abc import Callable
from typing import Any

from ember.autograd.forward import alias
from ember.autograd.grad_mode import no_grad
from ember.errors import ArgumentError, ArgumentTypeError, DTypeError, GradError
from ember.func.pytree import TreeSpec, tree_flatten, tree_unflatten
from ember.ops.primitive import DISPATCH
from ember.tensor import Tensor
from ember.version_counter import VersionCounter


def normalize_argnums(argnums: int | tuple[int, ...], nargs: int, who: str) -> tuple[int, ...]:
    """``argnums`` as a tuple of non-negative positions, checked against ``nargs`` (a bool
    counts as the int it is, as in PyTorch: ``True`` is 1)."""
    nums = (argnums,) if isinstance(argnums, int) else argnums
    if not (isinstance(nums, tuple) and all(isinstance(n, int) for n in nums)):
        raise ArgumentTypeError(f"{who}: argnums must be an int or a tuple of ints, got "
                                f"{argnums!r}")
    if not nums:
        raise ArgumentError(f"{who}: argnums must be a non-empty int or tuple of ints")
    out = []
    for n in nums:
        if not -nargs <= n < nargs:
            raise ArgumentError(f"{who}: argnums {n} is out of range for a function called with "
                                f"{nargs} positional arguments")
        out.append(int(n) % nargs)
    if len(set(out)) != len(out):
        raise ArgumentError(f"{who}: argnums must not repeat, got {argnums!r}")
    return tuple(out)


class DiffArgs:
    """The differentiated arguments of one call, flattened: ``leaves`` (tensors, in order),
    ``specs`` (one tree structure per differentiated argument) and :meth:`call`, which runs
    the function with other leaves in their place."""

    def __init__(self, func: Callable, args: tuple, argnums: int | tuple[int, ...],
                 who: str, complex_ok: bool = True) -> None:
        self.func, self.args, self.who = func, args, who
        self.argnums = normalize_argnums(argnums, len(args), who)
        self.as_tuple = not isinstance(argnums, int)
        self.leaves: list[Tensor] = []
        self.specs: list[TreeSpec] = []
        for n in self.argnums:
            leaves, spec = tree_flatten(args[n])
            for x in leaves:
                check_differentiable(x, who, f"argument {n}", complex_ok)
            self.leaves += leaves
            self.specs.append(spec)

    def call(self, leaves: list) -> Any:
        """``func`` with the differentiated leaves replaced by ``leaves``."""
        return self.func(*self.rebuild(leaves))

    def rebuild(self, leaves: list) -> list:
        args = list(self.args)
        start = 0
        for n, spec in zip(self.argnums, self.specs):
            args[n] = tree_unflatten(leaves[start:start + spec.num_leaves], spec)
            start += spec.num_leaves
        return args

    def split(self, values: list) -> Any:
        """Per-leaf values (gradients, Jacobian blocks) in the arguments' structure: one tree,
        or a tuple of trees when ``argnums`` was a tuple."""
        trees, start = [], 0
        for spec in self.specs:
            trees.append(tree_unflatten(values[start:start + spec.num_leaves], spec))
            start += spec.num_leaves
        return tuple(trees) if self.as_tuple else trees[0]


def check_differentiable(x: Any, who: str, where: str, complex_ok: bool = True) -> None:
    if not isinstance(x, Tensor):
        raise TypeError(f"{who}: {where} must be a tensor or a pytree (tuple, list, dict) of "
                        f"tensors to differentiate it, got {type(x).__name__}")
    if x.dtype.is_complex and not complex_ok:
        raise DTypeError(f"{who}: {where} is {x.dtype.name}; {who} takes real inputs only, as "
                         "PyTorch's. Hint: differentiate with respect to ember.view_as_real(x)")
    if not (x.dtype.is_floating_point or x.dtype.is_complex):
        raise DTypeError(f"{who}: {where} has dtype {x.dtype.name}; only floating and complex "
                         "tensors can be differentiated. Hint: convert it with .float(), or "
                         "leave it out of argnums")


def split_aux(result: Any, has_aux: bool, who: str) -> tuple[Any, Any]:
    if not has_aux:
        return result, None
    if not (isinstance(result, (tuple, list)) and len(result) == 2):
        raise GradError(f"{who}(f, has_aux=True): f must return a pair (output, aux), got "
                        f"{type(result).__name__}")
    return result[0], result[1]


# -- one reverse-mode level ----------------------------------------------------------------------
def track(x: Tensor) -> tuple[Tensor, Tensor]:
    """For an input of a reverse-mode transform: ``(target, passed)``. ``target`` is what the
    gradient is taken with respect to: a new leaf, or, when ``x`` already has history an outer
    level differentiates, an identity op on it (so the outer level sees through). ``passed`` is
    what the function receives: an identity op on ``target``, so the function may even modify
    it in place. Both go through every active transform (forward levels see their tangent).

    Neither is a view of ``x``: an in-place write by the function gives ``passed`` new
    history, never the caller's ``x`` (which would stop being a leaf, or start requiring
    grad). The memory, and so ``x``'s values and version, are shared. ``passed`` is no
    autograd view of ``target`` either: a write under ``no_grad`` (``F.embedding``'s
    ``max_norm`` renorm) leaves its history, and so its path to ``target``, as PyTorch's
    leaves it (a view would take the history of a base that needs no grad)."""
    root = alias(x)
    root._view = None
    if x._vc.inference:  # (as torch.func's wrappers, no inference tensor: a tape may save it)
        root._vc = VersionCounter()
    target = alias(root)
    if not target.requires_grad:
        target._requires_grad = True
    passed = alias(target)
    passed._view = None
    return target, passed


# The leaves :func:`track` made for levels whose function has returned: a tape reaching one
# reaches no outer level (a vjp_fn's result, differentiable in its cotangent, still links to
# its level's targets).
_RETIRED: weakref.WeakValueDictionary[int, Tensor] = weakref.WeakValueDictionary()


def retire(targets: list) -> None:
    """Marks a level's targets as no longer any level's inputs (its function returned)."""
    for t in targets:
        if t._node is None:
            _RETIRED[id(t)] = t


def cut(t: Any) -> Any:
    """Cuts a result from this reverse level's tape but not from active forward levels."""
    if not isinstance(t, Tensor) or not t.requires_grad:
        return t
    if DISPATCH.handler is None:
        return t.detach()
    with no_grad():
        return alias(t)


def unwrap(t: Any, walk: TapeWalk) -> Any:
    """A transform's result as its caller sees it, out of all other transforms: cut from the
    tape unless that reaches past the level's targets to a tensor the caller differentiates
    (as torch.func's unwrapping, result by result: with ``argnums=(0, 1)``, a gradient
    depending only on the other argument needs no grad even where its sibling does).
    ``walk`` is the level's :class:`TapeWalk` (``through_targets``), one for all its results.
    """
    if (isinstance(t, Tensor) and t.requires_grad and DISPATCH.handler is None
            and not walk.reaches_outer([t])):
        return cut(t)
    return t


def reaches_outer(outs: list, targets: list, through_targets: bool = False) -> bool:
    """Whether the tape from ``outs`` reaches a tensor needing a gradient other than
    ``targets``: then an outer reverse level differentiates through this one (see
    :class:`TapeWalk`)."""
    return TapeWalk(targets, through_targets).reaches_outer(outs)


class TapeWalk:
    """What the tape behind a level's results reaches, for a level's ``targets``: a tensor
    needing a gradient other than them, or with ``through_targets`` a target that has
    history too (one an outer level tracks, see :func:`track`), without walking behind it.
    Each node's answer is kept, so a level's walks together cross its tape once (a walk per
    result over a deep network's tape, each building the targets' sets, made a level
    quadratic in its depth)."""

    def __init__(self, targets: list, through_targets: bool = False) -> None:
        self.stop = {t._node for t in targets if t._node is not None}
        self.ids = {id(t) for t in targets}
        self.through_targets = through_targets
        self.memo: dict = {}  # {node: whether it reaches}

    def reaches_outer(self, outs: list) -> bool:
        """Whether the tape from ``outs`` reaches outside the level (children settled before
        their parents, each node once)."""
        memo, stop = self.memo, self.stop
        roots = [o._node for o in outs if isinstance(o, Tensor) and o._node is not None]
        stack = [(node, False) for node in roots]
        while stack:
            node, children_done = stack.pop()
            if node in memo:
                continue
            if node in stop:
                memo[node] = self.through_targets
            elif not children_done:
                stack.append((node, True))
                stack.extend((edge[0], False) for edge in node.edges
                             if edge is not None and edge[0] is not None and edge[0] not in memo)
            else:
                memo[node] = any(_leaf_outside(edge[1], self.ids) if edge[0] is None
                                 else memo[edge[0]] for edge in node.edges if edge is not None)
        return any(memo[node] for node in roots)


def _leaf_outside(leaf: Any, ids: set) -> bool:
    """Whether a leaf of the tape (read from its edge, as a released node's inputs are
    placeholders) needs a gradient from outside the level: not one of its targets, nor a
    retired level's."""
    return id(leaf) not in ids and _RETIRED.get(id(leaf)) is not leaf
