"""Printing a batched tensor inside vmap shows every sample, as torch.func's BatchedTensor repr
(it was refused as a value read); other value reads are still refused."""

from __future__ import annotations

import pytest
import torch

import ember
from ember.func import vmap


def printed(lib, vm, fn, x):
    seen = []
    vm(lambda a: (seen.append(fn(a)), a)[1])(x)
    return seen[0]


@pytest.mark.parametrize("fn", [repr, str, lambda a: f"{a}", lambda a: repr(a.sum(-1))])
def test_print_inside_vmap_matches_torch(fn):
    x = [[0.0, 1.5, 2.0], [3.0, 4.0, -5.0]]
    assert (printed(ember, vmap, fn, ember.tensor(x))
            == printed(torch, torch.func.vmap, fn, torch.tensor(x)))


def test_print_inside_nested_vmap_matches_torch_and_unbatched_prints_plainly():
    x = [[0.0, 1.0, 2.0], [3.0, 4.0, 5.0]]
    got = printed(ember, lambda f: vmap(vmap(f)), repr, ember.tensor(x))
    want = printed(torch, lambda f: torch.func.vmap(torch.func.vmap(f)), repr, torch.tensor(x))
    assert got == want and "lvl=2" in got
    seen = []
    vmap(lambda a, b: (seen.append(repr(b)), a)[1], in_dims=(0, None))(
        ember.ones(2, 3), ember.zeros(2))
    assert seen == [repr(ember.zeros(2))]
    with pytest.raises(RuntimeError, match="item"):
        vmap(lambda a: a * a.sum().item())(ember.ones(2, 3))


def test_print_inside_vmap_shows_the_batch_axis_first_for_any_in_dims():
    # (as docs/transforms.md says: torch prints bdim=1 and its original layout here)
    x = [[0.0, 1.0], [2.0, 3.0], [4.0, 5.0]]
    got = printed(ember, lambda f: vmap(f, in_dims=1), repr, ember.tensor(x))
    assert got == printed(ember, vmap, repr, ember.tensor(x).T) and "bdim=0" in got
    want = printed(torch, lambda f: torch.func.vmap(f, in_dims=1), repr, torch.tensor(x))
    assert "bdim=1" in want
