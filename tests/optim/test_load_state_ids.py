"""Loading an optimizer state dict whose parameter ids are not 0..n-1: PyTorch maps the saved
ids to the optimizer's parameters by position, whatever the ids are (ints in another order,
or names, as some checkpoints use, even names of digits ``int()`` refuses, such as '²')."""

from __future__ import annotations

import numpy as np
import pytest
import torch

import ember


def _load_and_step(lib, ids):
    a = lib.ones(2, requires_grad=True)
    b = lib.ones(3, requires_grad=True)
    opt = lib.optim.SGD([a, b], lr=0.1, momentum=0.9)
    saved = {"state": {ids[1]: {"momentum_buffer": lib.ones(3) * 2}},
             "param_groups": [{"lr": 0.1, "momentum": 0.9, "dampening": 0, "weight_decay": 0,
                               "nesterov": False, "maximize": False, "params": list(ids)}]}
    opt.load_state_dict(saved)
    a.grad, b.grad = lib.ones(2), lib.ones(3)
    opt.step()
    return a.detach().numpy(), b.detach().numpy(), opt.state_dict()


@pytest.mark.parametrize("ids", [("v", "w"), (5, 0), ("layer.weight", 7), ("²", "①")])
def test_saved_ids_map_by_position_as_in_torch(ids):
    ea, eb, esd = _load_and_step(ember, ids)
    ta, tb, tsd = _load_and_step(torch, ids)
    np.testing.assert_allclose(ea, ta)
    np.testing.assert_allclose(eb, tb)
    assert sorted(esd["state"]) == sorted(tsd["state"]) == [0, 1]
    assert esd["param_groups"][0]["params"] == tsd["param_groups"][0]["params"] == [0, 1]
    np.testing.assert_allclose(esd["state"][1]["momentum_buffer"].numpy(),
                               tsd["state"][1]["momentum_buffer"].numpy())
