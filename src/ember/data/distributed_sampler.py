"""``DistributedSampler``: each rank visits its own share of a dataset's indices.

Every rank shuffles with the same seed (``seed + epoch``), pads the order by repeating its
start so it divides evenly (or drops the tail with ``drop_last``), and takes every
``num_replicas``-th index from ``rank`` on, as PyTorch's sampler does.

The sampler needs no process group when it is given ``num_replicas`` and ``rank``; when one of
them is None it asks the world provider that :mod:`ember.distributed` registers here with
:func:`register_world` on import (the data layer does not import the distributed one).
"""

from __future__ import annotations

import operator
from collections.abc import Callable, Iterator, Sized
from typing import Any

import numpy as np

from ember.data.sampler import Sampler, T_co
from ember.errors import ArgumentError, ArgumentTypeError, type_name
from ember.ops.random import remap_seed

__all__ = ["DistributedSampler", "register_world"]

# () -> (world size, this process's rank); set by ember.distributed when it is imported
_world: Callable[[], tuple[int, int]] | None = None


def register_world(provider: Callable[[], tuple[int, int]]) -> None:
    """Makes ``provider() -> (world_size, rank)`` the source of the defaults of
    :class:`DistributedSampler` (``ember.distributed`` registers the default process group's).
    """
    global _world
    _world = provider


def _ask_world() -> tuple[int, int]:
    if _world is None:
        raise RuntimeError("DistributedSampler: num_replicas or rank is None and no distributed "
                           "package has registered a world to ask. Hint: pass num_replicas= "
                           "and rank=, or import ember.distributed and call "
                           "init_process_group() first")
    return _world()


class DistributedSampler(Sampler[T_co]):
    """Indices of ``dataset`` for one rank; call :meth:`set_epoch` each epoch to reshuffle.

    Example:
        >>> sampler = DistributedSampler(range(10), num_replicas=4, rank=1, shuffle=False)
        >>> list(sampler)                    # padded by repeating the start: 3 for each rank
        [1, 5, 9]
        >>> loader = ember.data.DataLoader(range(10), batch_size=2, sampler=sampler)
        >>> for epoch in range(2):
        ...     sampler.set_epoch(epoch)          # reshuffles (when shuffle=True) each epoch
        ...     batches = [b.tolist() for b in loader]
        >>> batches
        [[1, 5], [9]]
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
        if num_replicas is None or rank is None:
            world_size, world_rank = _ask_world()
            num_replicas = world_size if num_replicas is None else num_replicas
            rank = world_rank if rank is None else rank
        self.num_replicas = _integer("num_replicas", num_replicas)
        self.rank = _integer("rank", rank)
        if self.num_replicas < 1 or not 0 <= self.rank < self.num_replicas:
            raise ArgumentError(
                f"DistributedSampler: invalid rank {self.rank} for "
                f"{self.num_replicas} replicas; it must be in [0, num_replicas)"
            )
        seed = _integer("seed", seed)
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
        if size > self.total_size and not self.drop_last:  # (PyTorch's assertion fails too)
            raise ArgumentError(
                f"DistributedSampler: the dataset has grown to {size} items since the sampler "
                f"was made for {self.total_size} ({self.num_samples} per rank): the items past "
                f"them would never be visited. Hint: make a new DistributedSampler")
        if size < self.total_size and (self.drop_last or not size):  # (PyTorch fails too;
            # a shrunk dataset is padded by repeats only without drop_last, as PyTorch's)
            raise ArgumentError(
                f"DistributedSampler: the dataset has shrunk to {size} items since the sampler "
                f"was made for {self.total_size} ({self.num_samples} per rank, drop_last="
                f"{self.drop_last}): there are too few to fill the ranks' shares. Hint: make a "
                f"new DistributedSampler")
        if self.shuffle:
            order = np.random.default_rng(remap_seed(self.seed + self.epoch)).permutation(size)
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
        self.epoch = _integer("epoch", epoch)


def _integer(name: str, value: Any) -> int:
    """``value`` (an int, a bool, a NumPy integer or a 0-d integer tensor) as an int; an
    ArgumentTypeError for a float, a string or any other non-integer."""
    try:
        return operator.index(value)
    except TypeError:
        raise ArgumentTypeError(f"DistributedSampler: {name} should be an int, but got "
                                f"{value!r} of type {type_name(value)}") from None
