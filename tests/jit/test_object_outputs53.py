"""A compiled function that returns an object holding tensors (a dataclass, a plain class)
that is not a tuple, list or dict: the graph cannot rebuild it (it returned the traced
object, with the first call's tensors, at every later call), so the call runs eagerly, as
torch.compile returns fresh values; ember.export refuses it, as torch.export does."""

from __future__ import annotations

import dataclasses

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


@pytest.mark.parametrize("make, read", [
    (lambda x: Pair(x + 1, [x * 2]), lambda out: [out.a.tolist(), out.b[0].tolist()]),
    (lambda x: (Holder(x * 3), x.sum()), lambda out: [out[0].t.tolist(), out[1].item()]),
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


def test_export_refuses_an_output_holding_tensors_in_an_object():
    class Model(ember.nn.Module):
        def forward(self, x):
            return Pair(x + 1, [x])

    with pytest.raises(ember.export.ExportError, match="Pair holding tensors"):
        ember.export.export(Model(), (ember.zeros(3),))
