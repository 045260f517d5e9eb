"""The sharding rule of ``F.scaled_dot_product_attention`` on DTensors: attention is
independent across its leading (batch, heads) dimensions, so query, key, value and the mask
sharded alike along one of them attend locally (PyTorch's batch and head sharding).

A shard of the length or feature dimensions, or a ``Partial`` operand, is gathered first; a
``Replicate`` operand is chunked to match the sharded ones (where it does not broadcast
along that dimension). ``dropout_p > 0`` has no rule (see ``docs/dtensor.md``).

Example (2 ranks):
    >>> q = distribute_tensor(ember.randn(2, 4, 3, 8), mesh, [Shard(1)])  # heads
    >>> F.scaled_dot_product_attention(q, q, q, is_causal=True).placements
    (Shard(dim=1),)
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from ember.distributed.tensor.dtensor import DTensor
from ember.distributed.tensor.ops import compute, dtensors, no_rule, pointwise_placement, rule
from ember.distributed.tensor.placement import Replicate, Shard
from ember.ops.attention import scaled_dot_product_attention
from ember.ops.broadcast import broadcast_shapes

__all__: list[str] = []

_OP = "scaled_dot_product_attention"


@rule(scaled_dot_product_attention)
def _attention(op: Callable, query: Any, key: Any, value: Any, attn_mask: Any = None,
               dropout_p: float = 0.0, is_causal: bool = False, scale: float | None = None,
               enable_gqa: bool = False, *, generator: Any = None) -> DTensor:
    operands = [query, key, value, attn_mask]
    inputs = dtensors(_OP, operands)
    if dropout_p > 0.0:
        raise no_rule(_OP, inputs, f"dropout_p={dropout_p}: the attention weights' dropout "
                      "mask is drawn inside the op. Hint: pass dropout_p=0 and apply "
                      "F.dropout to the DTensor attention weights, or use to_local()")
    if any(x.ndim < 2 for x in inputs):
        raise no_rule(_OP, inputs, "query, key, value and the mask need at least 2 dims")
    # the last two dims (length, features / length, length) must be whole on every rank
    targets = [[Replicate() if p.is_partial() or (isinstance(p, Shard) and p.dim >= x.ndim - 2)
                else p for p in x.placements] for x in inputs]
    ndim = max(x.ndim for x in inputs)
    out = [pointwise_placement(_OP, inputs, inputs, targets, m, ndim)
           for m in range(inputs[0].device_mesh.ndim)]
    if enable_gqa and query.shape[-3] != key.shape[-3] and \
            any(p == Shard(ndim - 3) for p in out):
        raise no_rule(_OP, inputs, "with enable_gqa the heads dimension cannot be sharded "
                      "while key/value have fewer heads than the query")
    # with enable_gqa, key/value's fewer heads (dim -3) are repeated to the query's
    grouped = [x.shape[:-3] + (1,) if enable_gqa and x is not query and x is not attn_mask and
               x.ndim >= 3 else x.shape[:-2] for x in inputs]
    shape = (*broadcast_shapes(*grouped), query.shape[-2], value.shape[-1])

    def attend(q: Any, k: Any, v: Any, mask: Any = None) -> Any:
        return op(q, k, v, mask, 0.0, is_causal, scale, enable_gqa)

    return compute(inputs, targets, out, shape, attend)
