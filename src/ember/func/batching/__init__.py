"""Batching rules for :func:`ember.func.vmap`, one per primitive, registered by name.

A rule computes a primitive on *physical* tensors, whose batch axis is axis 0, and returns the
physical output(s), batched along axis 0 too. It is called as ``rule(b, xs, bs, **params)``:
``b`` is the batch size, ``xs`` the inputs (physical when batched, the plain tensor when not),
``bs`` a tuple of booleans saying which inputs are batched, ``params`` the op's keyword params.
Rules run below the vmap level, so the ops they call are computed (and, under an outer
transform, traced) normally. Most are one line: shift the op's dims by one, or align the
ranks of elementwise operands; the registry (not the op files) holds them, so a new primitive
gets its rule here.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from ember.errors import ArgumentError
from ember.ops.primitive import PRIMITIVES, apply

RULES: dict[str, Callable[..., Any]] = {}
#: primitives whose rule runs even when no input is batched (sampling follows ``randomness``)
ALWAYS: set[str] = set()


def rule(*names: str) -> Callable[[Callable], Callable]:
    """Registers the decorated function as the batching rule of the named primitives."""
    def register(fn: Callable) -> Callable:
        for name in names:
            if name in RULES:
                raise ArgumentError(f"a batching rule for {name!r} is already registered")
            RULES[name] = fn
        return fn
    return register


def prim(name: str) -> Any:
    return PRIMITIVES[name]


# -- helpers rules share ---------------------------------------------------------------------
def batched(x: Any, b: int, is_batched: bool) -> Any:
    """``x`` with a batch axis in front (an expand, no copy, when it had none)."""
    if is_batched:
        return x
    return apply(prim("expand"), x, shape=(b,) + tuple(x.shape))  # (a new leading axis)


def pad_rank(x: Any, rank: int) -> Any:
    """A batched ``x`` with size-1 axes after the batch axis, up to logical rank ``rank``, so
    that it broadcasts against unbatched operands like its logical self."""
    missing = rank - (x.ndim - 1)
    if missing <= 0:
        return x
    shape = tuple(x.shape)
    return apply(prim("reshape"), x, shape=shape[:1] + (1,) * missing + shape[1:])


def move(x: Any, src: int, dst: int) -> Any:
    """``x`` with axis ``src`` moved to position ``dst`` (a permute view)."""
    n = x.ndim
    src, dst = src % n, dst % n
    if src == dst:
        return x
    order = [i for i in range(n) if i != src]
    order.insert(dst, src)
    return apply(prim("permute"), x, dims=tuple(order))


def reshape(x: Any, shape: tuple) -> Any:
    return apply(prim("reshape"), x, shape=tuple(shape))


def merge_batch(x: Any) -> Any:
    """``(B, N, …)`` as ``(B*N, …)``: for ops whose first axis already is a batch."""
    shape = tuple(x.shape)
    return reshape(x, (shape[0] * shape[1],) + shape[2:])


def split_batch(x: Any, b: int, n: int) -> Any:
    """The inverse of :func:`merge_batch`: ``(B*N, …)`` as ``(B, N, …)``."""
    return reshape(x, (b, n) + tuple(x.shape)[1:])


def lift_scalar(fn: Callable[..., Any], x: Any, **params: Any) -> Any:
    """Runs a rule body ``fn(x, **params)`` that indexes axis 1, on a batched ``x`` whose
    logical value is 0-d (shape ``(B,)``): as ``(B, 1)``, results squeezed back."""
    if x.ndim > 1:
        return fn(x, **params)
    out = fn(reshape(x, tuple(x.shape) + (1,)), **params)
    outs = out if isinstance(out, tuple) else (out,)
    outs = tuple(reshape(o, tuple(o.shape)[:1]) if o.ndim == 2 and o.shape[1] == 1 else o
                 for o in outs)
    return outs if isinstance(out, tuple) else outs[0]


def missing() -> list[str]:
    """Names of registered primitives with no batching rule (the test asserts none)."""
    return sorted(set(PRIMITIVES) - set(RULES))


from ember.func.batching import (  # noqa: E402,F401 - the families register their rules
    construct,
    elementwise,
    fake_quantize,
    fourier,
    gamma_scatter,
    indexing,
    linalg_decomp,
    nn,
    reduce,
    rnn,
    sampling,
    search,
    sparse,
    special,
    statistics,
    views,
)
