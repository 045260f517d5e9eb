"""nn.utils.skip_init: the module is built with no nn.init fill run, as torch's."""

import numpy as np
import pytest
import torch

import ember
import ember.nn as nn


def test_skip_init_runs_no_fill_and_draws_no_random_numbers():
    ember.manual_seed(0)
    m = nn.utils.skip_init(nn.Linear, in_features=6, out_features=2, dtype=ember.float64)
    after_skip = ember.rand(3).numpy()
    ember.manual_seed(0)
    assert np.array_equal(ember.rand(3).numpy(), after_skip)  # the stream was not advanced
    assert isinstance(m, nn.Linear) and tuple(m.weight.shape) == (2, 6)
    assert m.weight.dtype is ember.float64 and m.weight.requires_grad
    assert not nn.init._SKIPPING[0]  # and fills work again afterwards
    assert float(nn.init.ones_(ember.empty(2)).sum()) == 2.0


def test_skip_init_keeps_construction_otherwise():
    conv = nn.utils.skip_init(nn.Conv2d, 2, 4, 3, padding=1, bias=False)
    ref = torch.nn.utils.skip_init(torch.nn.Conv2d, 2, 4, 3, padding=1, bias=False)
    assert tuple(conv.weight.shape) == tuple(ref.weight.shape) and conv.bias is None
    assert conv.padding == ref.padding


@pytest.mark.parametrize("bad", [int, nn.Sequential])
def test_skip_init_refuses_like_torch(bad):
    torch_bad = {int: int, nn.Sequential: torch.nn.Sequential}[bad]
    with pytest.raises(RuntimeError):
        torch.nn.utils.skip_init(torch_bad)
    with pytest.raises(RuntimeError, match="skip_init: (expected a Module|Module must support)"):
        nn.utils.skip_init(bad)
