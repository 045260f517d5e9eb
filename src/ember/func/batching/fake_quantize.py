"""Batching rules of per-channel and learnable fake quantization (the per-tensor one is
elementwise)."""

from __future__ import annotations

from typing import Any

from ember.func.batching import batched, move, prim, reshape, rule
from ember.ops.join import stack
from ember.ops.primitive import apply


@rule("fake_quantize_per_channel_affine")
def _fake_quantize_per_channel(b: int, xs: tuple, bs: tuple, *, axis: int, **params: Any) -> Any:
    p = prim("fake_quantize_per_channel_affine")
    x, scale, zero_point = xs
    if not (bs[1] or bs[2]):  # one set of parameters: the batch is one more leading axis
        return apply(p, x, scale, zero_point, axis=axis + 1, **params)
    # parameters per sample: the batch and channel axes merge into one channel axis
    x = move(batched(x, b, bs[0]), axis + 1, 1)  # (B, C, …)
    shape = tuple(x.shape)
    merged = reshape(x, (shape[0] * shape[1],) + shape[2:])
    scale, zero_point = (reshape(batched(t, b, is_b), (shape[0] * shape[1],))
                         for t, is_b in ((scale, bs[1]), (zero_point, bs[2])))
    outs = apply(p, merged, scale, zero_point, axis=0, **params)
    return tuple(move(reshape(o, shape), 1, axis + 1) for o in outs)


def _learnable(name: str) -> Any:
    """The learnable op's (and its partials') rule: shared parameters take the batch as one
    more leading axis; per-sample ones run one sample at a time (a per-tensor scale per sample
    is no per-channel one: the two round the zero point differently)."""
    def run(b: int, xs: tuple, bs: tuple, *, axis: int | None, **params: Any) -> Any:
        p = prim(name)
        if not (bs[1] or bs[2]):
            return apply(p, *xs, axis=None if axis is None else axis + 1, **params)
        xs = tuple(batched(t, b, is_b) for t, is_b in zip(xs, bs))
        outs = [apply(p, *(t[i] for t in xs), axis=axis, **params) for i in range(b)]
        if p.nout == 1:
            return stack(outs)
        return tuple(stack([o[j] for o in outs]) for j in range(p.nout))
    return run


for _name in ("_fake_quantize_learnable_affine", "_fake_quantize_learnable_partials"):
    rule(_name)(_learnable(_name))
