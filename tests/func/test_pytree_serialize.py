"""ember.utils._pytree's treespec_dumps/loads/pprint, key_get and the named tuple and struct
sequence tests, against torch.utils._pytree (they were missing: AttributeError)."""

import json
import os
import time
from collections import OrderedDict, defaultdict, deque, namedtuple

import pytest
import torch
import torch.utils._pytree as tp

import ember
import ember.utils._pytree as ep

Pair = namedtuple("Pair", "a b")
tp._register_namedtuple(Pair, serialized_type_name="tests.Pair")
ep._register_namedtuple(Pair, serialized_type_name="tests.Pair")
TREES = [1, None, [], {}, [1, (2, None)], {"b": 1, "a": [2]}, {1: 2, "a": 3},
         OrderedDict(x=1, y=(2,)), defaultdict(list, {"a": 1}), deque([1, 2], maxlen=3),
         Pair(1, [2]), [Pair(1, 2), {"z": deque([3])}]]


@pytest.mark.parametrize("tree", TREES, ids=range(len(TREES)))
def test_dumps_writes_torchs_json_and_each_loads_the_others(tree):
    e_spec, t_spec = ep.tree_structure(tree), tp.tree_structure(tree)
    text = ep.treespec_dumps(e_spec)
    assert text == tp.treespec_dumps(t_spec)
    assert ep.treespec_loads(text) == e_spec and tp.treespec_loads(text) == t_spec
    hash(ep.treespec_loads(text))  # (contexts come back hashable)
    assert ep.treespec_pprint(e_spec) == tp.treespec_pprint(t_spec)


def test_size_crosses_as_torch_size():
    text = tp.treespec_dumps(tp.tree_structure(torch.Size([2, 3])))
    assert ep.treespec_loads(text) == ep.tree_structure(ember.Size([2, 3]))


def test_registered_type_serializes_under_its_name():
    class Tagged:
        def __init__(self, x, tag):
            self.x, self.tag = x, tag

    ep.register_pytree_node(Tagged, lambda t: ([t.x], t.tag), lambda c, tag: Tagged(c[0], tag),
                            serialized_type_name="tests.Tagged")
    spec = ep.tree_structure([Tagged(1, "t")])
    text = ep.treespec_dumps(spec)
    assert json.loads(text)[1]["children_spec"][0]["type"] == "tests.Tagged"
    assert ep.treespec_loads(text) == spec


def test_refusals():
    class Plain:
        pass

    ep.register_pytree_node(Plain, lambda p: ([], None), lambda c, _: Plain())
    with pytest.raises(NotImplementedError, match="serialized_type_name"):
        ep.treespec_dumps(ep.tree_structure(Plain()))
    with pytest.raises(NotImplementedError, match="_register_namedtuple"):
        ep.treespec_dumps(ep.tree_structure(namedtuple("Other", "x")(1)))
    with pytest.raises(NotImplementedError, match="'x.Y'"):
        ep.treespec_loads('[1, {"type": "x.Y", "context": "null", "children_spec": []}]')
    with pytest.raises(ValueError, match="Unknown protocol 2"):
        ep.treespec_dumps(ep.tree_structure(1), protocol=2)
    for fn in (ep.treespec_dumps, ep.treespec_pprint, lambda s: ep.tree_unflatten([1], s)):
        with pytest.raises(TypeError, match="expected a TreeSpec, got list"):
            fn([1])  # (tree_unflatten raised AttributeError)


def test_key_get_follows_paths_as_torch():
    tree = {"a": [1, {"b": 5}], "c": Pair(3, 4)}
    assert ([ep.key_get(tree, p) for p, _ in ep.tree_flatten_with_path(tree)[0]]
            == [tp.key_get(tree, p) for p, _ in tp.tree_flatten_with_path(tree)[0]])


@pytest.mark.parametrize("obj", [Pair(1, 2), Pair, (1,), tuple, torch.return_types.max((1, 2)),
                                 os.stat_result, time.gmtime(0), 5])
def test_namedtuple_and_structseq_tests_match_torch(obj):
    for name in ("is_namedtuple", "is_namedtuple_class", "is_namedtuple_instance",
                 "is_structseq", "is_structseq_class", "is_structseq_instance"):
        assert getattr(ep, name)(obj) == getattr(tp, name)(obj), name
