"""Fully Sharded Data Parallel (ZeRO-3) with PyTorch's ``torch.distributed.fsdp`` names:
each rank keeps 1/N of the parameters, gradients and optimizer state, and gathers a unit's
parameters only while the unit computes. Two APIs, as in PyTorch: the wrapper
:class:`FullyShardedDataParallel` (FSDP1, flat parameters) and :func:`fully_shard` (FSDP2,
each parameter a ``Shard(0)`` piece per rank).

Example (``ember launch -n 2 train.py``):
    >>> from ember.distributed.fsdp import FullyShardedDataParallel as FSDP
    >>> from ember.distributed.fsdp.wrap import ModuleWrapPolicy
    >>> model = FSDP(ember.models.gpt(), auto_wrap_policy=ModuleWrapPolicy({Block}))
    >>> opt = ember.optim.AdamW(model.parameters(), lr=3e-4)
"""

from ember.distributed.fsdp import wrap
from ember.distributed.fsdp.api import (
    BackwardPrefetch,
    CPUOffload,
    CPUOffloadPolicy,
    FullStateDictConfig,
    MixedPrecision,
    MixedPrecisionPolicy,
    OffloadPolicy,
    ShardedStateDictConfig,
    ShardingStrategy,
    StateDictSettings,
    StateDictType,
)
from ember.distributed.fsdp.fully_shard import FSDPModule, UnshardHandle, fully_shard
from ember.distributed.fsdp.fully_sharded import FullyShardedDataParallel
from ember.distributed.fsdp.optim_state_dict import (
    get_optimizer_state_dict,
    set_optimizer_state_dict,
)

__all__ = [
    "BackwardPrefetch",
    "CPUOffload",
    "CPUOffloadPolicy",
    "FSDPModule",
    "FullStateDictConfig",
    "FullyShardedDataParallel",
    "MixedPrecision",
    "MixedPrecisionPolicy",
    "OffloadPolicy",
    "ShardedStateDictConfig",
    "ShardingStrategy",
    "StateDictSettings",
    "StateDictType",
    "UnshardHandle",
    "fully_shard",
    "get_optimizer_state_dict",
    "set_optimizer_state_dict",
    "wrap",
]
