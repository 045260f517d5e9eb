"""Batching rule of per-channel fake quantization (the per-tensor one is elementwise)."""

from __future__ import annotations

from typing import Any

from ember.func.batching import batched, move, prim, reshape, rule
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
