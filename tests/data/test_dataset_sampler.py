"""Datasets, samplers and collation against torch.utils.data."""

from collections import namedtuple

import numpy as np
import pytest
import torch
import torch.utils.data as tud

import ember
import ember.utils.data as D
from ember.errors import ShapeError


def same(a, b):
    """An Ember batch equals a torch batch: structure, dtypes and values."""
    if isinstance(b, torch.Tensor):
        assert isinstance(a, ember.Tensor), type(a)
        assert str(a.dtype).split(".")[-1] == str(b.dtype).split(".")[-1]
        np.testing.assert_array_equal(a.numpy(), b.numpy())
    elif isinstance(b, dict):
        assert type(a) is type(b) and a.keys() == b.keys()
        for k in b:
            same(a[k], b[k])
    elif isinstance(b, list | tuple):
        assert type(a).__name__ == type(b).__name__ and len(a) == len(b)
        for x, y in zip(a, b):
            same(x, y)
    else:
        assert a == b


Point = namedtuple("Point", "x y")


@pytest.mark.parametrize("make", [
    lambda m, i: (m.tensor([i, i + 1.0]), i),
    lambda m, i: {"img": np.full((2, 2), i, np.uint8), "label": i, "w": 0.5 * i, "ok": i > 1},
    lambda m, i: Point(np.float32(i), [i, str(i)]),
    lambda m, i: [np.arange(3) + i, (i, 2.0)],
    lambda m, i: np.int64(i),
])
def test_default_collate_matches_torch(make):
    got = D.default_collate([make(ember, i) for i in range(3)])
    want = tud.default_collate([make(torch, i) for i in range(3)])
    same(got, want)


def test_default_collate_errors_and_convert():
    with pytest.raises(RuntimeError, match="equal size"):
        D.default_collate([[1, 2], [3]])
    with pytest.raises(TypeError, match="found"):
        D.default_collate([object(), object()])
    with pytest.raises(RuntimeError, match=r"\(2,\) at entry 0 and \(3,\) at entry 1"):
        D.default_collate([ember.zeros(2), ember.zeros(3)])
    same(D.default_convert({"a": np.ones(2), "b": (np.int32(3), "s")}),
         tud.default_convert({"a": np.ones(2), "b": (np.int32(3), "s")}))
    # gradients flow through collation
    x = ember.ones(2, requires_grad=True)
    D.default_collate([x, x * 2]).sum().backward()
    np.testing.assert_array_equal(x.grad.numpy(), [3.0, 3.0])


def test_tensor_subset_concat_stack():
    ds = D.TensorDataset(ember.arange(12).reshape(6, 2), ember.arange(6) * 10)
    assert len(ds) == 6 and ds[2][1].item() == 20
    with pytest.raises(ember.ShapeError, match="size mismatch"):
        D.TensorDataset(ember.zeros(3), ember.zeros(4))
    sub = D.Subset(ds, [5, 0])
    assert len(sub) == 2 and sub[0][1].item() == 50
    zeros = ember.zeros(2, 2, dtype=ember.int64)
    cat = ds + D.TensorDataset(zeros, zeros[:, 0])
    tcat = tud.ConcatDataset([list(range(6)), list(range(2))])
    assert isinstance(cat, D.ConcatDataset) and len(cat) == 8
    assert cat.cumulative_sizes == tcat.cumulative_sizes
    assert cat[-1][1].item() == 0 and cat[5][1].item() == 50
    assert D.StackDataset(a=[1, 2], b=[3, 4])[0] == {"a": 1, "b": 3}

    class Count(D.IterableDataset):
        def __init__(self, n):
            self.n = n

        def __iter__(self):
            return iter(range(self.n))

    assert list(Count(2) + Count(3)) == [0, 1, 0, 1, 2]
    with pytest.raises(TypeError, match="ChainDataset"):
        D.ConcatDataset([Count(2)])


def test_random_split():
    g = ember.Generator().manual_seed(0)
    for lengths in ([0.3, 0.3, 0.4], [0.5, 0.5], [3, 7], [0.33, 0.33, 0.34]):
        parts = D.random_split(range(10), lengths, generator=g)
        want = tud.random_split(range(10), lengths, generator=torch.Generator().manual_seed(0))
        assert [len(p) for p in parts] == [len(p) for p in want]
        assert sorted(i for p in parts for i in p) == list(range(10))
    a = D.random_split(range(10), [5, 5], generator=ember.Generator().manual_seed(1))
    b = D.random_split(range(10), [5, 5], generator=ember.Generator().manual_seed(1))
    assert [list(p) for p in a] == [list(p) for p in b]
    with pytest.raises(ValueError, match="does not equal"):
        D.random_split(range(10), [3, 3])


def test_random_split_fractions_warn_of_an_empty_part():
    # torch warns when a fraction rounds to an empty split (a silent empty Subset otherwise)
    with pytest.warns(UserWarning, match="split at index 1 is 0") as ours:
        parts = D.random_split(range(2), [0.1, 0.1, 0.8])
    with pytest.warns(UserWarning) as theirs:
        want = tud.random_split(range(2), [0.1, 0.1, 0.8])
    assert [len(p) for p in parts] == [len(p) for p in want] == [1, 0, 1]
    assert [str(w.message) for w in ours] == [str(w.message) for w in theirs]


def test_sequential_and_batch_sampler_match_torch():
    for n, bs, drop in [(10, 3, False), (10, 3, True), (9, 3, True), (0, 2, False)]:
        ours = D.BatchSampler(D.SequentialSampler(range(n)), bs, drop)
        theirs = tud.BatchSampler(tud.SequentialSampler(range(n)), bs, drop)
        assert list(ours) == list(theirs) and len(ours) == len(theirs)
    with pytest.raises(ValueError, match="positive integer"):
        D.BatchSampler(range(3), 0, False)


def test_random_sampler():
    g = ember.Generator().manual_seed(0)
    s = D.RandomSampler(range(7), generator=g)
    order = list(s)
    assert sorted(order) == list(range(7)) and len(s) == 7
    assert list(D.RandomSampler(range(7), generator=ember.Generator().manual_seed(0))) == order
    # more samples than items: whole permutations then a partial one
    drawn = list(D.RandomSampler(range(4), num_samples=10, generator=g))
    assert len(drawn) == 10 and sorted(drawn[:4]) == sorted(drawn[4:8]) == [0, 1, 2, 3]
    assert len(set(drawn[8:])) == 2
    # with replacement: uniform
    counts = np.bincount(list(D.RandomSampler(range(5), True, 50_000, g)), minlength=5)
    assert np.all(np.abs(counts / 50_000 - 0.2) < 0.01)
    # without a generator: the default one, a new order each epoch, repeatable by seed
    ember.manual_seed(3)
    s = D.RandomSampler(range(50))
    first, second = list(s), list(s)
    ember.manual_seed(3)
    assert list(s) == first and first != second
    with pytest.raises(ValueError, match="num_samples"):
        D.RandomSampler(range(3), num_samples=0)
    with pytest.raises(ValueError, match="num_samples"):
        D.RandomSampler([])


def test_subset_and_weighted_samplers():
    g = ember.Generator().manual_seed(0)
    s = D.SubsetRandomSampler([3, 5, 9], generator=g)
    assert sorted(s) == [3, 5, 9] and len(s) == 3
    w = [1.0, 0.0, 3.0, 4.0]
    counts = np.bincount(list(D.WeightedRandomSampler(w, 40_000, generator=g)), minlength=4)
    np.testing.assert_allclose(counts / 40_000, np.array(w) / 8, atol=0.01)
    once = list(D.WeightedRandomSampler(w, 3, replacement=False, generator=g))
    assert sorted(once) == [0, 2, 3]
    with pytest.raises(ValueError, match="1d"):
        D.WeightedRandomSampler([[1.0]], 1)
    with pytest.raises(ValueError, match="non-negative"):
        D.WeightedRandomSampler([1.0, -1.0], 1)
    too_many = D.WeightedRandomSampler(w, 4, replacement=False)  # made; fails when drawn, as
    with pytest.raises(RuntimeError, match="without replacement"):  # torch's does
        list(too_many)


def test_doc_examples():
    import doctest

    from ember.data import collate, dataset, distributed_sampler, sampler
    for mod in (collate, dataset, sampler, distributed_sampler):
        result = doctest.testmod(mod, extraglobs={"ember": ember, "np": np},
                                 optionflags=doctest.NORMALIZE_WHITESPACE)
        assert result.failed == 0, mod.__name__


def test_collate_and_tensor_dataset_errors_are_clear():
    with pytest.raises(TypeError, match="element 1 is of type int"):
        D.default_collate([ember.ones(2), 5])
    with pytest.raises(ShapeError, match="0-d tensor"):
        D.TensorDataset(ember.tensor(3.0))


def test_stack_dataset_reads_batches_as_torch():
    def run(lib):
        s = lib.StackDataset([1, 2, 3], lib.Subset([4, 5, 6], [2, 1, 0]))
        k = lib.StackDataset(a=[1, 2, 3], b=lib.Subset([7, 8, 9], [2, 1, 0]))
        return s.__getitems__([2, 0]), k.__getitems__([0, 1])
    assert run(D) == run(tud) == ([(3, 4), (1, 6)], [{"a": 1, "b": 9}, {"a": 2, "b": 8}])


def test_a_multiprocessing_context_needs_workers():
    with pytest.raises(ValueError, match="num_workers > 0"):
        D.DataLoader(range(4), multiprocessing_context="spawn")


def test_tensor_dataset_names_an_argument_that_is_not_a_tensor():
    # torch: AttributeError: 'list' object has no attribute 'size'
    with pytest.raises(AttributeError):
        tud.TensorDataset(torch.arange(3), [1, 2, 3])
    with pytest.raises(TypeError, match="TensorDataset: argument 1 should be a tensor.*list"):
        D.TensorDataset(ember.arange(3), [1, 2, 3])
