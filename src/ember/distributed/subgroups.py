"""Groups as lists of ranks: translating between group and world ranks, and cutting the world
into disjoint sub-groups (``new_subgroups``, ``new_subgroups_by_enumeration``), each a real
MPI sub-communicator that every collective takes as ``group=``.

Example (under ``ember launch -n 4``):
    >>> mine, pairs = dist.new_subgroups(2)          # [[0, 1], [2, 3]]
    >>> dist.get_process_group_ranks(mine)           # on rank 3
    [2, 3]
    >>> dist.get_global_rank(mine, 0), dist.get_group_rank(mine, 3)
    (2, 1)
"""

from __future__ import annotations

import datetime
from typing import Any

from ember.distributed.process_group import (
    GroupMember,
    ProcessGroup,
    resolve,
    split_world,
)
from ember.errors import ArgumentError


def get_process_group_ranks(group: ProcessGroup | None) -> list[int]:
    """The world ranks of ``group``'s members (the world's when None), in group-rank order.

    Example:
        >>> dist.get_process_group_ranks(dist.new_group([2, 0]))
        [0, 2]
    """
    return list(resolve(group, "get_process_group_ranks").ranks)


def get_global_rank(group: ProcessGroup, group_rank: int) -> int:
    """The world rank of rank ``group_rank`` of ``group``.

    Example:
        >>> dist.get_global_rank(dist.new_group([1, 3]), 1)
        3
    """
    ranks = resolve(group, "get_global_rank").ranks
    if not 0 <= group_rank < len(ranks):
        raise ArgumentError(f"get_global_rank: group rank {group_rank} is not part of the group "
                            f"of world ranks {ranks}")
    return ranks[group_rank]


def get_group_rank(group: ProcessGroup, global_rank: int) -> int:
    """The rank inside ``group`` of world rank ``global_rank``.

    Example:
        >>> dist.get_group_rank(dist.new_group([1, 3]), 3)
        1
    """
    ranks = resolve(group, "get_group_rank").ranks
    if global_rank not in ranks:
        raise ArgumentError(f"get_group_rank: global rank {global_rank} is not part of the group "
                            f"of world ranks {ranks}")
    return ranks.index(global_rank)


def new_subgroups(group_size: int | None = None, group: ProcessGroup | None = None,
                  timeout: Any = None, backend: str | None = None, pg_options: Any = None,
                  group_desc: str | None = None) -> tuple[Any, list[Any]]:
    """Cuts ``group`` (the world by default) into consecutive sub-groups of ``group_size``
    ranks; every rank must call it. Returns ``(this rank's sub-group, all sub-groups)``, the
    ones this rank is not in being ``GroupMember.NON_GROUP_MEMBER``. ``timeout``,
    ``backend``, ``pg_options`` and ``group_desc`` are PyTorch's and change nothing on MPI.

    Example:
        >>> mine, groups = dist.new_subgroups(2)      # 4 ranks: [0, 1] and [2, 3]
        >>> dist.get_rank(mine), dist.get_world_size(mine)      # on rank 3
        (1, 2)
    """
    if group_size is None:
        raise ArgumentError("new_subgroups: the default group size (one sub-group per node's "
                            "CUDA devices) needs CUDA, which Ember's MPI backend does not use. "
                            "Hint: pass group_size")
    if group_size <= 0:
        raise ArgumentError(f"new_subgroups: the arg 'group_size' ({group_size}) must be positive")
    ranks = get_process_group_ranks(group)
    if len(ranks) < group_size:
        raise ArgumentError(f"new_subgroups: the arg 'group_size' ({group_size}) must not exceed "
                            f"the world size ({len(ranks)})")
    if len(ranks) % group_size:
        raise ArgumentError(f"new_subgroups: the world size ({len(ranks)}) must be divisible by "
                            f"'group_size={group_size}'")
    parts = [ranks[i:i + group_size] for i in range(0, len(ranks), group_size)]
    return new_subgroups_by_enumeration(parts)


def new_subgroups_by_enumeration(ranks_per_subgroup_list: list[list[int]],
                                 timeout: Any = None, backend: str | None = None,
                                 pg_options: Any = None,
                                 group_desc: str | None = None) -> tuple[Any, list[Any]]:
    """One sub-group per list of world ranks (the lists disjoint; a rank may be in none); every
    rank must call it with the same lists. Returns ``(this rank's sub-group or None, all
    sub-groups)``, as :func:`new_subgroups`. One ``MPI_Comm_split`` makes them all.

    Example:
        >>> mine, groups = dist.new_subgroups_by_enumeration([[0, 2], [1, 3]])
        >>> dist.get_process_group_ranks(mine)       # on rank 2
        [0, 2]
    """
    if not ranks_per_subgroup_list:
        raise ArgumentError("new_subgroups_by_enumeration: the arg 'ranks_per_subgroup_list' "
                            "cannot be empty")
    seen: dict[int, list[int]] = {}
    for ranks in ranks_per_subgroup_list:
        for r in ranks:
            if r in seen:
                raise ArgumentError(f"new_subgroups_by_enumeration: rank {r} has appeared in both "
                                    f"subgroup {seen[r]} and {list(ranks)}")
            seen[r] = list(ranks)
    groups = split_world([list(r) for r in ranks_per_subgroup_list],
                         "new_subgroups_by_enumeration")
    mine = [g for g in groups if g is not GroupMember.NON_GROUP_MEMBER]
    return (mine[0] if mine else None), groups


def split_group(
    parent_pg: ProcessGroup | None = None,
    split_ranks: list[list[int]] | None = None,
    timeout: datetime.timedelta | None = None,
    pg_options: Any = None,
    group_desc: str | None = None,
    backend: str | None = None,
) -> ProcessGroup | None:
    """Cuts ``parent_pg`` (the world by default) into the disjoint groups ``split_ranks``
    (lists of ranks *of the parent group*) with one ``MPI_Comm_split``; every rank of the
    parent calls it with the same lists. Returns this rank's group, or None if no list holds
    it, as PyTorch. ``timeout``, ``pg_options``, ``group_desc`` and ``backend`` are PyTorch's
    and change nothing here (the backend can only be ``"mpi"``).

    Example:
        >>> pair = dist.split_group(split_ranks=[[0, 1], [2, 3]])     # on 4 ranks
        >>> dist.get_process_group_ranks(pair)                        # on rank 3
        [2, 3]
    """
    if backend not in (None, "mpi"):
        raise ArgumentError(f"split_group: backend {backend!r} is not available; Ember's is 'mpi'")
    if not split_ranks or not all(isinstance(part, list | tuple) for part in split_ranks):
        raise ArgumentError(f"split_group: split_ranks must be a non-empty list of lists of "
                            f"ranks, got {split_ranks!r}")
    for part in split_ranks:
        if not part:
            raise ArgumentError(f"split_group: the split group cannot be empty (split_ranks="
                                f"{split_ranks!r})")
        if len(set(part)) != len(part):
            raise ArgumentError(f"split_group: the split group {list(part)} cannot have duplicate "
                                "ranks")
    mine = [g for g in split_world(split_ranks, "split_group", parent_pg)
            if g is not GroupMember.NON_GROUP_MEMBER]
    return mine[0] if mine else None
