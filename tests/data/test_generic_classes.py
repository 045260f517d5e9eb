"""The data classes torch makes generic take a type argument in Ember too: ``class
Batches(Sampler[list[int]])`` and annotations such as ``DataLoader[tuple[Tensor, Tensor]]``
evaluated at run time raised TypeError ('type ... is not subscriptable')."""

import pytest
import torch.utils.data as tud

import ember.utils.data as D

NAMES = ["DataLoader", "Dataset", "IterableDataset", "StackDataset", "Subset", "ConcatDataset",
         "ChainDataset", "Sampler", "DistributedSampler", "TensorDataset", "RandomSampler",
         "BatchSampler"]


@pytest.mark.parametrize("name", NAMES)
def test_subscriptable_where_torchs_are(name):
    try:
        want = getattr(tud, name)[int].__args__
    except TypeError:
        with pytest.raises(TypeError):
            getattr(D, name)[int]
    else:
        assert getattr(D, name)[int].__args__ == want


def test_a_generic_batch_sampler_subclass_and_loader():
    class Pairs(D.Sampler[list[int]]):
        def __iter__(self):
            return iter([[0, 1], [2, 3]])

        def __len__(self) -> int:
            return 2

    loader = D.DataLoader[int](range(4), batch_sampler=Pairs())
    assert [b.tolist() for b in loader] == [[0, 1], [2, 3]] and len(loader) == 2
