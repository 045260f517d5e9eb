"""Tensor-parallel layers and GPT against the unsharded model, on 2 and 4 ranks."""

from pathlib import Path

import pytest

import ember
from ember.distributed.tensor_parallel import shard, unshard
from tests.distributed.harness import needs_mpi, reports, run_ranks

RANKS = Path(__file__).parent / "ranks"


@needs_mpi
@pytest.mark.parametrize("n", [2, 4])
def test_tensor_parallel_matches_unsharded(n):
    done = run_ranks(RANKS / "tensor_parallel_ranks.py", n, timeout=60)
    assert reports(done) == {r: ["ok"] for r in range(n)}


def test_shard_and_unshard_in_one_process():
    x = ember.arange(24).view(2, 12)
    parts = [shard(x, 1, r, 2, stride=3) for r in range(2)]
    assert parts[0].tolist() == [[0, 1, 4, 5, 8, 9], [12, 13, 16, 17, 20, 21]]
    assert unshard(parts, 1, stride=3).tolist() == x.tolist()
    assert unshard([shard(x, 0, r, 2) for r in range(2)], 0).tolist() == x.tolist()
    with pytest.raises(ValueError, match="size 12 does not split into 4 ranks × 2 blocks"):
        shard(x, 1, 0, 4, stride=2)


PARALLELIZE_OWN_COPY = """
import copy, os
import ember, ember.distributed as dist, ember.nn.functional as F
from ember.distributed.tensor_parallel import parallelize_gpt
from tests.distributed.harness import report
dist.init_process_group("mpi")
g = ember.Generator().manual_seed(1)                     # the same batch on every rank
idx, target = (ember.randint(0, 256, (2, 16), generator=g) for _ in range(2))
if os.environ["SEEDED"] == "1":
    ember.manual_seed(0)
model = ember.models.gpt(n_layer=1, d_model=32, n_head=4)
unsplit = F.cross_entropy(copy.deepcopy(model)(idx).view(-1, 256), target.view(-1)).item()
split = F.cross_entropy(parallelize_gpt(model)(idx).view(-1, 256), target.view(-1)).item()
pos = model.pos_emb.weight.detach().clone()
dist.all_reduce(pos, op="max")
report([abs(split - unsplit) < 1e-6, bool((pos == model.pos_emb.weight).all())])
"""


@needs_mpi
def test_parallelize_gpt_splits_each_ranks_own_copy():
    # docs/model_parallel.md: seeded alike, the split GPT is the unsplit one on every rank;
    # seeded differently (the default), it is neither rank's model and the replicated position
    # embedding differs between ranks (parallelize_gpt does not broadcast)
    seeded = run_ranks(PARALLELIZE_OWN_COPY, 2, timeout=120, env={"SEEDED": "1"})
    assert reports(seeded) == {0: [[True, True]], 1: [[True, True]]}
    unseeded = reports(run_ranks(PARALLELIZE_OWN_COPY, 2, timeout=120, env={"SEEDED": "0"}))
    assert not all(same_pos for [[_, same_pos]] in [unseeded[0], unseeded[1]])
