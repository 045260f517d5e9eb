"""DistributedSampler in one process: the ranks' shares partition (or pad) the dataset."""

import pytest

import ember
from ember.distributed import DistributedSampler


@pytest.mark.parametrize("size, n, drop_last", [(10, 3, False), (10, 3, True), (8, 4, False)])
def test_shares_cover_the_dataset(size, n, drop_last):
    data = list(range(size))
    shares = [list(DistributedSampler(data, n, r, seed=3, drop_last=drop_last)) for r in range(n)]
    assert len({len(s) for s in shares}) == 1
    seen = [i for s in shares for i in s]
    if drop_last:
        assert len(seen) == len(set(seen)) == size // n * n
    else:
        assert set(seen) == set(data) and len(seen) == -(-size // n) * n


def test_epochs_reshuffle_identically_on_every_rank():
    data = list(range(20))
    a, b = DistributedSampler(data, 2, 0), DistributedSampler(data, 2, 1)
    first = list(a)
    a.set_epoch(1)
    b.set_epoch(1)
    assert list(a) != first
    assert sorted(list(a) + list(b)) == data
    assert list(DistributedSampler(data, 2, 0, shuffle=False)) == list(range(0, 20, 2))


def test_with_a_dataloader_and_bad_rank():
    loader = ember.data.DataLoader(
        list(range(6)),
        batch_size=2,
        sampler=DistributedSampler(list(range(6)), 2, 1, shuffle=False),
    )
    assert [b.tolist() for b in loader] == [[1, 3], [5]]
    with pytest.raises(ValueError, match="invalid rank 2 for 2 replicas"):
        DistributedSampler([1, 2], 2, 2)
