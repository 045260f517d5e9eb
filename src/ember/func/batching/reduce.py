"""Batching rules of primitives that work along dims: reductions, scans, softmax, sorting.

The batch axis is axis 0, so each logical dim ``d`` is ``d + 1``; a logical 0-d operand is
lifted to ``(B, 1)`` first (its dim 0 then exists physically).
"""

from __future__ import annotations

from typing import Any

from ember.func.batching import batched, lift_scalar, prim, reshape, rule
from ember.ops.primitive import apply


def _dims_rule(name: str) -> Any:
    p = prim(name)

    def batch_reduce(b: int, xs: tuple, bs: tuple, *, dims: tuple, keepdim: bool,
                     **params: Any) -> Any:
        (x,) = xs
        if x.ndim == 1:  # logical 0-d: reducing it changes nothing but the op's own rules
            return lift_scalar(lambda y: apply(p, y, dims=(1,), keepdim=False, **params), x)
        return apply(p, x, dims=tuple(d + 1 for d in dims), keepdim=keepdim, **params)

    return batch_reduce


def _dim_rule(name: str) -> Any:
    """Ops with one ``dim`` (``None`` meaning all of them, flattened, for argmax and kin)."""
    p = prim(name)

    def batch_dim(b: int, xs: tuple, bs: tuple, *, dim: Any, **params: Any) -> Any:
        (x,) = xs
        if dim is None:
            keepdim = params.pop("keepdim", False)
            rank = x.ndim - 1
            out = apply(p, _flat(x, b), dim=1, keepdim=False, **params)
            if keepdim:
                outs = out if isinstance(out, tuple) else (out,)
                outs = tuple(reshape(o, (b,) + (1,) * rank) for o in outs)
                return outs if isinstance(out, tuple) else outs[0]
            return out
        return lift_scalar(lambda y: apply(p, y, dim=dim + 1, **params), x)

    return batch_dim


def _flat(x: Any, b: int) -> Any:
    n = 1
    for s in tuple(x.shape)[1:]:
        n *= s
    return reshape(x, (b, n))


for _name in ("sum", "prod", "amax", "amin", "all", "any", "hash_tensor", "var", "std",
              "logsumexp"):
    rule(_name)(_dims_rule(_name))
for _name in ("max_dim", "min_dim", "argmax", "argmin", "cumsum", "cumprod", "softmax",
              "log_softmax", "argsort", "topk"):
    rule(_name)(_dim_rule(_name))


def _along_dim_grad(name: str) -> Any:
    """The rule of softmax's or log_softmax's gradient op ``(v, y)`` along ``dim``."""
    def batch(b: int, xs: tuple, bs: tuple, *, dim: int) -> Any:
        v, y = (batched(t, b, is_b) for t, is_b in zip(xs, bs, strict=True))
        if v.ndim == 1:  # logical 0-d
            return reshape(apply(prim(name), reshape(v, (b, 1)), reshape(y, (b, 1)), dim=1),
                           (b,))
        return apply(prim(name), v, y, dim=dim % (v.ndim - 1) + 1)
    return batch


for _name in ("softmax_grad", "log_softmax_grad"):
    rule(_name)(_along_dim_grad(_name))
