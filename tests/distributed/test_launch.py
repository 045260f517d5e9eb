"""``ember launch``: the settings it gives the ranks, and a failing rank ending the job with
its traceback instead of a hang (under the launcher and under plain mpiexec)."""

import os
import sys

from ember.distributed.mpi_env import mpi_env
from tests.distributed.harness import (
    ROOT,
    needs_mpi,
    rank_env,
    reports,
    run_process,
    run_ranks,
)

pytestmark = needs_mpi

ENV_SCRIPT = """
import os
import ember.distributed as dist
from ember.distributed.mpi_env import mpi_env
from tests.distributed.harness import report
dist.init_process_group()
names = ["OMPI_MCA_pml", "OMPI_MCA_btl", "OMPI_ALLOW_RUN_AS_ROOT",
         "OMPI_ALLOW_RUN_AS_ROOT_CONFIRM", "EMBER_RESTART_COUNT"]
report([dist.get_world_size(), {k: os.environ.get(k) for k in names}])
"""

FAIL_SCRIPT = """
import ember, ember.distributed as dist
dist.init_process_group()
if dist.get_rank() == 1:
    raise ValueError("boom on rank 1")
dist.all_reduce(ember.ones(3))   # waits for rank 1 forever unless the job is aborted
"""


EXIT_SCRIPT = """
import sys, ember, ember.distributed as dist
dist.init_process_group()
if dist.get_rank() == 1:
    sys.exit("bad config on rank 1")   # no excepthook; MPI_Finalize would wait for rank 0
dist.all_reduce(ember.ones(3))
"""


def _launcher_env() -> dict:
    """This environment without any MPI settings: the launcher must supply them."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("OMPI_", "PRTE_"))}
    env["PYTHONPATH"] = os.pathsep.join([str(ROOT / "src"), str(ROOT)])
    return env


def _launch(tmp_path, code, *flags, check=True):
    script = tmp_path / "job.py"
    script.write_text(code)
    cmd = [sys.executable, "-m", "ember.cli", "launch", *flags, str(script)]
    return run_process(cmd, _launcher_env(), timeout=60, check=check)


def test_launch_gives_the_ranks_the_mpi_settings(tmp_path):
    got = reports(_launch(tmp_path, ENV_SCRIPT, "-n", "3"))
    assert sorted(got) == [0, 1, 2]
    size, env = got[0][0]
    assert size == 3  # more ranks than this machine's 2 cores: oversubscribed
    assert env["OMPI_MCA_pml"] == "ob1" and env["OMPI_MCA_btl"] == "self,sm"
    assert env["EMBER_RESTART_COUNT"] == "0"
    if os.geteuid() == 0:
        assert env["OMPI_ALLOW_RUN_AS_ROOT"] == env["OMPI_ALLOW_RUN_AS_ROOT_CONFIRM"] == "1"


def test_mpi_env_settings_and_precedence():
    env = mpi_env(4, base={"OMPI_MCA_btl": "self,tcp"})
    assert env["PRTE_MCA_rmaps_default_mapping_policy"] == ":oversubscribe"  # (read by mpiexec)
    assert env["OMPI_MCA_btl"] == "self,tcp"  # the user's setting wins
    assert "OMPI_MCA_btl" not in mpi_env(4, single_host=False, base={})
    harness = rank_env(4)  # what the test ranks get: the settings, shared memory only
    assert harness["OMPI_MCA_pml"] == "ob1" and harness["OMPI_MCA_btl"] == "self,sm"
    assert harness["PRTE_MCA_rmaps_default_mapping_policy"] == ":oversubscribe"
    if os.geteuid() == 0:
        assert harness["OMPI_ALLOW_RUN_AS_ROOT"] == harness["OMPI_ALLOW_RUN_AS_ROOT_CONFIRM"]


def test_a_failing_rank_aborts_the_launched_job_with_its_traceback(tmp_path):
    done = _launch(tmp_path, FAIL_SCRIPT, "-n", "2", check=False)
    assert done.returncode != 0
    assert "[rank 1] ValueError: boom on rank 1" in done.stderr
    assert "rank 1 of 2 failed with ValueError; aborting the job" in done.stderr


def test_a_failing_rank_aborts_a_plain_mpiexec_job():
    done = run_ranks(FAIL_SCRIPT, 2, timeout=60, check=False)
    assert done.returncode != 0
    assert "[rank 1] ValueError: boom on rank 1" in done.stderr


def test_a_rank_calling_sys_exit_aborts_the_launched_job(tmp_path):
    done = _launch(tmp_path, EXIT_SCRIPT, "-n", "2", check=False)
    assert done.returncode != 0
    assert "rank 1 of 2 exited with status 'bad config on rank 1'; aborting" in done.stderr


def test_init_process_group_checks_pytorchs_world_size_and_rank():
    code = (
        "import pytest, ember.distributed as dist\n"
        "with pytest.raises(dist.DistributedError, match='world_size=2, but MPI started this "
        "process as rank 0 of 1'):\n"
        "    dist.init_process_group('mpi', world_size=2, rank=0)\n"
        "assert dist.init_process_group(None, world_size=1, rank=0).size() == 1\n"
        "assert dist.get_backend() == 'mpi'\n"
    )
    run_process([sys.executable, "-c", code], rank_env(1), timeout=60)
