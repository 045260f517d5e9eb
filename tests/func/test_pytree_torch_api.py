"""ember.utils._pytree's helpers beyond flatten/unflatten (is_leaf, tree_leaves,
tree_structure, tree_map over deeper trees, tree_map_only, tree_any/all, TreeSpec's PyTorch
attributes), each checked against torch.utils._pytree."""

from collections import OrderedDict, defaultdict, deque, namedtuple

import pytest
import torch
import torch.utils._pytree as tp

import ember
import ember.utils._pytree as ep
from ember.errors import ArgumentError

Point = namedtuple("Point", "x y")
TREES = [[1, (2, 3), [4]], {"b": 1, "a": [2, (3, 4)]}, Point(1, [2, (3,)]),
         OrderedDict(x=(1, 2), y=3), defaultdict(list, k=(1, 2), j=[3]), (), 5]


def is_tuple(x):
    return isinstance(x, tuple) and not isinstance(x, Point)


@pytest.mark.parametrize("tree", TREES, ids=range(len(TREES)))
@pytest.mark.parametrize("is_leaf", [None, is_tuple])
def test_leaves_structure_and_map_with_is_leaf_match_torch(tree, is_leaf):
    assert ep.tree_leaves(tree, is_leaf=is_leaf) == tp.tree_leaves(tree, is_leaf=is_leaf)
    assert list(ep.tree_iter(tree, is_leaf)) == list(tp.tree_iter(tree, is_leaf))
    e_spec, t_spec = ep.tree_structure(tree, is_leaf), tp.tree_structure(tree, is_leaf)
    assert e_spec.num_leaves == t_spec.num_leaves
    assert e_spec.num_nodes == t_spec.num_nodes
    assert e_spec.num_children == t_spec.num_children
    if not isinstance(tree, Point):  # (torch's spec names namedtuple itself, Ember's the class)
        assert e_spec.type is t_spec.type
    assert e_spec.unflatten(range(e_spec.num_leaves)) == t_spec.unflatten(
        range(t_spec.num_leaves))
    assert ep.tree_map(repr, tree, is_leaf=is_leaf) == tp.tree_map(repr, tree, is_leaf=is_leaf)


def test_tree_map_passes_whole_subtrees_of_deeper_trees_like_torch():
    for args in (([1, 2], [(1, 2), 3]), ({"a": 1, "b": 2}, {"b": [5], "a": 6}),
                 (Point(1, 2), Point({"k": 1}, (2,)))):
        assert ep.tree_map(lambda x, y: (x, y), *args) == tp.tree_map(lambda x, y: (x, y), *args)


@pytest.mark.parametrize("tree, other", [
    ({"a": 1, "b": 2}, OrderedDict(b=3, a=4)), (OrderedDict(a=1, b=2), {"b": 3, "a": 4}),
    ({"a": 1, "b": 2}, defaultdict(int, b=3, a=4)), (defaultdict(list, a=1, b=2), {"b": 3, "a": 4}),
    (deque([1, 2], maxlen=3), deque([3, 4])), (deque([1, 2]), deque([3, 4], maxlen=2)),
    ([{"a": 1}, deque([2], maxlen=1)], [OrderedDict(a=5), deque([6])])], ids=range(7))
def test_tree_map_takes_any_standard_dict_and_deque_maxlen_like_torch(tree, other):
    mine, theirs = ep.tree_map(lambda a, b: a + b, tree, other), tp.tree_map(
        lambda a, b: a + b, tree, other)
    assert mine == theirs
    assert type(mine) is type(theirs) and repr(mine) == repr(theirs)


@pytest.mark.parametrize("tree, other, match", [([1, 2], [1], "arity"),
                                                ([1, 2], (1, 2), "type mismatch"),
                                                ([1, {"a": 1}], [1, 5], "type mismatch")])
def test_tree_map_mismatched_structure_raises_like_torch(tree, other, match):
    with pytest.raises(ValueError, match="mismatch"):
        tp.tree_map(lambda x, y: x, tree, other)
    with pytest.raises(ArgumentError, match=match):
        ep.tree_map(lambda x, y: x, tree, other)


def test_tree_map_dict_key_mismatch_names_the_keys():
    with pytest.raises(ValueError, match="keys mismatch"):
        tp.tree_map(lambda x, y: x, {"a": 1}, {"c": 1})
    with pytest.raises(ArgumentError, match="keys mismatch.*'a'.*'c'"):
        ep.tree_map(lambda x, y: x, {"a": 1}, {"c": 1})


def test_map_only_any_all_match_torch():
    tree = [1, "a", 2.0, (3,), {"k": "bc"}]
    for types in (int, (int, str), int | str, lambda x: isinstance(x, float)):
        assert ep.tree_map_only(types, lambda x: x * 2, tree) == tp.tree_map_only(
            types, lambda x: x * 2, tree)
    for pred in (lambda x: x == 3, lambda x: x != "z"):
        assert ep.tree_any(pred, tree) == tp.tree_any(pred, tree)
        assert ep.tree_all(pred, tree) == tp.tree_all(pred, tree)
    for types, pred in ((int, lambda x: x > 0), (str, lambda s: s == "a"), (str, len)):
        assert ep.tree_any_only(types, pred, tree) == tp.tree_any_only(types, pred, tree)
        assert ep.tree_all_only(types, pred, tree) == tp.tree_all_only(types, pred, tree)


def test_register_pytree_node_takes_torchs_keywords():
    class Box:
        def __init__(self, v):
            self.v = v

    ep.register_pytree_node(Box, lambda b: ([b.v], None), lambda c, _: Box(c[0]),
                            serialized_type_name="tests.Box",
                            flatten_with_keys_fn=lambda b: ([("v", b.v)], None))
    assert ep.tree_leaves([Box(3), 4]) == [3, 4]


def as_text(pairs, lib):
    return [(lib.keystr(path), [type(k).__name__ for k in path], leaf) for path, leaf in pairs]


@pytest.mark.parametrize("tree", TREES, ids=range(len(TREES)))
@pytest.mark.parametrize("is_leaf", [None, is_tuple])
def test_key_paths_match_torch(tree, is_leaf):
    mine, spec = ep.tree_flatten_with_path(tree, is_leaf)
    theirs, t_spec = tp.tree_flatten_with_path(tree, is_leaf)
    assert as_text(mine, ep) == as_text(theirs, tp)
    assert as_text(ep.tree_leaves_with_path(tree, is_leaf), ep) == as_text(theirs, tp)
    assert spec.num_leaves == t_spec.num_leaves
    for path, leaf in mine:  # each key gets its item back
        node = tree
        for key in path:
            node = key.get(node)
        assert node == leaf
    shown = ep.tree_map_with_path(lambda kp, x: (ep.keystr(kp), x), tree, is_leaf=is_leaf)
    assert shown == tp.tree_map_with_path(lambda kp, x: (tp.keystr(kp), x), tree,
                                          is_leaf=is_leaf)


def test_key_paths_of_registered_nodes_need_their_keys_function():
    class Pair:
        def __init__(self, a, b):
            self.a, self.b = a, b

    class Bare:
        def __init__(self, v):
            self.v = v

    ep.register_pytree_node(Pair, lambda p: ([p.a, p.b], None), lambda c, _: Pair(*c),
                            flatten_with_keys_fn=lambda p: ([(ep.GetAttrKey("a"), p.a),
                                                             (ep.GetAttrKey("b"), p.b)], None))
    ep.register_pytree_node(Bare, lambda b: ([b.v], None), lambda c, _: Bare(c[0]))
    pairs = ep.tree_leaves_with_path([Pair(1, {"k": 2})])
    assert [(ep.keystr(p), x) for p, x in pairs] == [("[0].a", 1), ("[0].b['k']", 2)]
    with pytest.raises(ArgumentError, match="flatten_with_keys_fn"):
        ep.tree_flatten_with_path([Bare(1)])
    assert ep.tree_map_with_path(lambda kp, x, y: (ep.keystr(kp), x, y), [1, 2], [(3,), 4]) == \
        tp.tree_map_with_path(lambda kp, x, y: (tp.keystr(kp), x, y), [1, 2], [(3,), 4])


def test_treespec_children_and_child_as_torch_2_13():
    tree = [1, (2, 3), {"a": [4]}]
    mine, theirs = ep.tree_structure(tree), tp.tree_structure(tree)

    def shape(spec):
        return [(c.type, c.num_leaves, c.num_children) for c in spec]
    assert shape(mine.children()) == shape(theirs.children())
    assert shape([mine.child(i) for i in (0, 1, 2, -1)]) == shape(
        [theirs.child(i) for i in (0, 1, 2, -1)])
    mine.children().clear()  # (a new list each time)
    assert mine.num_children == 3
    with pytest.raises(IndexError):
        mine.child(3)
    for spec in (mine, theirs):
        with pytest.warns(FutureWarning, match="children_specs` is deprecated"):
            assert len(spec.children_specs) == 3


Pair = namedtuple("Pair", "a b")


@pytest.mark.parametrize("tree", [1, None, [], (), {}, [1, (2, 3)], {"a": [1]}, Pair(1, 2),
                                  OrderedDict(a=1), deque([1]),
                                  "s"], ids=repr)
def test_tree_is_leaf_matches_torch(tree):
    assert ep.tree_is_leaf(tree) == tp.tree_is_leaf(tree)
    assert ep.tree_is_leaf(tree, is_leaf=lambda x: True) is True
    assert tp.tree_is_leaf(tree, is_leaf=lambda x: True) is True


def test_tree_map_underscore_runs_in_place_and_returns_the_tree_as_torch():
    for lib, mod in ((torch, tp), (ember, ep)):
        tree = {"w": [lib.ones(2), 3], "b": lib.ones(1)}
        assert mod.tree_map_(lambda t, k: t.mul_(k) if k != 1 else None, tree,
                             {"w": [2, 1], "b": 5}) is tree
        assert tree["w"][0].tolist() == [2.0, 2.0] and tree["b"].tolist() == [5.0], lib
        assert mod.tree_map_only_(lib.Tensor, lambda t: t.zero_(), tree) is tree
        assert tree["w"][0].tolist() == [0.0, 0.0] and tree["w"][1] == 3, lib
        seen = []
        mod.tree_map_(seen.append, [1, (2, 3)], is_leaf=lambda x: isinstance(x, tuple))
        assert seen == [1, (2, 3)], lib


def _point_classes():
    import dataclasses

    @dataclasses.dataclass
    class Point:
        x: object
        y: object = None
        tag: str = dataclasses.field(default="p", init=False)

    class Plain:
        def __init__(self, a, b):
            self.a, self.b = a, b

        def __eq__(self, other):
            return (self.a, self.b) == (other.a, other.b)

    return Point, Plain


def test_register_dataclass_matches_torch():
    results = []
    for mod in (tp, ep):
        Point, Plain = _point_classes()
        mod.register_dataclass(Point)
        mod.register_dataclass(Plain, field_names=["a", "b"])
        tree = [Point(1, [2, 3]), Point(4), Plain(5, Point(6, 7))]
        leaves, spec = mod.tree_flatten(tree)
        back = mod.tree_unflatten([v * 10 for v in leaves], spec)
        paths = [mod.keystr(p) for p, _ in mod.tree_flatten_with_path(tree)[0]]
        results.append((leaves, back[1].y, back[2].b.x, back[0].y, paths,
                        mod.tree_map(lambda v: -v, tree)[0].x))
    assert results[1] == results[0]


def test_register_dataclass_checks_the_field_names_as_torch():
    for mod in (tp, ep):
        Point, Plain = _point_classes()
        with pytest.raises(ValueError, match="field_names"):
            mod.register_dataclass(Plain)
        with pytest.raises(ValueError, match="field_names"):
            mod.register_dataclass(Point, field_names=["x"])
        mod.register_dataclass(Point, field_names=["x"], drop_field_names=["y"])
        assert mod.tree_leaves(Point(1, 2)) == [1], mod
        # without field_names every init field is a child: drop_field_names is unused
        Point, _ = _point_classes()
        mod.register_dataclass(Point, drop_field_names=["y"])
        assert mod.tree_leaves(Point(1, 2)) == [1, 2], mod
        assert mod.tree_map(lambda v: v * 10, Point(1, 2)) == Point(10, 20), mod
