"""Pytrees: the container types torch.utils._pytree treats as nodes are nodes here too, with
the same leaves in the same order, and rebuild to the same types."""

import os
import pickle
import subprocess
import sys
from collections import OrderedDict, defaultdict, deque, namedtuple

import pytest
import torch
import torch.utils._pytree as tp

import ember
from ember.func.pytree import (
    register_pytree_node,
    tree_flatten,
    tree_map,
    tree_paths,
    tree_unflatten,
)

Point = namedtuple("Point", "x y")


def sample(size_type):
    return (size_type([2, 3]), OrderedDict(b=1, a=[2, 3]), defaultdict(list, k=(4,)),
            deque([5, 6], maxlen=4), Point(7, {"z": 8}), [])


def test_leaves_and_types_match_torch():
    leaves, spec = tree_flatten(sample(ember.Size))
    t_leaves, _ = tp.tree_flatten(sample(torch.Size))
    assert leaves == t_leaves == [2, 3, 1, 2, 3, 4, 5, 6, 7, 8]
    back = tree_unflatten(leaves, spec)
    assert back == sample(ember.Size)
    assert [type(x) for x in back] == [type(x) for x in sample(ember.Size)]
    assert back[2].default_factory is list and back[3].maxlen == 4


def test_unregistered_dict_subclass_is_a_leaf_as_in_torch():
    class Config(dict):
        pass

    cfg = Config(lr=0.1)
    assert tree_flatten(cfg)[0] == tp.tree_flatten(cfg)[0] == [cfg]


def test_size_argument_maps_elementwise():
    assert tree_map(lambda n: n * 2, ember.Size([2, 3])) == ember.Size([4, 6])
    assert isinstance(tree_map(lambda n: n, ember.Size([1])), ember.Size)


def test_paths_name_keys_and_indices():
    assert tree_paths({"a": ember.Size([1, 2]), "b": deque([3])}) == \
        ["['a'][0]", "['a'][1]", "['b'][0]"]


def test_paths_index_named_tuples_and_registered_nodes():
    # (the names of compiled and exported arguments, ONNX input names: unlike torch's key
    # paths, a named tuple's field and a registered node's keys are indices here)
    class Keyed:
        def __init__(self, a, b):
            self.a, self.b = a, b

    register_pytree_node(Keyed, lambda k: ([k.a, k.b], None), lambda c, _: Keyed(*c),
                         flatten_with_keys_fn=lambda k: ([("A", k.a), ("B", k.b)], None))
    tree = [Point(1, {2: 3}), Keyed(defaultdict(list, k=(4,)), OrderedDict(z=5)), 6]
    assert tree_paths(tree) == ["[0][0]", "[0][1][2]", "[1][0]['k'][0]", "[1][1]['z']", "[2]"]
    assert tree_paths(7) == [""] and tree_paths([]) == []


def test_register_pytree_node():
    class Box:
        def __init__(self, items, tag):
            self.items, self.tag = items, tag

    register_pytree_node(Box, lambda b: (b.items, b.tag), lambda c, tag: Box(list(c), tag))
    leaves, spec = tree_flatten(Box([1, (2, 3)], "t"))
    assert leaves == [1, 2, 3]
    back = tree_unflatten([4, 5, 6], spec)
    assert back.items == [4, (5, 6)] and back.tag == "t"
    with pytest.raises(ValueError, match="already a pytree node"):
        register_pytree_node(Box, lambda b: (b.items, None), lambda c, _: Box(c, None))


def test_specs_compare_by_structure():
    assert tree_flatten(deque([1], maxlen=2))[1] != tree_flatten(deque([1], maxlen=3))[1]
    assert tree_flatten(OrderedDict(a=1))[1] != tree_flatten({"a": 1})[1]
    assert repr(tree_flatten(OrderedDict(a=1))[1]) == "OrderedDict({'a': *})"


def test_vmap_flattens_with_the_registry():
    # vmap had its own flattening: registered nodes were refused, an OrderedDict came back a dict
    class Pair:
        def __init__(self, a, b):
            self.a, self.b = a, b

    register_pytree_node(Pair, lambda p: ([p.a, p.b], None), lambda leaves, _: Pair(*leaves))
    got = ember.func.vmap(lambda p: p.a * p.b)(Pair(ember.ones(3), ember.arange(3.0)))
    assert got.tolist() == [0.0, 1.0, 2.0]
    out = ember.func.vmap(lambda x: OrderedDict(a=x * 2))(ember.ones(2))
    assert type(out) is OrderedDict and out["a"].tolist() == [2.0, 2.0]


def test_a_spec_from_another_process_finds_its_equal_in_a_dict():
    # (a spec caches its hash; str hashes differ between processes, so a pickle leaves it out)
    script = ("import pickle, sys; from ember.func.pytree import tree_flatten; "
              "spec = tree_flatten({'a': 1, 'b': (2, 3)})[1]; hash(spec); "
              "sys.stdout.buffer.write(pickle.dumps(spec))")
    made = subprocess.run([sys.executable, "-c", script], capture_output=True, check=True,
                          env={**os.environ, "PYTHONHASHSEED": "1"}).stdout
    fresh = tree_flatten({"a": 1, "b": (2, 3)})[1]
    assert pickle.loads(made) in {fresh: True}
