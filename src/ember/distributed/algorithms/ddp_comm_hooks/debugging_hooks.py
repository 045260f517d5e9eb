"""``noop_hook``: a DDP communication hook that communicates nothing (to measure what the
gradients' averaging costs).

Example:
    >>> ddp_model.register_comm_hook(None, noop_hook)     # each rank keeps its own gradients
"""

from __future__ import annotations

from typing import Any

from ember.distributed.grad_bucket import GradBucket
from ember.futures import Future
from ember.tensor import Tensor

__all__ = ["noop_hook"]


def noop_hook(_: Any, bucket: GradBucket) -> Future[Tensor]:
    """A completed future of the bucket as it is: no communication, local gradients.

    Example:
        >>> ddp_model.register_comm_hook(None, noop_hook)
    """
    fut: Future[Tensor] = Future()
    fut.set_result(bucket.buffer())
    return fut
