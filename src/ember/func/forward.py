"""Forward-mode transforms: :func:`jvp` (``linearize`` builds on it).

True forward mode: one pass computes the values and, through each primitive's ``jvp`` rule,
their tangents (``ember.autograd.forward.ForwardTrace``); nothing is recorded on the tape for
it. Each call is its own level, so ``jvp`` nests in ``jvp`` and composes with ``grad``.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from ember.autograd.forward import ForwardTrace, alias
from ember.errors import DTypeError, GradError, ShapeError
from ember.func._args import check_differentiable, split_aux
from ember.func.pytree import tree_flatten, tree_unflatten
from ember.ops.creation import zeros_like
from ember.ops.primitive import pop_handler, push_handler
from ember.tensor import Tensor

__all__ = ["jvp"]


def jvp(func: Callable, primals: tuple, tangents: tuple, *, strict: bool = False,
        has_aux: bool = False) -> tuple:
    """Evaluates ``func(*primals)`` and its Jacobian-vector product along ``tangents`` in one
    forward pass. Returns ``(output, jvp_out)`` (``(output, jvp_out, aux)`` with
    ``has_aux``); ``primals`` and ``tangents`` are tuples of tensors or pytrees of the same
    structure and shapes. ``strict`` is accepted for PyTorch compatibility.

    Example:
        >>> x = ember.tensor([0.0, 1.0])
        >>> out, tangent = ember.func.jvp(ember.sin, (x,), (ember.ones(2),))
        >>> tangent                              # cos(x)
        tensor([1.0000, 0.5403])
    """
    if not isinstance(primals, tuple) or not isinstance(tangents, tuple):
        raise TypeError("jvp: primals and tangents must be tuples (e.g. (x,) for one input), "
                        f"got {type(primals).__name__} and {type(tangents).__name__}")
    p_leaves, p_spec, t_leaves = _checked(primals, tangents, "jvp")
    out, dout, aux = _jvp_of_leaves(func, p_leaves, p_spec, t_leaves, has_aux, "jvp")
    return (out, dout, aux) if has_aux else (out, dout)


def _jvp_of_leaves(func: Callable, p_leaves: list, p_spec: Any, t_leaves: list,
                   has_aux: bool, name: str) -> tuple[Any, Any, Any]:
    """``(out, its tangent, aux)`` of ``func`` at the checked leaves of the primals."""
    result, tangent_of = jvp_leaves(lambda *xs: func(*tree_unflatten(list(xs), p_spec)),
                                    p_leaves, t_leaves)
    out, aux = split_aux(result, has_aux, name)
    out_leaves, out_spec = tree_flatten(out)
    douts = []
    for o in out_leaves:
        if not isinstance(o, Tensor):
            raise GradError(f"{name}: the output of f must be a tensor or a pytree of tensors, "
                            f"got a leaf of type {type(o).__name__}")
        douts.append(tangent_of(o))
    return out, tree_unflatten(douts, out_spec), aux


def jvp_leaves(call: Callable, primals: list, tangents: list,
               trace: ForwardTrace | None = None) -> tuple[Any, Callable]:
    """One forward-mode level (``trace``, a new one by default): ``call(*aliases of
    primals)`` with ``tangents`` (None: no tangent) attached. Returns the result and
    ``tangent_of(tensor)`` (zeros if it has none)."""
    trace = ForwardTrace() if trace is None else trace
    inputs = [alias(p) for p in primals]
    for p, d in zip(inputs, tangents):
        if d is not None:
            trace.set(p, d if d.dtype is p.dtype else d.to(p.dtype))
    push_handler(trace)
    try:
        result = call(*inputs)
    finally:
        pop_handler(trace)

    def tangent_of(o: Tensor) -> Tensor:
        # back on the stack (where it was): the tangent of a view written through another
        # view is rebuilt from its owner's with the handlers beneath the level
        push_handler(trace)
        try:
            d = trace.tangent(o)
        finally:
            pop_handler(trace)
        return zeros_like(o) if d is None else d
    return result, tangent_of


def _checked(primals: tuple, tangents: tuple, name: str,
             same_dtype: bool = False) -> tuple[list, Any, list]:
    """The leaves of ``primals`` (and their structure) and of ``tangents``, checked to match
    in structure and shapes (and dtypes with ``same_dtype``)."""
    p_leaves, p_spec = tree_flatten(primals)
    t_leaves, t_spec = tree_flatten(tangents)
    if p_spec != t_spec:
        raise GradError(f"{name}: the tangents' structure {t_spec!r} differs from the "
                        f"primals' {p_spec!r}")
    for i, (p, d) in enumerate(zip(p_leaves, t_leaves)):
        check_differentiable(p, name, f"primal {i}")
        check_differentiable(d, name, f"tangent {i}")
        if tuple(p.shape) != tuple(d.shape):
            raise ShapeError(f"{name}: tangent {i} has shape {tuple(d.shape)} but its primal "
                             f"has shape {tuple(p.shape)}")
        if same_dtype and p.dtype is not d.dtype:
            raise DTypeError(f"{name}: tangent {i} has dtype {d.dtype} but its primal has "
                             f"dtype {p.dtype}. Hint: convert it with .to({p.dtype})")
    return p_leaves, p_spec, t_leaves
