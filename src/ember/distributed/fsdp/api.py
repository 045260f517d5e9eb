"""The configuration types of :class:`FullyShardedDataParallel`, with PyTorch's names:
how parameters are sharded, in which dtypes the unit computes and communicates, and which
state dict it produces."""

from __future__ import annotations

from dataclasses import dataclass
from enum import Enum, auto
from typing import Any


class ShardingStrategy(Enum):
    """What each rank keeps between the passes.

    * ``FULL_SHARD`` (ZeRO-3): parameters, gradients and optimizer state are sharded; a unit's
      parameters are all-gathered before its forward, freed after it, and all-gathered again
      before its backward.
    * ``SHARD_GRAD_OP`` (ZeRO-2): as ``FULL_SHARD``, but the parameters gathered for forward
      stay until the unit's backward is done (no second all-gather).
    * ``NO_SHARD``: every rank keeps everything and gradients are all-reduced, as in
      :class:`~ember.distributed.DistributedDataParallel`.
    * ``HYBRID_SHARD``, ``_HYBRID_SHARD_ZERO2``: PyTorch's sharding within a node and
      replication across nodes; not supported here (the constructor says so).
    """

    FULL_SHARD = auto()
    SHARD_GRAD_OP = auto()
    NO_SHARD = auto()
    HYBRID_SHARD = auto()
    _HYBRID_SHARD_ZERO2 = auto()


class BackwardPrefetch(Enum):
    """When the next unit's all-gather is issued in backward (PyTorch's performance hint).
    Ember's all-gathers are blocking, so both values give the same schedule and results."""

    BACKWARD_PRE = auto()
    BACKWARD_POST = auto()


class StateDictType(Enum):
    """What ``state_dict()`` of a wrapped model returns (see
    :meth:`FullyShardedDataParallel.state_dict_type`).

    * ``FULL_STATE_DICT``: the original parameter names with full tensors, as the unwrapped
      model's state dict.
    * ``SHARDED_STATE_DICT``: the original names, each value this rank's piece as a
      :class:`~ember.distributed.checkpoint.ShardedTensor` (for
      :func:`ember.distributed.checkpoint.save`).
    * ``LOCAL_STATE_DICT``: the flat parameter shards under their ``_flat_param`` names.
    """

    FULL_STATE_DICT = auto()
    LOCAL_STATE_DICT = auto()
    SHARDED_STATE_DICT = auto()


@dataclass
class MixedPrecision:
    """Dtypes for compute and communication; the sharded parameters (what the optimizer
    updates) keep their own dtype.

    Args:
        param_dtype: dtype of the gathered parameters used in forward and backward.
        reduce_dtype: dtype the gradients are reduced in (``param_dtype`` when None).
        buffer_dtype: dtype the floating buffers are cast to when the unit is built.
        cast_root_forward_inputs: cast the root unit's floating inputs to ``param_dtype``.

    Example:
        >>> FSDP(model, mixed_precision=MixedPrecision(param_dtype=ember.bfloat16))
    """

    param_dtype: Any = None
    reduce_dtype: Any = None
    buffer_dtype: Any = None
    keep_low_precision_grads: bool = False
    cast_forward_inputs: bool = False
    cast_root_forward_inputs: bool = True


@dataclass
class CPUOffload:
    """PyTorch's option to keep sharded parameters (and their gradients) in host memory.
    Ember's MPI process groups work on CPU tensors, so the shards always live there.

    Example:
        >>> FSDP(model, cpu_offload=CPUOffload(offload_params=True))
    """

    offload_params: bool = False


@dataclass
class FullStateDictConfig:
    """Options of ``FULL_STATE_DICT``: ``rank0_only`` gives the state dict on rank 0 and an
    empty one elsewhere; ``offload_to_cpu`` is accepted (tensors are on the CPU already)."""

    offload_to_cpu: bool = False
    rank0_only: bool = False


@dataclass
class ShardedStateDictConfig:
    """Options of ``SHARDED_STATE_DICT`` (``offload_to_cpu``: the shards are CPU tensors)."""

    offload_to_cpu: bool = False


@dataclass
class StateDictSettings:
    """What :meth:`FullyShardedDataParallel.set_state_dict_type` returns: the kind and the
    configs in force before."""

    state_dict_type: StateDictType
    state_dict_config: Any
    optim_state_dict_config: Any


# -- fully_shard (FSDP2) -------------------------------------------------------------------
@dataclass(frozen=True)
class MixedPrecisionPolicy:
    """Dtypes of :func:`~ember.distributed.fsdp.fully_shard`'s compute and communication; the
    sharded parameters (what the optimizer updates) keep their own dtype.

    Args:
        param_dtype: dtype the parameters are all-gathered and computed in (theirs if None).
        reduce_dtype: dtype the gradients are reduce-scattered in (``param_dtype`` if None).
        output_dtype: dtype the module's floating outputs are cast to (left alone if None).
        cast_forward_inputs: cast the module's floating inputs to ``param_dtype``.

    Example:
        >>> fully_shard(block, mp_policy=MixedPrecisionPolicy(param_dtype=ember.bfloat16,
        ...                                                   reduce_dtype=ember.float32))
    """

    param_dtype: Any = None
    reduce_dtype: Any = None
    output_dtype: Any = None
    cast_forward_inputs: bool = True


@dataclass
class OffloadPolicy:
    """Where :func:`~ember.distributed.fsdp.fully_shard` keeps the sharded parameters: this
    base policy keeps them where they are."""


@dataclass
class CPUOffloadPolicy(OffloadPolicy):
    """PyTorch's policy of keeping sharded parameters, gradients and optimizer state in host
    memory. Ember's MPI process groups work on CPU tensors, so they live there in any case
    (``pin_memory`` is accepted for PyTorch's signature).

    Example:
        >>> fully_shard(model, offload_policy=CPUOffloadPolicy())
    """

    pin_memory: bool = True
