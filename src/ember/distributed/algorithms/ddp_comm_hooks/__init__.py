"""``torch.distributed.algorithms.ddp_comm_hooks``: communication hooks for
:meth:`DistributedDataParallel.register_comm_hook <ember.distributed.DistributedDataParallel
.register_comm_hook>` (plain, half-precision, PowerSGD, post-local SGD, no-op), and
:func:`register_ddp_comm_hook` to register one by its :class:`DDPCommHookType`.

PyTorch's quantization hooks (``QUANTIZE_PER_TENSOR``/``QUANTIZE_PER_CHANNEL``, CUDA-only)
and optimizer-overlap hooks are not provided.

Example:
    >>> from ember.distributed.algorithms.ddp_comm_hooks import DDPCommHookType
    >>> register_ddp_comm_hook(DDPCommHookType.POWER_SGD, ddp_model)
"""

from __future__ import annotations

from enum import Enum, member
from functools import partial
from typing import Any

from ember.distributed.algorithms.ddp_comm_hooks import debugging_hooks as debugging
from ember.distributed.algorithms.ddp_comm_hooks import default_hooks as default
from ember.distributed.algorithms.ddp_comm_hooks import post_localSGD_hook
from ember.distributed.algorithms.ddp_comm_hooks import powerSGD_hook as powerSGD

__all__ = ["DDPCommHookType", "register_ddp_comm_hook", "default", "powerSGD",
           "post_localSGD_hook", "debugging"]


def _ddp_comm_hook_wrapper(comm_hook: Any, model: Any, state: Any) -> None:
    model.register_comm_hook(state, comm_hook)


def _powerSGD_comm_hook_wrapper(comm_hook: Any, model: Any, state: Any,
                                matrix_approximation_rank: int,
                                start_powerSGD_iter: int = 1_000) -> None:
    """Registers a PowerSGD hook with a fresh :class:`PowerSGDState` over ``state`` (a
    process group, or None)."""
    powerSGD_state = powerSGD.PowerSGDState(
        process_group=state, matrix_approximation_rank=matrix_approximation_rank,
        start_powerSGD_iter=start_powerSGD_iter)
    model.register_comm_hook(powerSGD_state, comm_hook)


class DDPCommHookType(Enum):
    """The built-in hooks by name; each value registers its hook on a model (PyTorch's).

    Example:
        >>> DDPCommHookType.FP16_COMPRESS.name
        'FP16_COMPRESS'
    """

    ALLREDUCE = member(partial(_ddp_comm_hook_wrapper, comm_hook=default.allreduce_hook))
    FP16_COMPRESS = member(partial(_ddp_comm_hook_wrapper,
                                   comm_hook=default.fp16_compress_hook))
    BF16_COMPRESS = member(partial(_ddp_comm_hook_wrapper,
                                   comm_hook=default.bf16_compress_hook))
    POWER_SGD = member(partial(_powerSGD_comm_hook_wrapper, comm_hook=powerSGD.powerSGD_hook,
                               matrix_approximation_rank=1))
    POWER_SGD_RANK2 = member(partial(_powerSGD_comm_hook_wrapper,
                                     comm_hook=powerSGD.powerSGD_hook,
                                     matrix_approximation_rank=2))
    BATCHED_POWER_SGD = member(partial(_powerSGD_comm_hook_wrapper,
                                       comm_hook=powerSGD.batched_powerSGD_hook,
                                       matrix_approximation_rank=1))
    BATCHED_POWER_SGD_RANK2 = member(partial(_powerSGD_comm_hook_wrapper,
                                             comm_hook=powerSGD.batched_powerSGD_hook,
                                             matrix_approximation_rank=2))
    NOOP = member(partial(_ddp_comm_hook_wrapper, comm_hook=debugging.noop_hook))


def register_ddp_comm_hook(comm_hook_type: DDPCommHookType, model: Any,
                           state: Any = None) -> None:
    """Registers the built-in hook ``comm_hook_type`` on the DDP ``model``; ``state`` is the
    process group (None: the world).

    Example:
        >>> register_ddp_comm_hook(DDPCommHookType.FP16_COMPRESS, ddp_model)
    """
    comm_hook_type.value(model=model, state=state)
