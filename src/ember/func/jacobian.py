"""Jacobians and Hessians: :func:`jacrev` (one vector-Jacobian product per output element),
:func:`jacfwd` (one forward-mode pass per input element), :func:`hessian`
(``jacfwd(jacrev(f))``) and :func:`hvp` (forward-over-reverse, one pass).

Inputs and outputs may be pytrees of tensors of any shape; the Jacobian block of output
``o`` with respect to input ``x`` has shape ``o.shape + x.shape``, arranged as PyTorch's
``torch.func``: the output's structure outside, the inputs' (``argnums``) inside.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any

from ember.errors import GradError
from ember.func._args import DiffArgs
from ember.func.forward import jvp, jvp_leaves
from ember.func.pytree import tree_flatten, tree_unflatten
from ember.func.reverse import _Level, value_and_grad
from ember.ops.creation import zeros
from ember.ops.join import stack
from ember.tensor import Tensor, _wrap

__all__ = ["hessian", "hvp", "jacfwd", "jacrev"]


def _basis(like: Tensor, k: int) -> Tensor:
    """The ``k``-th one-hot tensor of ``like``'s shape and dtype."""
    a = like._device.xp.zeros(like.shape, dtype=like._data.dtype)
    a.reshape(-1)[k] = 1
    return _wrap(a, like._device)


def _numel(t: Tensor) -> int:
    return int(t._data.size)


def _block(parts: list, out: Tensor, x: Tensor, axis: int) -> Tensor:
    """Stacks per-element results into the ``out.shape + x.shape`` Jacobian block."""
    shape = tuple(out.shape) + tuple(x.shape)
    if not parts:
        return zeros(shape, dtype=x.dtype, device=x.device)
    return stack(parts, dim=axis).reshape(shape)


def _check_outputs(leaves: list, who: str) -> None:
    for o in leaves:
        if not isinstance(o, Tensor) or not o.dtype.is_floating_point:
            got = o.dtype.name if isinstance(o, Tensor) else type(o).__name__
            raise GradError(f"{who}: the outputs of f must be floating tensors (or pytrees of "
                            f"them), got {got}")


def jacrev(func: Callable, argnums: int | tuple[int, ...] = 0, *, has_aux: bool = False,
           chunk_size: int | None = None) -> Callable:
    """The function computing the Jacobian of ``func`` with respect to ``argnums`` by reverse
    mode: one vector-Jacobian product per output element (best for few outputs).
    ``chunk_size`` is accepted for PyTorch compatibility.

    Example:
        >>> J = ember.func.jacrev(ember.sin)(ember.zeros(3))
        >>> J.shape
        ember.Size([3, 3])
    """
    @functools.wraps(func)
    def wrapper(*args: Any) -> Any:
        diff = DiffArgs(func, args, argnums, "jacrev", complex_ok=False)
        level = _Level(diff, has_aux, "jacrev")
        outs = level.out_leaves
        _check_outputs(outs, "jacrev")
        blocks = []
        for i, o in enumerate(outs):
            rows = []
            for m in range(_numel(o)):
                cots = [_basis(o, m) if j == i else None for j in range(len(outs))]
                rows.append(level.pull(cots, retain=True))
            blocks.append(diff.split([_block([r[j] for r in rows], o, x, 0)
                                      for j, x in enumerate(diff.leaves)]))
        jac = tree_unflatten(blocks, level.out_spec)
        return (jac, level.results()[1]) if has_aux else jac
    return wrapper


def jacfwd(func: Callable, argnums: int | tuple[int, ...] = 0, has_aux: bool = False, *,
           randomness: str = "error") -> Callable:
    """The function computing the Jacobian of ``func`` with respect to ``argnums`` by forward
    mode: one jvp pass per input element (best for few inputs), each on copies of the
    differentiated inputs (so in-place writes to them neither compound across passes nor
    reach the caller). ``randomness`` is accepted for PyTorch compatibility.

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

        def call(*xs: Tensor) -> Any:
            # on copies: a func writing its inputs in place sees the same values every pass
            return diff.call([x.clone() for x in xs])
        columns = []  # per input leaf: per element: the output tangents
        result = None
        for j, x in enumerate(leaves):
            cols = []
            for k in range(_numel(x)):
                tangents = [_basis(x, k) if jj == j else None for jj in range(len(leaves))]
                result, tangent_of = jvp_leaves(call, leaves, tangents)
                cols.append([tangent_of(o) for o in _outputs(result, has_aux)])
            columns.append(cols)
        if result is None:  # no input element at all: run once for the outputs' structure
            result, _ = jvp_leaves(call, leaves, [None] * len(leaves))
        out_leaves = _outputs(result, has_aux)
        out_spec = tree_flatten(result[0] if has_aux else result)[1]
        blocks = [diff.split([_block([c[i] for c in columns[j]], o, x, -1)
                              for j, x in enumerate(leaves)])
                  for i, o in enumerate(out_leaves)]
        jac = tree_unflatten(blocks, out_spec)
        return (jac, result[1]) if has_aux else jac
    return wrapper


def _outputs(result: Any, has_aux: bool) -> list:
    from ember.func._args import split_aux

    out, _ = split_aux(result, has_aux, "jacfwd")
    leaves = tree_flatten(out)[0]
    _check_outputs(leaves, "jacfwd")
    return leaves


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
