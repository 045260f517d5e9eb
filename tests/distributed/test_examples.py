"""The data-parallel example runs on 2 ranks and learns (a few hundred images)."""

import os
import re

import pytest

from tests.distributed.harness import ROOT, needs_mpi, run_ranks

DATA = "/usr/share/datasets/fashion-mnist"
pytestmark = [needs_mpi,
              pytest.mark.skipif(not os.path.isdir(DATA), reason="Fashion-MNIST not installed")]


def test_ddp_example_trains_on_two_ranks():
    done = run_ranks(ROOT / "examples" / "ddp_fashion_mnist.py", 2, timeout=180,
                     args=("--train-size", "1024"))
    accuracy = re.search(r"test accuracy ([\d.]+)%", done.stdout)
    assert accuracy and float(accuracy.group(1)) > 40.0, done.stdout
    assert "on 2 ranks" in done.stdout
