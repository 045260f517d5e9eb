"""ember.fx against torch.fx (sweep 53): a dataclass among a call's arguments or in the
output is rebuilt by a ``call_function`` node of its class, as torch.fx records it (the
GraphModule returned the traced object, holding proxies); another object holding a proxy
is refused."""

import dataclasses

import pytest
import torch

import ember


@dataclasses.dataclass
class Pair:
    a: object
    b: object = None


def test_a_dataclass_output_holds_the_calls_tensors_as_torch_fx():
    for lib in (ember, torch):
        class Model(lib.nn.Module):
            def forward(self, x):
                return Pair(x + 1, [x * 2, 3]), x

        gm = lib.fx.symbolic_trace(Model())
        out, _ = gm(lib.ones(2))
        assert isinstance(out, Pair)
        assert out.a.tolist() == [2.0, 2.0] and out.b[0].tolist() == [2.0, 2.0]
        assert out.b[1] == 3
        assert [n.target for n in gm.graph.nodes if n.op == "call_function"][-1] is Pair


class Slotted:
    __slots__ = ("t",)

    def __init__(self, t):
        self.t = t


@pytest.mark.parametrize("wrap", [lambda t: t, lambda t: [t], lambda t: {"k": (None, [t])},
                                  Slotted])
def test_an_object_holding_a_proxy_is_refused_with_its_class_named(wrap):
    """At any depth in its attributes: torch.fx refuses such an output too
    (NotImplementedError), where the GraphModule returned an object holding a Proxy."""
    class Holder:
        def __init__(self, t):
            self.t = wrap(t)

    class Model(ember.nn.Module):
        def forward(self, x):
            return Holder(x + 1)

    with pytest.raises(TypeError, match="Holder.*dataclass"):
        ember.fx.symbolic_trace(Model())
