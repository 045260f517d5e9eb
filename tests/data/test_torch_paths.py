"""torch.utils.data's module paths exist under ember.utils.data with the same public names."""

import importlib

import pytest
import torch.utils.data  # noqa: F401


@pytest.mark.parametrize("module", ["sampler", "dataset", "dataloader", "distributed"])
def test_every_public_name_of_the_torch_module_is_there(module):
    theirs = importlib.import_module(f"torch.utils.data.{module}")
    ours = importlib.import_module(f"ember.utils.data.{module}")
    missing = [n for n in theirs.__all__ if not hasattr(ours, n)]
    assert not missing, f"ember.utils.data.{module} lacks {missing}"


def test_the_submodules_are_attributes_after_importing_ember():
    import ember

    assert ember.utils.data.distributed.DistributedSampler is ember.data.DistributedSampler
    assert ember.utils.data.sampler.RandomSampler is ember.data.RandomSampler
