"""A DataLoader over an IterableDataset whose ``len()`` undercounts warns once per epoch when
it yields more batches than ``len(loader)`` reported, and stays silent when nobody asked for
the length or the count holds. (PyTorch compares batches with ``len(dataset)``, samples, and
warns at every batch past it: its warning mostly stays silent where batches hold several
samples; Ember's counts what ``len(loader)`` promised.)"""

import warnings

import pytest

import ember
from ember.data import DataLoader, IterableDataset, get_worker_info


class Undercounted(IterableDataset):
    def __init__(self, items: int, claimed: int, split: bool = False):
        self.items, self.claimed, self.split = items, claimed, split

    def __iter__(self):
        info = get_worker_info()
        if self.split and info is not None:
            return iter(range(info.id, self.items, info.num_workers))
        return iter(range(self.items))

    def __len__(self):
        return self.claimed


def _fetch_all(loader):
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        batches = list(loader)
    messages = [str(w.message) for w in caught]
    return batches, [m for m in messages if "Length of IterableDataset" in m]


def test_more_batches_than_reported_warns_once():
    loader = DataLoader(Undercounted(10, 6), batch_size=2)
    assert len(loader) == 3
    batches, messages = _fetch_all(loader)
    assert len(batches) == 5
    assert len(messages) == 1
    assert "reported as 3 batches" in messages[0] and "4 batches have been fetched" in messages[0]


def test_no_warning_without_len_call_or_when_the_count_holds():
    assert _fetch_all(DataLoader(Undercounted(10, 6), batch_size=2))[1] == []
    loader = DataLoader(Undercounted(10, 10), batch_size=3)
    assert len(loader) == 4
    assert _fetch_all(loader)[1] == []


def test_unbatched_loader_counts_items():
    loader = DataLoader(Undercounted(4, 3), batch_size=None)
    assert len(loader) == 3
    batches, messages = _fetch_all(loader)
    assert [int(b) for b in batches] == [0, 1, 2, 3] and len(messages) == 1


@pytest.mark.parametrize("persistent", [False, True])
def test_workers_without_sharding_warn_with_a_hint_each_epoch(persistent):
    # two replicas each yield all 4 items: 8 items, 4 batches of 2, where len said 2
    loader = DataLoader(Undercounted(4, 4), batch_size=2, num_workers=2,
                        persistent_workers=persistent)
    assert len(loader) == 2
    for _ in range(2):
        batches, messages = _fetch_all(loader)
        assert len(batches) == 4 and len(messages) == 1
        assert "get_worker_info" in messages[0]


def test_sharded_workers_stay_silent():
    loader = DataLoader(Undercounted(8, 8, split=True), batch_size=2, num_workers=2)
    assert len(loader) == 4
    batches, messages = _fetch_all(loader)
    assert sorted(int(v) for b in batches for v in b) == list(range(8)) and messages == []
    assert isinstance(batches[0], ember.Tensor)
