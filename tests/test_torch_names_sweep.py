"""Names from a sweep of dir(torch), dir(torch.Tensor) and torch's submodule paths against
Ember's, each compared with torch: ``conj_physical_`` (function and method),
``OutOfMemoryError`` at the top level, and the paths ``optim.adamw``, ``ao.nn.intrinsic`` and
``ao.nn.qat``."""

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


def test_import_paths_of_torch_submodules_that_ember_keeps_elsewhere():
    from ember.ao.nn.intrinsic import ConvReLU2d
    from ember.ao.nn.qat import Linear
    from ember.optim.adamw import AdamW
    from torch.ao.nn.intrinsic import ConvReLU2d as TorchConvReLU2d
    from torch.ao.nn.qat import Linear as TorchLinear
    from torch.optim.adamw import AdamW as TorchAdamW
    assert AdamW is ember.optim.AdamW and TorchAdamW is torch.optim.AdamW
    assert (ConvReLU2d.__name__, Linear.__name__) == (TorchConvReLU2d.__name__,
                                                      TorchLinear.__name__)
