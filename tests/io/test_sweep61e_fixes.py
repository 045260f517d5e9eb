"""Divergences from PyTorch found by sweep 61e (saving and loading), each checked against torch."""

from __future__ import annotations

import io
from collections import OrderedDict

import pytest
import torch

import ember


def _round_trip(lib, obj, **load_args):
    buf = io.BytesIO()
    lib.save(obj, buf)
    buf.seek(0)
    return lib.load(buf, **load_args)


@pytest.mark.parametrize("weights_only", [True, False])
def test_an_ordered_dict_loads_as_one_as_torch(weights_only):
    # ember.load gave a plain dict for an OrderedDict (str or int keys); torch.load keeps it
    for lib in (torch, ember):
        out = _round_trip(lib, {"s": OrderedDict(b=lib.ones(1), a=2), "i": OrderedDict([(1, "x")]),
                                "d": {"z": 1}}, weights_only=weights_only)
        assert type(out["s"]) is OrderedDict and list(out["s"]) == ["b", "a"], lib
        assert type(out["i"]) is OrderedDict and out["i"] == {1: "x"}, lib
        assert type(out["d"]) is dict, lib
    assert type(_round_trip(ember, OrderedDict(w=ember.ones(2)))) is OrderedDict
