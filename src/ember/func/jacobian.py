"""Jacobians and Hessians: :func:`jacrev` (the vector-Jacobian products of all output
elements as one ``vmap``-ed backward pass), :func:`jacfwd` (the forward-mode passes of all
input elements as one ``vmap``-ed pass), :func:`hessian`
(``jacfwd(jacrev(f))``) and :func:`hvp` (forward-over-reverse, one pass).

Inputs and outputs may be pytrees of tensors of any shape; the Jacobian block of output
``o`` with respect to input ``x`` has shape ``o.shape + x.shape``, arranged as PyTorch's
``torch.func``: the output's structure outside, the inputs' (``argnums``) inside.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any

from ember.errors import ArgumentError, GradError, OpError
from ember.func._args import DiffArgs, TapeWalk, split_aux, unwrap
from ember.func.batching.sampling import RandomUnderVmap
from ember.func.forward import jvp, jvp_leaves
from ember.func.pytree import tree_flatten, tree_unflatten
from ember.func.reverse import _Level, value_and_grad
from ember.func.vmap import BatchedValueRead, NestedRuleBackward, vmap
from ember.ops.creation import ones_like, zeros
from ember.ops.join import cat, stack
from ember.ops.random import get_rng_state, set_rng_state
from ember.tensor import Tensor, _wrap

__all__ = ["hessian", "hvp", "jacfwd", "jacrev"]


def _numel(t: Tensor) -> int:
    return int(t._data.size)


def _basis(like: Tensor, rows: int, start: int) -> Tensor:
    """``rows`` tangents (or cotangents) of ``like``'s shape and dtype, stacked on axis 0:
    row ``start + k`` is the ``k``-th one-hot tensor, the other rows are zeros (``start`` may
    be negative or past the end: a chunk's slice of a longer basis)."""
    n = _numel(like)
    xp = like._device.xp
    a = xp.zeros((rows, n), dtype=like._data.dtype)
    k = xp.arange(max(0, -start), max(0, min(n, rows - start)))
    a[k + start, k] = 1
    return _wrap(a.reshape((rows,) + tuple(like.shape)), like._device)


def _check_outputs(leaves: list, who: str) -> None:
    for o in leaves:
        if not isinstance(o, Tensor) or not o.dtype.is_floating_point:
            got = o.dtype.name if isinstance(o, Tensor) else type(o).__name__
            raise GradError(f"{who}: the outputs of f must be floating tensors (or pytrees of "
                            f"them), got {got}")


_LOOP_ON = (BatchedValueRead, NestedRuleBackward, RandomUnderVmap)


def vmapped_rows(pull: Callable, bases: list, who: str, hint: str | None = None,
                 randomness: str = "error") -> Any:
    """``vmap(pull)(*bases)`` (a None basis is passed unbatched), or None where the batched
    pass cannot run and the caller goes one row (column) at a time: a custom Function, or a
    hook, reading batched values as NumPy / Python numbers, or a Function batched by its own
    vmap rule meeting an enclosing vmap. A random op refused in the batched pass is
    re-raised with ``hint`` (the caller's way out) where given."""
    try:
        return vmap(pull, in_dims=tuple(None if b is None else 0 for b in bases),
                    randomness=randomness)(*bases)
    except (GradError, OpError) as exc:
        cause = exc
        while cause is not None and not isinstance(cause, _LOOP_ON):
            cause = cause.__cause__
        if isinstance(cause, RandomUnderVmap) and hint is not None:
            raise GradError(f"{who}: a random operation ran in the backward pass, which {who} "
                            "runs for all rows at once as one vmap-ed pass (as PyTorch's), "
                            f"where random ops are refused ({cause}). Hint: {hint}") from exc
        if cause is None or isinstance(cause, RandomUnderVmap):
            raise
        return None


def jacrev(func: Callable, argnums: int | tuple[int, ...] = 0, *, has_aux: bool = False,
           chunk_size: int | None = None) -> Callable:
    """The function computing the Jacobian of ``func`` with respect to ``argnums`` by reverse
    mode: one forward pass, then the vector-Jacobian products of all output elements as one
    ``vmap``-ed backward pass (best for few outputs); ``chunk_size`` rows at a time if given
    (less memory: the one-hot cotangents are made a chunk at a time).

    Example:
        >>> J = ember.func.jacrev(ember.sin)(ember.zeros(3))
        >>> J.shape
        ember.Size([3, 3])
    """
    if chunk_size is not None and (not isinstance(chunk_size, int) or chunk_size < 1):
        raise ArgumentError(f"jacrev: chunk_size must be a positive int or None, got "
                            f"{chunk_size!r}")

    @functools.wraps(func)
    def wrapper(*args: Any) -> Any:
        diff = DiffArgs(func, args, argnums, "jacrev", complex_ok=False)
        level = _Level(diff, has_aux, "jacrev")
        outs = level.out_leaves
        _check_outputs(outs, "jacrev")
        sizes = [_numel(o) for o in outs]
        starts = [sum(sizes[:i]) for i in range(len(outs))]
        rows = [unwrap(r, level.walk)
                for r in _rows(level, diff.leaves, sizes, starts, chunk_size)]
        blocks = [diff.split([(r if n == r.shape[0] else r.narrow(0, s, n)).reshape(
                                  tuple(o.shape) + tuple(x.shape))
                              for r, x in zip(rows, diff.leaves)])
                  for o, s, n in zip(outs, starts, sizes)]
        jac = tree_unflatten(blocks, level.out_spec)
        return (jac, level.results()[1]) if has_aux else jac
    return wrapper


def _rows(level: _Level, leaves: list, sizes: list, starts: list,
          chunk_size: int | None) -> list:
    """The vector-Jacobian products of all output elements (of all output leaves together, in
    order), one ``(rows, *x.shape)`` tensor per input leaf ``x``: ``vmap``-ed over the
    one-hot cotangents, ``chunk_size`` rows at a time; a plain backward for one row."""
    outs, total = level.out_leaves, sum(sizes)
    if total == 0:
        return [zeros((0,) + tuple(x.shape), dtype=x.dtype, device=x.device) for x in leaves]
    if total == 1:  # a gradient
        return [g.unsqueeze(0) for g in
                level.pull([ones_like(o) if n else None for o, n in zip(outs, sizes)],
                           retain=level.create)]

    def pull(*cotangents: Tensor | None) -> list:
        return level.pull(list(cotangents), retain=True)
    step, pieces, loop = chunk_size or total, [], False
    for a in range(0, total, step):
        m = min(step, total - a)
        if not loop:
            bases = [_basis(o, m, s - a) if s < a + m and a < s + n else None
                     for o, s, n in zip(outs, starts, sizes)]
            got = vmapped_rows(pull, bases, "jacrev", "compute the rows one at a time with "
                               "ember.func.vjp's vjp_fn, or use jacfwd")
            loop = got is None
        if loop:  # one row at a time, each pulling through its own output leaf only
            got = [stack(r) for r in zip(*(pull(*_one_hot(outs, starts, sizes, r))
                                           for r in range(a, a + m)))]
        pieces.append(got)
    return pieces[0] if len(pieces) == 1 else [cat(list(p)) for p in zip(*pieces)]


def _one_hot(outs: list, starts: list, sizes: list, r: int) -> list:
    """The cotangents of row ``r``: one-hot in the output leaf it is in, None elsewhere."""
    return [_basis(o, 1, s - r)[0] if s <= r < s + n else None
            for o, s, n in zip(outs, starts, sizes)]


def jacfwd(func: Callable, argnums: int | tuple[int, ...] = 0, has_aux: bool = False, *,
           randomness: str = "error") -> Callable:
    """The function computing the Jacobian of ``func`` with respect to ``argnums`` by forward
    mode: one ``vmap``-ed jvp pass over all input elements (best for few inputs), on copies
    of the differentiated inputs (in-place writes to them do not reach the caller).
    ``randomness`` is ``vmap``'s: random ops in ``func`` are refused (``"error"``), drawn once
    for all columns (``"same"``) or per column (``"different"``).

    Example:
        >>> J = ember.func.jacfwd(lambda x: x ** 2)(ember.tensor([1.0, 2.0]))
        >>> J
        tensor([[2., 0.],
                [0., 4.]])
    """
    @functools.wraps(func)
    def wrapper(*args: Any) -> Any:
        diff = DiffArgs(func, args, argnums, "jacfwd", complex_ok=False)
        leaves = diff.leaves
        sizes = [_numel(x) for x in leaves]
        starts = [sum(sizes[:j]) for j in range(len(leaves))]
        seen: dict = {}

        def push(*tangents: Tensor | None) -> tuple:
            # on copies: a func writing its inputs in place leaves the caller's alone
            result, tangent_of = jvp_leaves(lambda *xs: diff.call([x.clone() for x in xs]),
                                            leaves, list(tangents))
            out, aux = split_aux(result, has_aux, "jacfwd")
            out_leaves, seen["out"] = tree_flatten(out)
            _check_outputs(out_leaves, "jacfwd")
            aux_leaves, seen["aux"] = tree_flatten(aux)
            seen["plain"] = [a if not isinstance(a, Tensor) else None for a in aux_leaves]
            return ([tangent_of(o) for o in out_leaves],
                    [a for a in aux_leaves if isinstance(a, Tensor)])
        total = sum(sizes)
        if total:
            bases = [_basis(x, total, s) for x, s in zip(leaves, starts)]
            got = vmapped_rows(push, bases, "jacfwd", randomness=randomness)
            if got is None:  # (f runs again, column by column)
                cols, aux_t = _column_by_column(push, bases, total, randomness)
            else:
                cols, aux_t = got[0], [a.select(0, 0) for a in got[1]]
        else:  # no input element: one plain pass gives the outputs' shapes
            cols, aux_t = push(*[None] * len(leaves))
            cols = [zeros((0,) + tuple(c.shape), dtype=c.dtype, device=c.device) for c in cols]
        walk = TapeWalk([], through_targets=True)  # (one for all the columns: see unwrap)
        blocks = [diff.split([_columns(unwrap(c, walk), x, s)
                              for x, s in zip(leaves, starts)]) for c in cols]
        jac = tree_unflatten(blocks, seen["out"])
        if not has_aux:
            return jac
        it = iter(aux_t)
        aux = [next(it) if a is None else a for a in seen["plain"]]
        return jac, tree_unflatten(aux, seen["aux"])
    return wrapper


def _column_by_column(push: Callable, bases: list, total: int, randomness: str) -> tuple:
    """``vmap(push)(*bases)`` as a loop (see :func:`vmapped_rows`): each column in a vmap of
    one sample over nothing, which keeps ``randomness`` (refused, or with ``"same"`` each
    column from the same random state) while the tangents stay unbatched."""
    state = get_rng_state() if randomness == "same" else None
    one = zeros(1)
    results = []
    for k in range(total):
        if state is not None:
            set_rng_state(state)
        cols, aux = vmap(lambda _, k=k: push(*[b[k] for b in bases]), randomness=randomness)(one)
        results.append(([c[0] for c in cols], [a[0] for a in aux]))
    return [stack(c) for c in zip(*(r[0] for r in results))], results[0][1]


def _columns(tangents: Tensor, x: Tensor, start: int) -> Tensor:
    """The ``out.shape + x.shape`` Jacobian block from the output tangents of all columns
    (``(columns, *out.shape)``): those of ``x``'s elements, moved last."""
    n = _numel(x)
    part = tangents.narrow(0, start, n)
    return part.movedim(0, -1).reshape(tuple(tangents.shape[1:]) + tuple(x.shape))


def hessian(func: Callable, argnums: int | tuple[int, ...] = 0) -> Callable:
    """The function computing the Hessian of a scalar ``func``: ``jacfwd(jacrev(func))``.

    Example:
        >>> H = ember.func.hessian(lambda x: (x ** 3).sum())(ember.tensor([1.0, 2.0]))
        >>> H
        tensor([[ 6.,  0.],
                [ 0., 12.]])
    """
    return jacfwd(jacrev(func, argnums), argnums)


def hvp(func: Callable, primals: tuple, tangents: tuple) -> tuple[Any, tuple]:
    """Hessian-vector product of a scalar ``func`` at ``primals`` along ``tangents``, by
    forward-over-reverse (one forward pass through the backward pass, no Hessian formed).
    Returns ``(func(*primals), hvp)`` with ``hvp`` shaped as ``primals`` (a tuple).

    Example:
        >>> value, (hv,) = ember.func.hvp(lambda x: (x ** 3).sum(), (ember.tensor([1.0, 2.0]),),
        ...                               (ember.ones(2),))
        >>> hv
        tensor([ 6., 12.])
    """
    if not isinstance(primals, tuple):
        raise TypeError(f"hvp: primals must be a tuple, got {type(primals).__name__}")
    both = value_and_grad(func, argnums=tuple(range(len(primals))))
    (value, _), (_, hv) = jvp(both, primals, tangents)
    return value, hv
