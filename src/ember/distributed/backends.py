"""Which communication backends exist here, and how the job was launched.

Ember has one backend, MPI (through mpi4py); PyTorch's other names (``nccl``, ``gloo``, …)
are known to :class:`Backend` so scripts can test for them, and are reported unavailable.

Example:
    >>> dist.Backend("MPI"), dist.Backend.NCCL
    ('mpi', 'nccl')
    >>> dist.is_nccl_available(), dist.is_backend_available("gloo")
    (False, False)
"""

from __future__ import annotations

import os
from typing import Any

from ember.distributed.process_group import GroupMember, ProcessGroup, is_available, resolve
from ember.errors import ArgumentError


class Backend(str):
    """Backend names, as lowercase strings: ``Backend("MPI") == Backend.MPI == "mpi"``.

    Like PyTorch's, an unknown name is kept (lowercased), for backends registered elsewhere;
    only ``"mpi"`` can run in Ember.
    """

    UNDEFINED = "undefined"
    GLOO = "gloo"
    NCCL = "nccl"
    UCC = "ucc"
    MPI = "mpi"
    XCCL = "xccl"

    backend_list = [UNDEFINED, GLOO, NCCL, XCCL, UCC, MPI]

    def __new__(cls, name: str) -> str:  # type: ignore[misc]
        if not isinstance(name, str):
            raise ArgumentError(f"Backend: the name must be a string, got {type(name).__name__}")
        value = getattr(Backend, name.upper(), None)
        return value if isinstance(value, str) else name.lower()


def is_backend_available(backend: str) -> bool:
    """Whether ``backend`` can run here: ``"mpi"`` when mpi4py imports, nothing else.

    Example:
        >>> dist.is_backend_available("nccl")
        False
    """
    return Backend(backend) == Backend.MPI and is_available()


def is_mpi_available() -> bool:
    """Whether the MPI backend (mpi4py and an MPI library) is available."""
    return is_available()


def is_nccl_available() -> bool:
    """False: Ember has no NCCL backend."""
    return False


def is_gloo_available() -> bool:
    """False: Ember has no Gloo backend (its CPU backend is MPI)."""
    return False


def is_ucc_available() -> bool:
    """False: Ember has no UCC backend."""
    return False


def is_torchelastic_launched() -> bool:
    """Whether this process was started by an elastic launcher: ``ember launch`` (which sets
    ``EMBER_RESTART_COUNT``) or PyTorch's ``torchrun`` (``TORCHELASTIC_RUN_ID``).

    Example:
        >>> dist.is_torchelastic_launched()      # python script.py
        False
    """
    return "EMBER_RESTART_COUNT" in os.environ or "TORCHELASTIC_RUN_ID" in os.environ


# the rank within its node, as launchers publish it: torchrun, Open MPI, MPICH/Intel MPI
_LOCAL_RANK_VARS = ("LOCAL_RANK", "OMPI_COMM_WORLD_LOCAL_RANK", "MPI_LOCALRANKID")


def get_node_local_rank(fallback_rank: int | None = None) -> int:
    """This process's rank among the ranks on its machine, from the launcher's environment
    (``LOCAL_RANK`` as PyTorch reads, else Open MPI's or MPICH's variable); ``fallback_rank``
    when none is set, else an error. Needs no process group.

    Example:
        >>> dist.get_node_local_rank(fallback_rank=0)   # python script.py: no launcher
        0
    """
    for var in _LOCAL_RANK_VARS:
        if var in os.environ:
            return int(os.environ[var])
    if fallback_rank is not None:
        return int(fallback_rank)
    raise RuntimeError(
        "get_node_local_rank: no launcher set LOCAL_RANK (nor Open MPI's "
        "OMPI_COMM_WORLD_LOCAL_RANK or MPICH's MPI_LOCALRANKID). Hint: launch with "
        "`ember launch -n N`, or pass fallback_rank to run locally"
    )


def is_xccl_available() -> bool:
    """False: Intel's XCCL backend is not part of Ember."""
    return False


def get_backend_config(group: ProcessGroup | None = None) -> str:
    """The backend of each device type of ``group`` (the world by default), PyTorch's
    ``"device:backend"`` list: always ``"cpu:mpi"`` here.

    Example:
        >>> dist.get_backend_config()      # doctest: +SKIP
        'cpu:mpi'
    """
    if group is GroupMember.NON_GROUP_MEMBER:
        raise ArgumentError("get_backend_config: invalid process group specified (this rank is "
                            "not a member)")
    resolve(group, "get_backend_config")
    return "cpu:mpi"


def get_default_backend_for_device(device: Any) -> str:
    """The backend ``init_process_group`` picks for ``device`` (a name or ``ember.device``):
    ``"mpi"`` for the CPU; other devices have none in Ember (PyTorch picks NCCL for CUDA).

    Example:
        >>> dist.get_default_backend_for_device("cpu")
        'mpi'
    """
    kind = str(getattr(device, "type", device)).split(":")[0]
    if kind != "cpu":
        raise ArgumentError(f"get_default_backend_for_device: no backend is registered for device "
                            f"{kind!r}; Ember's MPI backend takes CPU tensors. Hint: move tensors "
                            "to the CPU for collectives")
    return Backend.MPI
