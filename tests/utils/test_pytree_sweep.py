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
