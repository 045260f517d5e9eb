"""Divergences from PyTorch found by sweep 61e (saving and loading), each checked against torch."""

from __future__ import annotations

import io
import pickle
from collections import Counter, OrderedDict, defaultdict, namedtuple

import pytest
import torch

import ember
from ember.errors import WeightsOnlyError


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


_Pair = namedtuple("_Pair", "w n")


@pytest.mark.parametrize("make", [lambda lib: _Pair(lib.ones(2), 3),
                                  lambda lib: defaultdict(list, a=[lib.ones(1)]),
                                  lambda lib: lib.max(lib.ones(2, 2), 0)])
def test_a_container_subclass_keeps_its_class_or_is_refused_as_torch(make):
    # ember.save stored a namedtuple as a plain tuple and a defaultdict as a dict, so
    # ember.load gave another type back without a word; torch pickles them: weights_only=True
    # refuses the class, weights_only=False gives it back
    for lib, error in ((torch, pickle.UnpicklingError), (ember, WeightsOnlyError)):
        obj = make(lib)
        with pytest.raises(error):
            _round_trip(lib, {"x": obj})
        out = _round_trip(lib, {"x": obj, "y": lib.zeros(1)}, weights_only=False)["x"]
        assert type(out) is type(obj), lib
        first = out["a"][0] if isinstance(out, dict) else out[0]
        assert first.tolist() == (obj["a"][0] if isinstance(obj, dict) else obj[0]).tolist(), lib


def test_a_counter_and_embers_own_sharded_tensor_load_with_weights_only():
    # torch.load allows collections.Counter by default; a ShardedTensor (a sharded state dict
    # saved per rank with ember.save, as docs/fsdp.md shows) loads back as one
    from ember.distributed.checkpoint import ShardedTensor

    counts = Counter("aab")
    for lib in (torch, ember):
        out = _round_trip(lib, {"c": counts, "w": lib.ones(1)})["c"]
        assert type(out) is Counter and out == counts, lib
    piece = _round_trip(ember, {"p": ShardedTensor(ember.ones(2), (4,), 2)})["p"]
    assert type(piece) is ShardedTensor and piece.local.tolist() == [1.0, 1.0]
    assert piece.global_shape == (4,) and piece.start == 2
