"""``ember.fx.PH`` in ``concrete_args`` keeps parts of a structured input symbolic, as
torch.fx's ``PH``."""

import collections
import operator

import numpy as np
import pytest
import torch
import torch.fx

import ember
from ember.fx.tracer import SpecializedArgumentError

_NT = collections.namedtuple("_NT", "x y")


def _dict_input(lib):
    return lambda d: d["a"] * d["b"][0] + d["b"][1]


def test_a_dict_of_placeholders_traces_and_runs_as_torch_fx():
    a, b0, b1 = np.arange(3.), np.ones(3) * 2, np.ones(3) * -1
    gm = ember.fx.symbolic_trace(_dict_input(ember),
                                 concrete_args={"d": {"a": ember.fx.PH,
                                                      "b": [ember.fx.PH, ember.fx.PH]}})
    tm = torch.fx.symbolic_trace(_dict_input(torch),
                                 concrete_args={"d": {"a": torch.fx.PH,
                                                      "b": [torch.fx.PH, torch.fx.PH]}})
    got = gm({"a": ember.tensor(a), "b": [ember.tensor(b0), ember.tensor(b1)]})
    want = tm({"a": torch.tensor(a), "b": [torch.tensor(b0), torch.tensor(b1)]})
    np.testing.assert_allclose(got.numpy(), want.numpy())
    assert [n.op for n in gm.graph.nodes].count("placeholder") == 1


def test_a_fixed_leaf_beside_a_placeholder_is_specialized_and_checked():
    def f(x, t):
        return x + t[0] * t[1]

    gm = ember.fx.symbolic_trace(f, concrete_args={"t": (ember.fx.PH, 2)})
    tm = torch.fx.symbolic_trace(f, concrete_args={"t": (torch.fx.PH, 2)})
    got = gm(ember.ones(1), (ember.ones(1) * 3, 2))
    want = tm(torch.ones(1), (torch.ones(1) * 3, 2))
    np.testing.assert_allclose(got.numpy(), want.numpy())
    with pytest.raises(SpecializedArgumentError, match=r"t\[1\]"):
        gm(ember.ones(1), (ember.ones(1) * 3, 5))


def test_ph_alone_is_an_ordinary_placeholder_and_reads_as_ph():
    gm = ember.fx.symbolic_trace(lambda x: x + 1, concrete_args={"x": ember.fx.PH})
    assert gm(ember.ones(2)).tolist() == [2.0, 2.0]
    assert repr(ember.fx.PH) == repr(torch.fx.PH) == "PH"
    assert isinstance(ember.fx.PH, ember.fx.PHBase)


def test_a_fixed_tensor_leaf_is_not_read_from_the_input():
    c = ember.ones(1) * 5
    gm = ember.fx.symbolic_trace(lambda t: t[0] * t[1], concrete_args={"t": (ember.fx.PH, c)})
    assert [n.target for n in gm.graph.nodes].count(operator.getitem) == 1
    assert gm((ember.ones(1) * 2, c)).item() == 10.0


def _named_tuple_input(fx, lib):
    gm = fx.symbolic_trace(lambda t: t.x * 3 + t.y, concrete_args={"t": _NT(fx.PH, fx.PH)})
    return gm(_NT(lib.ones(1) * 2, lib.ones(1))).item()


def test_a_named_tuple_pattern_reaches_the_code_as_its_type_as_torch_fx():
    assert _named_tuple_input(ember.fx, ember) == _named_tuple_input(torch.fx, torch) == 7.0


def test_an_ordered_or_default_dict_pattern_keeps_its_type():
    seen = []

    def f(d):
        seen.append((type(d), getattr(d, "default_factory", None)))
        return d["a"] + 1

    for d in (collections.OrderedDict(a=ember.fx.PH), collections.defaultdict(int, a=ember.fx.PH)):
        ember.fx.symbolic_trace(f, concrete_args={"d": d})
    assert seen == [(collections.OrderedDict, None), (collections.defaultdict, int)]


class _EmberKeyed(ember.fx.PHBase):
    def __init__(self, key):
        self.ph_key = key


class _TorchKeyed(torch.fx._symbolic_trace.PHBase):
    def __init__(self, key):
        self.ph_key = key


def _keys(fx, keyed):
    gm = fx.symbolic_trace(lambda d: d["a"] + d["b"], concrete_args={"d": {"a": keyed("k1"),
                                                                           "b": fx.PH}})
    return [n.ph_key for n in gm.graph.nodes if hasattr(n, "ph_key")]


def test_a_ph_subclass_puts_its_fields_on_the_node_as_torch_fx():
    assert _keys(ember.fx, _EmberKeyed) == _keys(torch.fx, _TorchKeyed) == ["k1"]


@pytest.mark.parametrize("got, hint", [
    (3, r"with 3 \(or PH\) at t\[1\] in concrete_args\['t'\]"),
    (ember.ones(1), r"with PH at t\[1\] in concrete_args\['t'\]")])
def test_the_hint_for_a_fixed_leaf_names_the_pattern_not_a_parameter(got, hint):
    def f(t):
        return t[0] * t[1]

    gm = ember.fx.symbolic_trace(f, concrete_args={"t": (ember.fx.PH, 2)})
    with pytest.raises(SpecializedArgumentError, match=hint):
        gm((ember.ones(1), got))
    for leaf in (got, ember.fx.PH):  # (following the hint works)
        again = ember.fx.symbolic_trace(f, concrete_args={"t": (ember.fx.PH, leaf)})
        assert again((ember.ones(1) * 2, got)).tolist() == (ember.ones(1) * 2 * got).tolist()
