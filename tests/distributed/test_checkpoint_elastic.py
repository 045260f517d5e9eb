"""Sharded checkpoints (atomic, manifest, re-sharded from 4 ranks to 2) and elastic restart
(a rank killed by a signal; the job resumes from the last checkpoint and ends where an
uninterrupted run ends)."""

import json
import os
import sys
from pathlib import Path

import numpy as np

from tests.distributed.harness import ROOT, needs_mpi, run_process, run_ranks

SCRIPT = Path(__file__).parent / "ranks" / "ckpt_train.py"
pytestmark = needs_mpi


def _params(path) -> dict:
    with np.load(path) as f:
        return dict(f)


def _train(n, tmp_path, name, steps, **flags):
    out = tmp_path / f"{name}.npz"
    args = ["--steps", steps, "--ckpt", tmp_path / name, "--out", out]
    run_ranks(SCRIPT, n, timeout=120, args=tuple(args))
    return out


def test_save_on_four_ranks_resume_on_two(tmp_path):
    _train(4, tmp_path, "run", 2)
    manifest = json.loads((tmp_path / "run" / "step_00000002" / "manifest.json").read_text())
    assert manifest["world_size"] == 4 and manifest["extra"]["step"] == 2
    moments = manifest["entries"]["optim.group0.exp_avg"]
    assert sorted(p["file"] for p in moments["pieces"]) == [
        f"rank{r:05d}.safetensors" for r in range(4)
    ]
    assert not list((tmp_path / "run").glob(".step_*"))  # no temporary folder left
    resumed = _params(_train(2, tmp_path, "run", 4))
    straight = _params(_train(1, tmp_path, "single", 4))
    for k, v in straight.items():
        assert np.linalg.norm(resumed[k] - v) <= 1e-5 * np.linalg.norm(v), k


def test_killed_rank_restarts_from_the_last_checkpoint(tmp_path):
    uninterrupted = _params(_train(2, tmp_path, "plain", 4))
    out = tmp_path / "elastic.npz"
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(ROOT / "src"), str(ROOT)]))
    cmd = [
        sys.executable,
        "-m",
        "ember.cli",
        "launch",
        "-n",
        "2",
        "--max-restarts",
        "1",
        str(SCRIPT),
        "--steps",
        "4",
        "--ckpt",
        str(tmp_path / "elastic"),
        "--out",
        str(out),
        "--kill-at",
        "2",
    ]
    done = run_process(cmd, env, timeout=120)
    assert "restart 1 of 1" in done.stderr
    elastic = _params(out)
    for k, v in uninterrupted.items():
        np.testing.assert_array_equal(elastic[k], v, err_msg=k)


ERRORS = """
import sys, pytest, ember, ember.distributed as dist
from ember.distributed import checkpoint
from tests.distributed.harness import report
dist.init_process_group()
root = sys.argv[1]
path = checkpoint.save(root, {"w": ember.ones(3)}, step=1, extra={"note": "x"})
(path.parent / ".step_00000009.tmp").mkdir()          # a save that never finished
(path.parent / "step_00000008").mkdir()               # a folder without its manifest
assert checkpoint.latest(root) == path
with pytest.raises(ember.errors.CheckpointError, match="saved with shape"):
    checkpoint.load(path, {"w": ember.zeros(4)})
with pytest.raises(ember.errors.CheckpointError, match="no entry 'v'"):
    checkpoint.load(path, {"v": ember.zeros(3)})
piece = checkpoint.ShardedTensor(ember.zeros(2), (3,), 2)  # asks for values 2..3 of 3
with pytest.raises(ember.errors.CheckpointError, match="cover 1 of the 2 values"):
    checkpoint.load(path, {"w": piece})
w = ember.zeros(3)
assert checkpoint.load(path, {"w": w}) == {"note": "x"} and w.tolist() == [1.0, 1.0, 1.0]
report("ok")
"""


def test_latest_skips_unfinished_saves_and_loading_errors_are_clear(tmp_path):
    run_ranks(ERRORS, 1, timeout=60, args=(tmp_path,))


def test_ranks_holding_different_tensors_all_get_saved(tmp_path):
    # pipeline stages: each rank its own weights, plus one replicated entry
    code = f"""
import ember, ember.distributed as dist
from ember.distributed import checkpoint
dist.init_process_group("mpi")
r = dist.get_rank()
state = {{"shared": ember.ones(2), f"stage{{r}}.w": ember.full((3,), float(r))}}
path = checkpoint.save({str(tmp_path)!r}, state, step=1)
mine = {{"shared": ember.zeros(2), f"stage{{r}}.w": ember.zeros(3)}}
checkpoint.load(path, mine)
assert mine[f"stage{{r}}.w"].tolist() == [float(r)] * 3, mine
"""
    run_ranks(code, 2, timeout=60)
    manifest = json.loads((tmp_path / "step_00000001" / "manifest.json").read_text())
    assert sorted(manifest["entries"]) == ["shared", "stage0.w", "stage1.w"]
