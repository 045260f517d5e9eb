"""PyTorch's default DDP communication hooks: the plain average (``allreduce_hook``) and
averaging in half precision (``fp16_compress_hook``, ``bf16_compress_hook``, and wrappers that
run any hook on a half-precision copy of the bucket).

Example:
    >>> from ember.distributed.algorithms.ddp_comm_hooks import default_hooks
    >>> ddp_model.register_comm_hook(None, default_hooks.bf16_compress_hook)
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import ember
from ember.distributed.collectives import all_reduce
from ember.distributed.grad_bucket import GradBucket
from ember.distributed.process_group import ProcessGroup, resolve
from ember.futures import Future
from ember.tensor import Tensor

__all__ = ["allreduce_hook", "fp16_compress_hook", "bf16_compress_hook",
           "fp16_compress_wrapper", "bf16_compress_wrapper"]

Hook = Callable[[Any, GradBucket], Future]


def allreduce_fut(process_group: ProcessGroup | None, tensor: Tensor) -> Future[Tensor]:
    """Divides ``tensor`` by the group size in place and starts its sum over the group: a
    future of ``tensor``, then the mean."""
    group = resolve(process_group, "allreduce_hook")
    tensor.div_(group.size())
    return all_reduce(tensor, group=group, async_op=True).get_future().then(
        lambda fut: fut.value()[0])


def allreduce_hook(process_group: ProcessGroup | None, bucket: GradBucket) -> Future[Tensor]:
    """The mean of the bucket over ``process_group`` (None: the world): the gradients of DDP
    without a hook, a starting point for hooks of one's own.

    Example:
        >>> ddp_model.register_comm_hook(None, allreduce_hook)
    """
    return allreduce_fut(process_group, bucket.buffer())


def _compress_hook(dtype: ember.dtype, process_group: ProcessGroup | None,
                   bucket: GradBucket) -> Future[Tensor]:
    group = resolve(process_group, f"{dtype.name}_compress_hook")
    buffer = bucket.buffer()
    compressed = buffer.to(dtype).div_(group.size())

    def decompress(fut: Future) -> Tensor:
        buffer.copy_(fut.value()[0])
        return buffer

    return all_reduce(compressed, group=group, async_op=True).get_future().then(decompress)


def fp16_compress_hook(process_group: ProcessGroup | None,
                       bucket: GradBucket) -> Future[Tensor]:
    """Casts the bucket to float16, divides it by the group size (in float16) and sums it over
    the group (each addition rounded to float16, as in PyTorch); the result is cast back.

    Example:
        >>> ddp_model.register_comm_hook(None, fp16_compress_hook)
    """
    return _compress_hook(ember.float16, process_group, bucket)


def bf16_compress_hook(process_group: ProcessGroup | None,
                       bucket: GradBucket) -> Future[Tensor]:
    """:func:`fp16_compress_hook` in bfloat16 (PyTorch allows it only with NCCL; the MPI
    backend sums bfloat16 in float32 and rounds each sum, so it works on CPU here).

    Example:
        >>> ddp_model.register_comm_hook(None, bf16_compress_hook)
    """
    return _compress_hook(ember.bfloat16, process_group, bucket)


def _compress_wrapper(dtype: ember.dtype, hook: Hook) -> Hook:
    def compress_wrapper_hook(hook_state: Any, bucket: GradBucket) -> Future[Tensor]:
        bucket.set_buffer(bucket.buffer().to(dtype))
        fut = hook(hook_state, bucket)

        def decompress(fut: Future) -> Tensor:
            out = bucket.buffer()
            out.copy_(fut.value())
            return out

        return fut.then(decompress)

    return compress_wrapper_hook


def fp16_compress_wrapper(hook: Hook) -> Hook:
    """Runs ``hook`` on a float16 copy of the bucket and casts its result back:
    ``fp16_compress_wrapper(allreduce_hook)`` is :func:`fp16_compress_hook`.

    Example:
        >>> state = PowerSGDState(process_group=None, start_powerSGD_iter=10)
        >>> ddp_model.register_comm_hook(state, fp16_compress_wrapper(powerSGD_hook))
    """
    return _compress_wrapper(ember.float16, hook)


def bf16_compress_wrapper(hook: Hook) -> Hook:
    """:func:`fp16_compress_wrapper` in bfloat16.

    Example:
        >>> ddp_model.register_comm_hook(None, bf16_compress_wrapper(allreduce_hook))
    """
    return _compress_wrapper(ember.bfloat16, hook)
