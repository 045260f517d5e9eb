"""A compiled function that returns an object holding tensors (a dataclass, a plain class)
that is not a tuple, list or dict: the graph cannot rebuild it (it returned the traced
object, with the first call's tensors, at every later call), so the call runs eagerly, as
torch.compile returns fresh values; ember.export refuses it, as torch.export does."""

from __future__ import annotations

import dataclasses
import functools

import pytest

import ember
from ember import jit


@dataclasses.dataclass
class Pair:
    a: ember.Tensor
    b: list


class Holder:
    def __init__(self, t: ember.Tensor) -> None:
        self.t = t


class Slotted:
    __slots__ = ("t",)

    def __init__(self, t: ember.Tensor) -> None:
        self.t = t


class Private:
    __slots__ = ("__t",)

    def __init__(self, t: ember.Tensor) -> None:
        self.__t = t

    def get(self) -> ember.Tensor:
        return self.__t


def _cyclic(t: ember.Tensor) -> Holder:
    h = Holder(t)
    h.me = h
    return h


@pytest.mark.parametrize("make, read", [
    (lambda x: Pair(x + 1, [x * 2]), lambda out: [out.a.tolist(), out.b[0].tolist()]),
    (lambda x: (Holder(x * 3), x.sum()), lambda out: [out[0].t.tolist(), out[1].item()]),
    (lambda x: Slotted(x + 1), lambda out: out.t.tolist()),
    (lambda x: Private(x + 1), lambda out: out.get().tolist()),
    (lambda x: Pair({"k": [[x + 1]]}, []), lambda out: out.a["k"][0][0].tolist()),
    (lambda x: _cyclic(x + 1), lambda out: out.t.tolist()),
    (lambda x: Holder(x), lambda out: out.t.tolist()),
    (lambda x: Holder(x.detach()), lambda out: out.t.tolist()),
])
def test_an_object_holding_tensors_is_returned_with_this_calls_values(make, read):
    compiled = jit.compile(make)
    for value in (0.0, 1.0, 5.0):
        x = ember.full((2,), value)
        assert read(compiled(x)) == read(make(x))
    assert "holding tensors" in compiled.last.eager


def test_objects_without_tensors_still_compile():
    compiled = jit.compile(lambda x: (x + 1, ember.float32, "tag", x.shape))
    compiled(ember.ones(2))
    assert compiled(ember.ones(2))[0].tolist() == [2.0, 2.0]
    assert compiled.last.eager is None


class _Config:
    scale = 2.0


def test_returning_an_object_that_existed_before_the_call_compiles():
    """The model, ``self`` or an argument holds no tensor of the call: the graph returns
    that same object at every call, as torch.compile(fullgraph=True) accepts."""
    model = ember.nn.Linear(2, 2)

    class Model(ember.nn.Module):
        def __init__(self):
            super().__init__()
            self.fc = ember.nn.Linear(2, 2)

        def forward(self, x):
            return self.fc(x), self

    owner = Model()
    config = _Config()
    for fn, same in [(lambda x: (model(x), model), model), (owner, owner),
                     (lambda x: (x * config.scale, config), config),
                     (lambda x: (x + 1, model.weight.dtype, "tag", (1, None)), None),
                     (lambda x: (x + 1, ember.nn.functional.relu), ember.nn.functional.relu)]:
        compiled = jit.compile(fn, fullgraph=True)
        for value in (0.0, 5.0):
            out = compiled(ember.full((2,), value))
            assert out[0].tolist() == fn(ember.full((2,), value))[0].tolist()
            assert same is None or out[1] is same
        assert compiled.last.eager is None


class Stats:
    def __init__(self) -> None:
        self.count = 0


def _spoil(out) -> None:
    """A caller's change to the object a call returned."""
    vars(out[1]).update(t=None, count=7)


@pytest.mark.parametrize("make, read", [
    (lambda x: (x + 1, Holder(_WEIGHT)), lambda out: out[1].t is _WEIGHT),
    (lambda x: (x + 1, Stats()), lambda out: out[1].count == 0),
    (lambda x: (x + 1, lambda: 3), lambda out: out[1]() == 3 and not vars(out[1])),
])
def test_an_object_the_call_builds_is_a_new_object_at_each_call(make, read):
    """An object built in the call (holding a parameter, or no tensor at all) is a new object
    at each call, as eager's: the graph returned one object at every call, so a caller's change
    to it showed in every later result."""
    compiled = jit.compile(make)
    first = compiled(ember.ones(2))
    _spoil(first)
    second = compiled(ember.ones(2))
    assert second[1] is not first[1] and read(second)
    assert "it builds" in compiled.last.eager


_WEIGHT = ember.nn.Linear(2, 2).weight


def _closure(x: ember.Tensor):
    y = x + 1
    return x * 2, (lambda: y)


@pytest.mark.parametrize("make, read", [
    (_closure, lambda out: out[1]().tolist()),
    (lambda x: (x * 2, functools.partial(ember.add, x + 1)), lambda out: out[1](0).tolist()),
    (lambda x: (x * 2, functools.partial(ember.add, other=x + 1)),
     lambda out: out[1](0).tolist()),
])
def test_a_function_holding_tensors_of_the_call_gives_this_calls_values(make, read):
    """A closure's cells and a partial's arguments are walked: they gave the first call's
    values at every call."""
    compiled = jit.compile(make)
    for value in (0.0, 1.0, 5.0):
        x = ember.full((1,), value)
        assert read(compiled(x)) == read(make(x))
    assert "holding tensors" in compiled.last.eager


@pytest.mark.parametrize("make", [lambda x: Pair(x + 1, [x]), lambda x: Slotted(x + 1),
                                  lambda x: Pair({"k": [[x + 1]]}, [])])
def test_export_refuses_an_output_holding_tensors_in_an_object(make):
    class Model(ember.nn.Module):
        def forward(self, x):
            return make(x)

    with pytest.raises(ember.export.ExportError, match="holding tensors"):
        ember.export.export(Model(), (ember.zeros(3),))
