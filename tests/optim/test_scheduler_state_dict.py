"""Each scheduler's state dict holds what PyTorch 2.13's holds, value for value and type for
type (``repr`` equal: an int where torch keeps an int), so a checkpoint reads the same in both."""

from __future__ import annotations

import pytest
import torch

from ember.optim import lr_scheduler as ELR
from tests.optim.test_lr_scheduler import SCHEDULES, make_opts

CALLABLES = ("lr_lambdas", "_schedulers", "_scale_fn_ref", "_scale_fn_custom")


@pytest.mark.parametrize("key", sorted(SCHEDULES))
def test_state_dict_values_and_types_match_torch(key):
    eo, to = make_opts()
    es, ts = SCHEDULES[key](ELR, eo), SCHEDULES[key](torch.optim.lr_scheduler, to)
    for _ in range(5):
        eo.step(), es.step(), to.step(), ts.step()
    ours, theirs = es.state_dict(), ts.state_dict()
    assert sorted(ours) == sorted(theirs)
    for name in sorted(set(theirs) - set(CALLABLES)):
        assert repr(ours[name]) == repr(theirs[name]), name
