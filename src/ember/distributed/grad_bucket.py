"""``GradBucket``: what a DDP communication hook receives — one bucket's flat gradients.

Example (a hook that averages the bucket itself, as ``allreduce_hook`` does):
    >>> def mean_hook(state, bucket: dist.GradBucket) -> ember.futures.Future[ember.Tensor]:
    ...     buf = bucket.buffer().div_(dist.get_world_size())
    ...     return dist.all_reduce(buf, async_op=True).get_future().then(lambda f: f.value()[0])
    >>> ddp_model.register_comm_hook(None, mean_hook)
"""

from __future__ import annotations

from ember.errors import ArgumentError
from ember.tensor import Tensor


class GradBucket:
    """One bucket of :class:`~ember.distributed.DistributedDataParallel`'s gradients, as
    ``torch.distributed.GradBucket``: a flat 1-d buffer of this rank's gradients of
    :meth:`parameters` (in that order), handed to the communication hook once all of them
    have arrived.

    Example:
        >>> bucket.index(), bucket.is_last(), bucket.buffer().shape
        (0, False, ember.Size([130]))
    """

    __slots__ = ("_index", "_buffer", "_params", "_offsets", "_last")

    def __init__(self, index: int, buffer: Tensor, parameters: list[Tensor], offsets: list[int],
                 is_last: bool) -> None:
        self._index, self._buffer, self._params = index, buffer, list(parameters)
        self._offsets, self._last = offsets, is_last

    def index(self) -> int:
        """The bucket's position; bucket 0 holds the last parameters (the first gradients)."""
        return self._index

    def buffer(self) -> Tensor:
        """The flat 1-d tensor of the bucket's gradients (a hook may change it in place)."""
        return self._buffer

    def gradients(self) -> list[Tensor]:
        """One view of :meth:`buffer` per parameter, shaped like it."""
        return [self._buffer[start:end].view(tuple(p.shape))
                for p, start, end in zip(self._params, self._offsets, self._offsets[1:])]

    def parameters(self) -> list[Tensor]:
        """The parameters whose gradients the bucket holds."""
        return list(self._params)

    def is_last(self) -> bool:
        """Whether this is the last bucket of the step (the model's first parameters)."""
        return self._last

    def set_buffer(self, buffer: Tensor) -> None:
        """Replaces the buffer (e.g. with a float16 copy; same number of elements)."""
        if not isinstance(buffer, Tensor) or buffer.numel() != self._offsets[-1]:
            raise ArgumentError(
                f"GradBucket.set_buffer: expected a tensor of {self._offsets[-1]} elements, "
                f"got {getattr(buffer, 'shape', type(buffer).__name__)}")
        self._buffer = buffer

    def __repr__(self) -> str:
        return (f"GradBucket(index={self._index}, parameters={len(self._params)}, "
                f"numel={self._offsets[-1]}, is_last={self._last})")
