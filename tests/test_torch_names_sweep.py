"""Names from a sweep of dir(torch), dir(torch.Tensor) against Ember's, each compared with
torch: ``conj_physical_`` (function and method) and ``OutOfMemoryError`` at the top level."""

import torch

import ember


def test_conj_physical_in_place_like_torch():
    for lib in (torch, ember):
        z = lib.tensor([1 + 2j, -3j])
        assert lib.conj_physical_(z) is z and z.tolist() == [1 - 2j, 3j]
        assert z.conj_physical_() is z and z.tolist() == [1 + 2j, -3j]
        x = lib.tensor([1.0, 2.0])
        assert x.conj_physical_() is x and x.tolist() == [1.0, 2.0]


def test_out_of_memory_error_at_the_top_level_like_torch():
    assert torch.OutOfMemoryError is torch.cuda.OutOfMemoryError
    assert ember.OutOfMemoryError is ember.cuda.OutOfMemoryError
