"""DistributedSampler in the data layer: torch's shares without shuffling, no process group
needed when num_replicas and rank are given, the world asked through the provider that
ember.distributed registers, and no import of the distributed package from ember.data."""

from __future__ import annotations

import pathlib
import re

import pytest
import torch

import ember
from ember.data import distributed_sampler
from ember.data.distributed_sampler import DistributedSampler


def test_one_class_under_torchs_paths():
    assert ember.utils.data.DistributedSampler is DistributedSampler
    assert ember.distributed.DistributedSampler is DistributedSampler


@pytest.mark.parametrize(("size", "n", "drop_last"), [(10, 3, False), (10, 3, True),
                                                      (8, 4, False), (2, 5, False)])
def test_unshuffled_shares_match_torch(size, n, drop_last):
    for rank in range(n):
        ours = DistributedSampler(range(size), n, rank, shuffle=False, drop_last=drop_last)
        theirs = torch.utils.data.DistributedSampler(range(size), n, rank, shuffle=False,
                                                     drop_last=drop_last)
        assert list(ours) == list(theirs) and len(ours) == len(theirs)


def test_the_world_comes_from_the_registered_provider(monkeypatch):
    monkeypatch.setattr(distributed_sampler, "_world", lambda: (3, 2))
    sampler = DistributedSampler(range(9), shuffle=False)
    assert (sampler.num_replicas, sampler.rank, list(sampler)) == (3, 2, [2, 5, 8])
    assert DistributedSampler(range(9), rank=0, shuffle=False).num_replicas == 3
    monkeypatch.setattr(distributed_sampler, "_world", None)
    with pytest.raises(RuntimeError, match="pass num_replicas= and rank="):
        DistributedSampler(range(9))
    assert len(DistributedSampler(range(9), 2, 1)) == 5  # both given: no world asked


def test_without_a_process_group_the_distributed_world_says_so():
    with pytest.raises(ember.distributed.DistributedError, match="init_process_group"):
        DistributedSampler(range(4))


def test_the_data_layer_does_not_import_the_distributed_package():
    folder = pathlib.Path(ember.data.__file__).parent
    upward = re.compile(r"^\s*(from|import)\s+ember\.distributed", re.MULTILINE)
    for path in folder.glob("*.py"):
        assert not upward.search(path.read_text()), path.name


@pytest.mark.parametrize("seed", [-3, 0, 2**63])
def test_shuffled_shares_partition_the_padded_dataset_for_any_seed_torch_takes(seed):
    """Every rank draws the same order for seed + epoch (torch takes negative seeds too), the
    shares are disjoint, cover the dataset, and change with set_epoch."""
    shares = {}
    for epoch in (0, 1):
        samplers = [DistributedSampler(range(10), 3, rank, seed=seed) for rank in range(3)]
        for s in samplers:
            s.set_epoch(epoch)
        shares[epoch] = [list(s) for s in samplers]
        torch_len = len(torch.utils.data.DistributedSampler(range(10), 3, 0, seed=seed))
        assert [len(s) for s in shares[epoch]] == [torch_len] * 3
        flat = sum(shares[epoch], [])
        assert sorted(set(flat)) == list(range(10)) and len(flat) == 12
    assert shares[0] != shares[1]


@pytest.mark.parametrize(("grown", "drop_last"), [(8, False), (9, False), (12, True)])
def test_a_dataset_grown_past_the_share_is_refused_as_torch(grown, drop_last):
    # made for 7 items on 2 ranks (4 each, padded); torch's assertion fails where items would
    # never be visited, and it trims as Ember does with drop_last or when the padding covers them
    ours_data, theirs_data = list(range(7)), list(range(7))
    ours = DistributedSampler(ours_data, 2, 1, shuffle=False, drop_last=drop_last)
    theirs = torch.utils.data.DistributedSampler(theirs_data, 2, 1, shuffle=False,
                                                 drop_last=drop_last)
    ours_data.extend(range(7, grown))
    theirs_data.extend(range(7, grown))
    try:
        want = list(theirs)
    except AssertionError:
        with pytest.raises(ValueError, match="grown to 9 items .* made for 8 .*new Distrib"):
            list(ours)
    else:
        assert list(ours) == want
