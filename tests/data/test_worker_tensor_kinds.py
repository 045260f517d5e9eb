"""A tensor a DataLoader worker sends keeps what it was, as torch's: its class (a ``Parameter``,
a subclass of ``Tensor``) with its attributes, and its strides (a transposed or expanded
tensor); Ember turned each into a plain, contiguous tensor. A strided slice still arrives
dense (its gaps are not copied), values the same."""

import pytest
import torch
import torch.utils.data as tud

import ember
import ember.utils.data as D


class TaggedEmber(ember.Tensor):
    pass


class TaggedTorch(torch.Tensor):
    pass


def _items(lib: object, tagged: type) -> list:
    sub = lib.arange(3.0).as_subclass(tagged)
    sub.tag = "x"
    return [sub, lib.nn.Parameter(lib.ones(2), requires_grad=False),
            lib.nn.Parameter(lib.ones(2)), lib.arange(6.0).reshape(2, 3).t(),
            lib.ones(3, 1).expand(3, 4), lib.arange(8.0).reshape(2, 2, 2).permute(2, 0, 1)]


def _received(data: object, lib: object, tagged: type, num_workers: int) -> list:
    class Items(data.Dataset):
        def __len__(self) -> int:
            return 1

        def __getitem__(self, i: int) -> list:
            return _items(lib, tagged)

    loader = data.DataLoader(Items(), batch_size=None, num_workers=num_workers,
                             multiprocessing_context="fork" if num_workers else None)
    return [(type(t).__name__.replace(tagged.__name__, "Tagged"), getattr(t, "tag", None),
             t.requires_grad, tuple(t.stride()), t.tolist()) for t in next(iter(loader))]


@pytest.mark.parametrize("num_workers", [0, 1])
def test_class_attributes_and_strides_as_torch(num_workers):
    want = _received(tud, torch, TaggedTorch, num_workers)
    assert _received(D, ember, TaggedEmber, num_workers) == want
    assert want[0][:2] == ("Tagged", "x") and want[2][0] == "Parameter"


def test_strided_slice_arrives_dense_with_its_values():
    class Items(D.Dataset):
        def __len__(self) -> int:
            return 2

        def __getitem__(self, i: int) -> ember.Tensor:
            return ember.arange(10.0)[i::3]

    got = list(D.DataLoader(Items(), batch_size=None, num_workers=1,
                            multiprocessing_context="fork"))
    assert [t.tolist() for t in got] == [[0.0, 3.0, 6.0, 9.0], [1.0, 4.0, 7.0]]
    assert [t.is_contiguous() for t in got] == [True, True]


class OwnPickle(ember.Tensor):
    def __reduce__(self):
        return _own_pickled, (self.tolist(),)


def _own_pickled(values: list) -> OwnPickle:
    made = ember.tensor(values).as_subclass(OwnPickle)
    made.how = "own pickle"
    return made


def test_a_subclass_with_its_own_reduce_is_pickled_its_way():
    class Items(D.Dataset):
        def __len__(self) -> int:
            return 1

        def __getitem__(self, i: int) -> ember.Tensor:
            return ember.arange(3.0).as_subclass(OwnPickle)

    got = next(iter(D.DataLoader(Items(), batch_size=None, num_workers=1,
                                 multiprocessing_context="fork")))
    assert type(got) is OwnPickle and got.how == "own pickle" and got.tolist() == [0.0, 1.0, 2.0]


@pytest.mark.parametrize("num_workers", [0, 1])
def test_a_tensor_met_twice_arrives_as_one_as_torch(num_workers):
    def identities(data, lib):
        x = lib.arange(4.0)
        loader = data.DataLoader([{"a": x, "b": x, "c": [x]}], batch_size=None,
                                 num_workers=num_workers,
                                 multiprocessing_context="fork" if num_workers else None)
        got = next(iter(loader))
        return got["a"] is got["b"], got["c"][0] is got["a"]

    assert identities(D, ember) == identities(tud, torch) == (True, True)
