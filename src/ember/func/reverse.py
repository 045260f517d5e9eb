"""Reverse-mode transforms: :func:`grad`, :func:`grad_and_value`, :func:`value_and_grad`,
:func:`vjp`.

Each call is one *level* on the tape: the function receives new tensors for its
differentiated inputs (:func:`ember.func._args.track`), the tape is walked back to them only,
and the results are cut from this level unless an outer level (a ``grad`` around this one,
or tensors the function closes over that need a gradient) differentiates through it. So
``grad(grad(f))`` and ``jvp(grad(f))`` compose, and tensors of different levels never mix.
"""

from __future__ import annotations

import functools
import threading
from collections.abc import Callable
from typing import Any

from ember.autograd.engine import grad as tape_grad
from ember.autograd.engine import nodes_to
from ember.autograd.grad_mode import GRAD, request_grad
from ember.autograd.graph import pin_saved
from ember.errors import ArgumentError, GradError, ShapeError
from ember.func._args import (
    DiffArgs,
    TapeWalk,
    cut,
    reaches_outer,
    retire,
    split_aux,
    track,
    unwrap,
)
from ember.func.pytree import tree_flatten, tree_map
from ember.ops.creation import ones_like, zeros_like
from ember.ops.primitive import DISPATCH
from ember.tensor import Tensor

__all__ = ["grad", "grad_and_value", "value_and_grad", "vjp"]


class _Levels(threading.local):
    """The dispatch depth at which each active reverse level of this thread runs its
    function."""

    def __init__(self) -> None:
        self.depths: list[int] = []


_LEVELS = _Levels()


def _seen_through_vmap(leaves: list) -> bool:
    """Whether the enclosing reverse level, or the plain tape when there is none,
    differentiates these inputs through vmaps between it and here (``grad(vmap(grad(f)))``,
    or ``vmap(grad(f))(x)`` with ``x.requires_grad``): the logical inputs need no grad, but
    their physical batches do (at some vmap level down), on that tape."""
    handlers = DISPATCH.stack[_LEVELS.depths[-1] if _LEVELS.depths else 0:]
    for x in leaves:
        for handler in reversed(handlers):  # innermost first: logical -> physical, down
            physical = getattr(handler, "physical", None)
            p = None if physical is None else physical(x)
            if p is not None:
                if p.requires_grad:
                    return True
                x = p
    return False


class _Recording:
    """Out of ``inference_mode`` (which records nothing, even under ``enable_grad``), grad
    mode ``grad`` (None: as it is): a transform's derivatives do not depend on the caller's
    mode, as ``torch.func``'s levels."""

    __slots__ = ("grad", "saved")

    def __init__(self, grad: bool | None = True) -> None:
        self.grad = grad

    def __enter__(self) -> None:
        self.saved = GRAD.enabled, GRAD.requested, GRAD.inference
        GRAD.inference = False
        request_grad(GRAD.requested if self.grad is None else self.grad)

    def __exit__(self, *exc: object) -> None:
        GRAD.enabled, GRAD.requested, GRAD.inference = self.saved


class _Level:
    """One reverse-mode level: runs ``func`` on tracked inputs and pulls cotangents back."""

    def __init__(self, diff: DiffArgs, has_aux: bool, who: str) -> None:
        outer_grad = GRAD.enabled
        _LEVELS.depths.append(len(DISPATCH.stack))
        try:
            with _Recording():
                pairs = [track(x) for x in diff.leaves]
                self.targets = [t for t, _ in pairs]
                result = diff.call([p for _, p in pairs])
        finally:
            _LEVELS.depths.pop()
        retire(self.targets)
        self.out, self.aux = split_aux(result, has_aux, who)
        self.out_leaves, self.out_spec = tree_flatten(self.out)
        self.outer = outer_grad and (any(x.requires_grad for x in diff.leaves)
                                     or reaches_outer(self.out_leaves, self.targets)
                                     or _seen_through_vmap(diff.leaves))
        self.create = self.outer or DISPATCH.handler is not None
        self.who = who
        self.walk = TapeWalk(self.targets, through_targets=True)  # (for unwrap)

    def pull(self, cotangents: list, retain: bool) -> list:
        """Gradients of ``sum(out * cotangent)`` for each target (zeros where unused). They
        stay differentiable with respect to cotangents that require grad (as PyTorch's)."""
        outs, cots = [], []
        for o, c in zip(self.out_leaves, cotangents):
            if isinstance(o, Tensor) and o.requires_grad and c is not None:
                outs.append(o)
                cots.append(c)
        keep = self.outer or (GRAD.enabled and (any(c.requires_grad for c in cots)
                                                or _seen_through_vmap(cots)))
        if outs:
            with _Recording(None):
                grads = list(tape_grad(outs, self.targets, cots, retain_graph=retain,
                                       create_graph=self.create or keep, allow_unused=True))
        else:
            grads = [None] * len(self.targets)
        return [self.finish(zeros_like(t) if g is None else g, keep)
                for t, g in zip(self.targets, grads)]

    def finish(self, t: Any, keep: bool | None = None) -> Any:
        """A result as the caller sees it: cut from this level unless an outer one needs it
        (``keep``: whether one does; this level's own finding by default), result by result
        (:func:`ember.func._args.unwrap`)."""
        return unwrap(t, self.walk) if (self.outer if keep is None else keep) \
            else cut(t)

    def results(self) -> tuple[Any, Any]:
        return (tree_map(self.finish, self.out),
                None if self.aux is None else tree_map(self.finish, self.aux))


def _scalar_level(func: Callable, args: tuple, argnums: Any, has_aux: bool,
                  who: str) -> tuple[_Level, DiffArgs]:
    diff = DiffArgs(func, args, argnums, who)
    level = _Level(diff, has_aux, who)
    out = level.out
    if not isinstance(out, Tensor) or out.ndim != 0:
        got = (f"a tensor with {out.ndim} dims" if isinstance(out, Tensor)
               else type(out).__name__)
        raise GradError(f"{who}(f)(*args): expected f(*args) to return a scalar (0-d) tensor, "
                        f"got {got}. Hint: reduce it (e.g. .sum()), or use vjp or jacrev")
    if not out.dtype.is_floating_point:
        raise GradError(f"{who}(f)(*args): f returned a {out.dtype.name} tensor; only floating "
                        "outputs can be differentiated")
    return level, diff


def grad_and_value(func: Callable, argnums: int | tuple[int, ...] = 0,
                   has_aux: bool = False) -> Callable:
    """Like :func:`grad`, returning ``(gradient, value)``, or ``(gradient, (value, aux))``
    with ``has_aux`` (PyTorch's order; :func:`value_and_grad` is JAX's).

    Example:
        >>> g, v = ember.func.grad_and_value(lambda x: (x ** 2).sum())(ember.ones(3))
        >>> g, v
        (tensor([2., 2., 2.]), tensor(3.))
    """
    @functools.wraps(func)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        f = functools.partial(func, **kwargs) if kwargs else func
        level, diff = _scalar_level(f, args, argnums, has_aux, "grad")
        grads = diff.split(level.pull([ones_like(level.out)], retain=level.create))
        value, aux = level.results()
        return (grads, (value, aux)) if has_aux else (grads, value)
    return wrapper


def grad(func: Callable, argnums: int | tuple[int, ...] = 0, has_aux: bool = False) -> Callable:
    """The function computing the gradient of ``func`` (which returns a scalar tensor) with
    respect to its argument(s) ``argnums`` (each a tensor or a pytree of tensors).

    With ``has_aux``, ``func`` returns ``(scalar, aux)`` and the new function returns
    ``(gradient, aux)``. Transforms compose: ``grad(grad(f))``, ``jacfwd(grad(f))``.

    Example:
        >>> f = lambda x: (x ** 3).sum()
        >>> ember.func.grad(f)(ember.tensor([1.0, 2.0]))
        tensor([ 3., 12.])
        >>> ember.func.grad(lambda x: ember.func.grad(f)(x).sum())(ember.tensor([1.0, 2.0]))
        tensor([ 6., 12.])
    """
    inner = grad_and_value(func, argnums, has_aux)

    @functools.wraps(func)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        grads, value = inner(*args, **kwargs)
        return (grads, value[1]) if has_aux else grads
    return wrapper


def value_and_grad(func: Callable, argnums: int | tuple[int, ...] = 0,
                   has_aux: bool = False) -> Callable:
    """Like :func:`grad`, returning ``(value, gradient)``, or ``((value, aux), gradient)``
    with ``has_aux`` (JAX's order; :func:`grad_and_value` is PyTorch's).

    Example:
        >>> v, g = ember.func.value_and_grad(lambda x: (x ** 2).sum())(ember.ones(2))
        >>> v, g
        (tensor(2.), tensor([2., 2.]))
    """
    inner = grad_and_value(func, argnums, has_aux)

    @functools.wraps(func)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        grads, value = inner(*args, **kwargs)
        return value, grads
    return wrapper


def vjp(func: Callable, *primals: Any, has_aux: bool = False) -> tuple:
    """Runs ``func(*primals)`` and returns ``(output, vjp_fn)`` (with ``has_aux``:
    ``(output, vjp_fn, aux)``). ``vjp_fn(cotangents)``, with cotangents shaped as the output
    (a pytree), returns the tuple of vector-Jacobian products, one per primal; it may be
    called many times.

    Example:
        >>> x = ember.tensor([1.0, 2.0])
        >>> out, vjp_fn = ember.func.vjp(ember.sin, x)
        >>> vjp_fn(ember.ones(2))[0]            # cos(x)
        tensor([ 0.5403, -0.4161])
    """
    if not primals:
        raise ArgumentError("vjp: give at least one primal")
    diff = DiffArgs(func, primals, tuple(range(len(primals))), "vjp")
    level = _Level(diff, has_aux, "vjp")
    for o in level.out_leaves:
        if not isinstance(o, Tensor):
            raise GradError(f"vjp: the output of f must be a tensor or a pytree of tensors, "
                            f"got a leaf of type {type(o).__name__}")

    def vjp_fn(cotangents: Any) -> tuple:
        leaves, spec = tree_flatten(cotangents)
        if spec != level.out_spec:
            raise GradError(f"vjp_fn: the cotangents' structure {spec!r} differs from the "
                            f"output's {level.out_spec!r}")
        for i, (o, c) in enumerate(zip(level.out_leaves, leaves)):
            if not isinstance(c, Tensor):
                hint = "" if o.dtype.is_floating_point or o.dtype.is_complex else (
                    f". Hint: output {i} is {o.dtype.name}, which has no gradient, so its "
                    "cotangent is ignored: pass a tensor of its shape (ember.zeros_like of it)")
                kind = type(c).__name__
                raise GradError(f"vjp_fn: cotangent {i} is {'an' if kind[0] in 'aeiou' else 'a'} "
                                f"{kind}, expected a tensor{hint}")
            if tuple(c.shape) != tuple(o.shape):
                raise ShapeError(f"vjp_fn: cotangent {i} has shape {tuple(c.shape)} but the "
                                 f"output it belongs to has shape {tuple(o.shape)}")
        return diff.split(level.pull(leaves, retain=True))

    pin_saved(nodes_to([o for o in level.out_leaves if o.requires_grad], level.targets),
               vjp_fn)
    out, aux = level.results()
    return (out, vjp_fn, aux) if has_aux else (out, vjp_fn)
