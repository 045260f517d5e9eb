"""ember.utils._pytree against torch.utils._pytree: torch's in-place maps and tree_is_leaf."""

import collections

import pytest
import torch
import torch.utils._pytree as tp

import ember
import ember.utils._pytree as ep

Pair = collections.namedtuple("Pair", "a b")


@pytest.mark.parametrize("tree", [1, None, [], (), {}, [1, (2, 3)], {"a": [1]}, Pair(1, 2),
                                  collections.OrderedDict(a=1), collections.deque([1]),
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


def test_register_dataclass_docstring_example():
    import doctest

    import ember.utils._pytree_dataclass as module

    result = doctest.testmod(module, extraglobs={"ember": ember},
                             optionflags=doctest.NORMALIZE_WHITESPACE)
    assert result.attempted and not result.failed
