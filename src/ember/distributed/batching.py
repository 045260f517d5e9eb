"""vmap rules of the differentiable collectives, registered with ``ember.func``'s batching
registry from this upper layer: the batch axis goes in front, so a ``dim`` shifts by one and
every rank's batch travels in the same message."""

from __future__ import annotations

from typing import Any

from ember.distributed import functional as F
from ember.func.batching import rule
from ember.ops.primitive import Primitive, apply


def _batch_rule(p: Primitive, has_dim: bool) -> Any:
    def batch_collective(b: int, xs: tuple, bs: tuple, **params: Any) -> Any:
        if has_dim:
            params = {**params, "dim": params["dim"] + 1}
        return apply(p, xs[0], **params)

    return batch_collective


for _p in (F.AllReduce, F.ReduceFromGroup, F.Broadcast, F.CopyToGroup):
    rule(_p.name)(_batch_rule(_p, False))
for _p in (F.AllGather, F.GatherFromGroup, F.ReduceScatter, F.ScatterToGroup):
    rule(_p.name)(_batch_rule(_p, True))
