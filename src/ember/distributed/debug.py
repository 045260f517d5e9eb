"""``DebugLevel``: at ``DETAIL`` every collective on tensors first checks that all ranks of
the group are calling the same collective on tensors of the same shape and dtype, and raises
on every rank, naming what each rank runs, where a mismatch would otherwise hang or mix data
(PyTorch's ``TORCH_DISTRIBUTED_DEBUG=DETAIL`` check). The check is one small ``allgather`` per
collective; at ``OFF`` (the default) and ``INFO`` it costs one attribute read. ``INFO`` adds
nothing else in Ember. The level starts as the ``TORCH_DISTRIBUTED_DEBUG`` environment
variable says when ``ember.distributed`` is imported, as PyTorch's does (an invalid value
raises there); :func:`set_debug_level` changes it at any time, also before
:func:`~ember.distributed.init_process_group`.

Example (under ``ember launch -n 2``):
    >>> dist.set_debug_level(dist.DebugLevel.DETAIL)
    >>> dist.all_reduce(ember.ones(3 + dist.get_rank()))     # raises DistError on both ranks:
    all_reduce: the ranks of the group [0, 1] are not running the same collective: rank 0 runs
    all_reduce on (3,) float32, rank 1 runs all_reduce on (4,) float32 (…)
"""

from __future__ import annotations

import os
from enum import Enum

from ember.distributed.process_group import DistError, ProcessGroup, resolve
from ember.errors import ArgumentError
from ember.tensor import Tensor

_ENV = "TORCH_DISTRIBUTED_DEBUG"


class DebugLevel(Enum):
    """How much checking distributed calls do (PyTorch's members and values)."""

    OFF = 0
    INFO = 1
    DETAIL = 2


def _from_env() -> DebugLevel:
    value = os.environ.get(_ENV, "OFF").upper()
    if value not in DebugLevel.__members__:
        raise ArgumentError(f"The value of {_ENV} must be OFF, INFO, or DETAIL, got "
                            f"{os.environ[_ENV]!r}")
    return DebugLevel[value]


class _Level:
    current = DebugLevel.OFF


def get_debug_level() -> DebugLevel:
    """The current level."""
    return _Level.current


def set_debug_level(level: DebugLevel) -> None:
    """Sets the level for this process (every rank should set the same one)."""
    if not isinstance(level, DebugLevel):
        raise TypeError(f"set_debug_level: expected a DebugLevel, got {level!r}")
    _Level.current = level


def set_debug_level_from_env() -> None:
    """Sets the level from ``TORCH_DISTRIBUTED_DEBUG`` (``OFF``, ``INFO`` or ``DETAIL``)."""
    _Level.current = _from_env()


set_debug_level_from_env()


def entered(group: ProcessGroup | None, who: str, tensor: Tensor | None = None) -> ProcessGroup:
    """The group a collective runs on (as ``resolve``), after the ``DETAIL`` check that every
    rank runs ``who`` on a tensor of this shape and dtype (``tensor`` None: the name only)."""
    g = resolve(group, who)
    if _Level.current is DebugLevel.DETAIL:
        _check_same_call(g, who, tensor)
    return g


def _check_same_call(g: ProcessGroup, who: str, tensor: Tensor | None) -> None:
    mine = who if tensor is None else f"{who} on {tuple(tensor.shape)} {tensor.dtype.name}"
    calls = g.comm.allgather(mine)
    if len(set(calls)) > 1:
        runs = ", ".join(f"rank {r} runs {c}" for r, c in zip(g.ranks, calls))
        raise DistError(f"{who}: the ranks of the group {g.ranks} are not running the same "
                        f"collective: {runs} (checked because the debug level is DETAIL). "
                        "Hint: every rank must call the same collectives in the same order, "
                        "on tensors of the same shape and dtype")

