"""Arguments of the wrong kind are refused up front with an ember.errors error where PyTorch
also refuses them (sweep50data), instead of a NumPy/attribute traceback from deep inside."""

import multiprocessing

import numpy as np
import pytest
import torch
import torch.utils.data as tud

import ember
import ember.utils.data as D
from ember.errors import ArgumentError, ArgumentTypeError


@pytest.mark.parametrize("kwargs", [
    dict(num_workers="2"), dict(num_workers=None), dict(num_workers=2.0), dict(timeout="1"),
    dict(timeout=None), dict(num_workers=1, prefetch_factor="2"),
    dict(num_workers=1, prefetch_factor=2.5), dict(collate_fn=5), dict(worker_init_fn=5),
    dict(sampler=5), dict(batch_sampler=5), dict(shuffle=True, generator=5),
    dict(num_workers=1, multiprocessing_context=5),
])
def test_loader_argument_kinds(kwargs):
    with pytest.raises(ArgumentTypeError):
        D.DataLoader(range(4), **kwargs)


def test_loader_bad_context_name_and_timeout_without_workers():
    with pytest.raises(ArgumentError, match="valid start method"):
        D.DataLoader(range(4), num_workers=1, multiprocessing_context="bogus")
    # a context object is accepted
    D.DataLoader(range(4), num_workers=1, multiprocessing_context=multiprocessing.get_context())
    with pytest.raises(AssertionError):  # PyTorch refuses it too (when iterated)
        list(tud.DataLoader(range(4), timeout=0.5))
    with pytest.raises(ArgumentError, match="num_workers > 0"):
        D.DataLoader(range(4), timeout=0.5)
    assert len(D.DataLoader(range(4), timeout=0)) == 4


def test_loader_keeps_a_start_method_name_as_its_context():
    # torch's DataLoader.multiprocessing_context is the context object, also when given a name
    ours = D.DataLoader(range(4), num_workers=1, multiprocessing_context="fork")
    theirs = tud.DataLoader(range(4), num_workers=1, multiprocessing_context="fork")
    assert isinstance(ours.multiprocessing_context, multiprocessing.context.BaseContext)
    assert ours.multiprocessing_context.get_start_method() == \
        theirs.multiprocessing_context.get_start_method() == "fork"
    assert D.DataLoader(range(4)).multiprocessing_context is None
    assert [b.tolist() for b in ours] == [[0], [1], [2], [3]]


def test_a_context_set_after_construction_is_checked_and_made_a_context_as_torch():
    # torch's multiprocessing_context is a property: a name set later becomes its context
    ours, theirs = D.DataLoader(range(4), num_workers=1), tud.DataLoader(range(4), num_workers=1)
    for loader in (ours, theirs):
        loader.multiprocessing_context = "spawn"
        assert loader.multiprocessing_context.get_start_method() == "spawn"
        loader.multiprocessing_context = None
        assert loader.multiprocessing_context is None
    with pytest.raises(ArgumentError, match="valid start method"):
        ours.multiprocessing_context = "bogus"
    with pytest.raises(ArgumentTypeError, match="valid context object"):
        ours.multiprocessing_context = 5
    with pytest.raises(ArgumentError, match="num_workers > 0"):
        D.DataLoader(range(4)).multiprocessing_context = "spawn"
    ours.multiprocessing_context = "fork"
    assert [b.tolist() for b in ours] == [[0], [1], [2], [3]]


@pytest.mark.parametrize("make", [
    lambda: D.RandomSampler(range(3), generator=5),
    lambda: D.SubsetRandomSampler([1, 2], generator=5),
    lambda: D.WeightedRandomSampler([1.0], 2, generator=5),
    lambda: D.random_split(range(4), [2, 2], generator=5),
    lambda: D.WeightedRandomSampler("ab", 1),
    lambda: D.RandomSampler(range(3), replacement="x"),
    lambda: D.DistributedSampler(range(5), num_replicas=2.5, rank=0),
    lambda: D.DistributedSampler(range(5), num_replicas="2", rank=0),
    lambda: D.DistributedSampler(range(5), num_replicas=2, rank=1.0),
    lambda: D.DistributedSampler(range(5), num_replicas=2, rank=1, seed=1.5),
    lambda: D.DistributedSampler(range(5), num_replicas=2, rank=1).set_epoch("a"),
])
def test_sampler_argument_kinds(make):
    with pytest.raises(ArgumentTypeError):
        make()


def test_integer_like_arguments_still_accepted():
    s = D.DistributedSampler(range(5), num_replicas=ember.tensor(2).numpy()[()], rank=True)
    s.set_epoch(ember.tensor(3).numpy()[()])
    assert (s.num_replicas, s.rank, s.epoch, len(s)) == (2, 1, 3, 3)
    g = ember.Generator().manual_seed(0)
    assert sorted(D.RandomSampler(range(4), generator=g)) == [0, 1, 2, 3]


def test_random_sampler_empty_dataset_with_num_samples():
    # (PyTorch: ZeroDivisionError when iterated)
    with pytest.raises(ArgumentError, match="empty dataset"):
        list(D.RandomSampler([], num_samples=2))
    with pytest.raises(ArgumentError, match="empty dataset"):
        list(D.RandomSampler([], replacement=True, num_samples=2))


def test_default_convert_keeps_masked_arrays():
    # (it gave tensor([1, None]): the masked entry became None in an object tensor)
    m = np.ma.masked_array([1, 2], mask=[0, 1])
    for convert in (D.default_convert, tud.default_convert):
        out = convert({"m": m, "a": np.arange(2)})
        assert out["m"] is m
    assert isinstance(D.default_convert(np.arange(2)), ember.Tensor)


def test_collate_of_numpy_matrices_has_the_stacked_shape():
    # (it stacked np.matrix rows into a (2, 2) tensor; PyTorch gives (2, 1, 2))
    batch = [np.matrix([[1, 2]]), np.matrix([[3, 4]])]
    want = tud.default_collate(batch)
    got = D.default_collate(batch)
    assert tuple(got.shape) == tuple(want.shape) == (2, 1, 2)
    assert type(got.numpy()) is np.ndarray
    assert type(D.default_convert(batch[0]).numpy()) is np.ndarray


def test_a_zero_dim_integer_tensor_is_an_int_for_distributed_sampler():
    # (review50d: refused since de4420ca; PyTorch takes rank=torch.tensor(1))
    want = list(tud.DistributedSampler(range(4), num_replicas=2, rank=torch.tensor(1),
                                       shuffle=False))
    s = D.DistributedSampler(range(4), num_replicas=ember.tensor(2), rank=ember.tensor(1),
                             seed=ember.tensor(0))
    s.set_epoch(ember.tensor(1))
    assert list(D.DistributedSampler(range(4), num_replicas=2, rank=ember.tensor(1),
                                     shuffle=False)) == want == [1, 3]
    assert (s.num_replicas, s.rank, s.seed, s.epoch) == (2, 1, 0, 1)
    with pytest.raises(ArgumentTypeError, match="rank should be an int, but got '1' of type str"):
        D.DistributedSampler(range(4), num_replicas=2, rank="1")


class _GetItemOnly:
    """Iterable only through Python's old sequence protocol."""

    def __init__(self, items):
        self.items = items

    def __getitem__(self, i):
        return self.items[i]


def test_a_sampler_with_only_getitem_is_accepted_as_torch():
    # (review50d: refused as "should be an iterable of indices")
    for kwargs in [dict(batch_size=2, sampler=_GetItemOnly([3, 2, 1, 0])),
                   dict(batch_sampler=_GetItemOnly([[3, 2], [1, 0]]))]:
        got = [b.tolist() for b in D.DataLoader(range(4), **kwargs)]
        assert got == [b.tolist() for b in tud.DataLoader(range(4), **kwargs)] == [[3, 2], [1, 0]]


def test_weighted_sampler_refuses_strings_and_names_ragged_weights_a_shape_error():
    # (review50d: numeric strings were parsed; ragged rows were "not numbers")
    with pytest.raises(ValueError):
        tud.WeightedRandomSampler(["1", "2"], 2)
    with pytest.raises(ArgumentTypeError, match="weights should be a sequence of numbers"):
        D.WeightedRandomSampler(["1", "2"], 2)
    with pytest.raises(ArgumentError, match="rows differ in length"):
        D.WeightedRandomSampler([[1, 2], [3]], 2)
    assert len(list(D.WeightedRandomSampler(ember.tensor([1.0, 2.0]), 3))) == 3


def test_data_messages_name_a_foreign_type_with_its_package():
    # (review50d: "but got Generator" read as if an ember.Generator were refused)
    with pytest.raises(ArgumentTypeError, match="but got torch.Generator$"):
        D.RandomSampler(range(3), generator=torch.Generator())
    with pytest.raises(ArgumentTypeError, match="of type torch.Tensor$"):
        D.DataLoader(range(3), num_workers=torch.tensor(1))
    with pytest.raises(ArgumentTypeError, match="of type numpy.ndarray$"):
        D.DistributedSampler(range(4), num_replicas=2, rank=np.ones(2))
