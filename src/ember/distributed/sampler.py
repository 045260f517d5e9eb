"""``DistributedSampler``: each rank visits its own share of a dataset's indices.

Every rank shuffles with the same seed (``seed + epoch``), pads the order by repeating its
start so it divides evenly (or drops the tail with ``drop_last``), and takes every
``num_replicas``-th index from ``rank`` on, as PyTorch's sampler does.
"""

from __future__ import annotations

from collections.abc import Iterator, Sized

import numpy as np

from ember.data.sampler import Sampler
from ember.distributed.process_group import get_rank, get_world_size


class DistributedSampler(Sampler):
    """Indices of ``dataset`` for one rank; call :meth:`set_epoch` each epoch to reshuffle.

    Example:
        >>> sampler = DistributedSampler(train_set)          # rank and size from the world
        >>> loader = ember.data.DataLoader(train_set, batch_size=32, sampler=sampler)
        >>> for epoch in range(10):
        ...     sampler.set_epoch(epoch)
    """

    def __init__(
        self,
        dataset: Sized,
        num_replicas: int | None = None,
        rank: int | None = None,
        shuffle: bool = True,
        seed: int = 0,
        drop_last: bool = False,
    ) -> None:
        self.num_replicas = get_world_size() if num_replicas is None else int(num_replicas)
        self.rank = get_rank() if rank is None else int(rank)
        if self.num_replicas < 1 or not 0 <= self.rank < self.num_replicas:
            raise ValueError(
                f"DistributedSampler: invalid rank {self.rank} for "
                f"{self.num_replicas} replicas; it must be in [0, num_replicas)"
            )
        self.dataset, self.shuffle, self.seed, self.drop_last = dataset, shuffle, seed, drop_last
        self.epoch = 0
        size = len(dataset)
        if drop_last:
            self.num_samples = size // self.num_replicas
        else:
            self.num_samples = -(-size // self.num_replicas)
        self.total_size = self.num_samples * self.num_replicas

    def __iter__(self) -> Iterator[int]:
        size = len(self.dataset)
        if self.shuffle:
            order = np.random.default_rng(self.seed + self.epoch).permutation(size)
        else:
            order = np.arange(size)
        if self.total_size > size:
            order = np.resize(order, self.total_size)  # repeats from the start to pad
        order = order[: self.total_size]
        return iter(order[self.rank : self.total_size : self.num_replicas].tolist())

    def __len__(self) -> int:
        return self.num_samples

    def set_epoch(self, epoch: int) -> None:
        """Makes the next iteration use the shuffle of ``epoch`` (the same on every rank)."""
        self.epoch = int(epoch)
