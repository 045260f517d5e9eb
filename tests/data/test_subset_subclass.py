"""A Subset subclass that overrides ``__getitem__`` but not ``__getitems__`` is refused when
made, as torch 2.13's: the DataLoader reads batches through ``Subset.__getitems__``, so Ember
skipped the override (a transform in it) silently: batches [[0, 1], [2]] where torch's
subclass with ``__getitems__`` gives [[0, 10], [20]]."""

import pytest
import torch.utils.data as tud

import ember.utils.data as D


def _times_ten(base: type, with_getitems: bool) -> type:
    class TimesTen(base):
        def __getitem__(self, i):
            return super().__getitem__(i) * 10

    if not with_getitems:
        return TimesTen

    class WithGetitems(TimesTen):
        def __getitems__(self, indices):
            return [self[i] for i in indices]

    return WithGetitems


def test_override_without_getitems_is_refused_as_torch():
    with pytest.raises(NotImplementedError, match="overrides __getitem__ but not __getitems__"):
        _times_ten(tud.Subset, False)(list(range(4)), [0, 1, 2])
    with pytest.raises(NotImplementedError, match="TimesTen overrides __getitem__ but not "
                                                  "__getitems__.*def __getitems__"):
        _times_ten(D.Subset, False)(list(range(4)), [0, 1, 2])


@pytest.mark.parametrize("num_workers", [0, 1])
def test_override_with_getitems_reads_through_it(num_workers):
    def batches(data):
        subset = _times_ten(data.Subset, True)(list(range(4)), [0, 1, 2])
        return [b.tolist() for b in data.DataLoader(subset, batch_size=2, num_workers=num_workers)]

    assert batches(D) == batches(tud) == [[0, 10], [20]]


def test_plain_subclass_is_a_subset():
    class Named(D.Subset):
        pass

    loader = D.DataLoader(Named(list(range(4)), [3, 1]), batch_size=2)
    assert [b.tolist() for b in loader] == [[3, 1]]
