"""Arguments of the wrong kind are refused up front with an ember.errors error where PyTorch
also refuses them (sweep50data), instead of a NumPy/attribute traceback from deep inside."""

import multiprocessing

import numpy as np
import pytest
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
