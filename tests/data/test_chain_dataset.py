"""``ChainDataset`` refuses a map-style dataset, as torch's (iterating one reads ``ds[0], ds[1],
…`` until an IndexError: forever for a ``__getitem__`` that takes any index)."""

import pytest
import torch.utils.data as tud

import ember.utils.data as D


def _endless(base: type) -> object:
    class Endless(base):
        def __len__(self) -> int:
            return 2

        def __getitem__(self, i: int) -> int:
            return i

    return Endless()


def _count(base: type) -> object:
    class Count(base):
        def __iter__(self):
            return iter(range(2))

        def __len__(self) -> int:
            return 2

    return Count()


@pytest.mark.parametrize("use", [list, len])
def test_map_style_dataset_is_refused_as_torch(use):
    with pytest.raises(AssertionError, match="only supports IterableDataset"):
        use(tud.ChainDataset([_count(tud.IterableDataset), _endless(tud.Dataset)]))
    with pytest.raises(TypeError, match="only supports IterableDataset.*Endless.*ConcatDataset"):
        use(D.ChainDataset([_count(D.IterableDataset), _endless(D.Dataset)]))


def test_iterable_datasets_and_plain_iterables_chain():
    chained = D.ChainDataset([_count(D.IterableDataset), range(3)])
    assert list(chained) == [0, 1, 0, 1, 2] and len(chained) == 5
    want = tud.ChainDataset([_count(tud.IterableDataset), _count(tud.IterableDataset)])
    got = D.ChainDataset([_count(D.IterableDataset), _count(D.IterableDataset)])
    assert list(got) == list(want) and len(got) == len(want)
