"""DistributedDataParallel: the same losses and parameters as one process with the global
batch (mlp and cnn, 2 and 4 ranks), bucketing, no_sync, unused parameters, a compiled forward
inside it."""

import re
import subprocess
import sys
from pathlib import Path

import pytest

from tests.distributed.harness import needs_mpi, reports, run_ranks

RANKS = Path(__file__).parent / "ranks"


@needs_mpi
@pytest.mark.parametrize("n", [2, 4])
def test_ddp_matches_one_process_with_the_global_batch(n):
    done = run_ranks(RANKS / "ddp_equivalence.py", n, timeout=240,
                     args=("mlp", "cnn", "unused", "compiled"))
    worst = reports(done)
    assert sorted(worst) == list(range(n))
    assert max(v[0] for v in worst.values()) <= 1e-5


def test_ddp_is_registered_in_nn_parallel_without_nn_importing_distributed():
    import ember
    import ember.distributed as dist

    assert ember.nn.parallel.DistributedDataParallel is dist.DistributedDataParallel
    nn_dir = Path(ember.nn.__file__).parent
    for path in nn_dir.rglob("*.py"):
        assert not re.search(r"^\s*(from|import) ember\.distributed", path.read_text(), re.M), path


def test_import_ember_does_not_start_mpi():
    # (nor import FSDP: ember.distributed.fsdp comes on first use, as ember.onnx)
    code = ("import sys, ember; assert 'mpi4py' not in sys.modules; ember.distributed.get_rank; "
            "assert 'ember.distributed.fsdp' not in sys.modules; "
            "ember.distributed.fsdp.FullyShardedDataParallel")
    assert subprocess.run([sys.executable, "-c", code]).returncode == 0
