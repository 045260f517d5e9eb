"""default_collate, default_convert and worker batches keep the container types of the
samples as PyTorch does: a dict or list subclass (with its attributes), a read-only Mapping,
a deque, masked and record arrays; plain tuples become lists."""

import collections
import collections.abc

import numpy as np
import pytest
import torch.utils.data as tdata

import ember
import ember.utils.data as edata


class Tagged(dict):
    """A dict subclass whose constructor wants more than the items (as BatchEncoding-like
    containers do): a rebuilt batch must be a copy, not ``type(elem)(items)``."""

    def __init__(self, *args, tag: str = "", **kwargs) -> None:
        super().__init__(*args, **kwargs)
        self.tag = tag


class TaggedList(list):
    def __init__(self, items, tag: str) -> None:
        super().__init__(items)
        self.tag = tag


class Frozen(collections.abc.Mapping):
    def __init__(self, items) -> None:
        self._items = dict(items)

    def __getitem__(self, key):
        return self._items[key]

    def __iter__(self):
        return iter(self._items)

    def __len__(self) -> int:
        return len(self._items)


def _shape(x):
    """Types, tags and values of a nested batch, with tensors of either library as lists."""
    if hasattr(x, "tolist") and not isinstance(x, np.generic):
        return ("tensor", x.tolist())
    if isinstance(x, collections.abc.Mapping):
        return (type(x).__name__, getattr(x, "tag", None), {k: _shape(v) for k, v in x.items()})
    if isinstance(x, list | tuple | collections.deque):
        return (type(x).__name__, getattr(x, "tag", None), [_shape(v) for v in x])
    return x


SAMPLES = [
    lambda i: Tagged(a=i, b=[i, 2 * i], tag="t"),
    lambda i: collections.defaultdict(list, a=i),
    lambda i: Frozen({"a": i}),
    lambda i: TaggedList([i, i * 2], "q"),
    lambda i: collections.deque([i, i + 1]),
    lambda i: (i, "s"),
]


@pytest.mark.parametrize("make", SAMPLES)
def test_default_collate_keeps_container_types_as_torch(make):
    batch = [make(i) for i in range(3)]
    assert _shape(edata.default_collate(batch)) == _shape(tdata.default_collate(batch))


@pytest.mark.parametrize("make", SAMPLES)
def test_default_convert_keeps_container_types_as_torch(make):
    sample = make(np.arange(2))
    assert _shape(edata.default_convert(sample)) == _shape(tdata.default_convert(sample))


def test_worker_batches_keep_a_dict_subclass_and_its_attributes():
    def collate(items):
        return Tagged(x=ember.tensor(items), rows=TaggedList([np.ones(1)], "q"), tag="t")

    loader = edata.DataLoader(range(4), batch_size=2, num_workers=2, collate_fn=collate)
    batches = list(loader)
    assert [type(b) for b in batches] == [Tagged, Tagged]
    assert [b.tag for b in batches] == ["t", "t"]
    assert type(batches[0]["rows"]) is TaggedList and batches[0]["rows"].tag == "q"
    assert [b["x"].tolist() for b in batches] == [[0, 1], [2, 3]]


def test_worker_batches_keep_a_masked_array_as_torch():
    items = [np.ma.masked_array([1, 2], mask=[0, 1])] * 2
    got = list(edata.DataLoader(items, batch_size=None, num_workers=1))
    want = list(tdata.DataLoader(items, batch_size=None, num_workers=1))
    assert [type(b) for b in got] == [type(b) for b in want] == [np.ma.MaskedArray] * 2
    assert [b.mask.tolist() for b in got] == [b.mask.tolist() for b in want]


def test_default_convert_keeps_a_record_array_as_torch():
    rec = np.rec.array([(1, 2.0)], dtype=[("a", np.int64), ("b", np.float64)])
    for loader in (edata.DataLoader, tdata.DataLoader):
        got = list(loader([rec] * 2, batch_size=None, num_workers=1))
        assert [type(b) for b in got] == [np.recarray] * 2 and got[0].b.tolist() == [2.0]
