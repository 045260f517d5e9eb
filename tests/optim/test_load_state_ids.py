"""Loading an optimizer state dict whose parameter ids are not 0..n-1: PyTorch maps the saved
ids to the optimizer's parameters by position, whatever the ids are (ints in another order,
or names, as some checkpoints use, even names of digits, such as '²' or '٣')."""

from __future__ import annotations

import numpy as np
import pytest
import torch

import ember


def _load_and_step(lib, ids):
    a = lib.ones(2, requires_grad=True)
    b = lib.ones(3, requires_grad=True)
    opt = lib.optim.SGD([a, b], lr=0.1, momentum=0.9)
    saved = {"state": {ids[0]: {"momentum_buffer": lib.ones(2) * 3},
                       ids[1]: {"momentum_buffer": lib.ones(3) * 2}},
             "param_groups": [{"lr": 0.1, "momentum": 0.9, "dampening": 0, "weight_decay": 0,
                               "nesterov": False, "maximize": False, "params": list(ids)}]}
    opt.load_state_dict(saved)
    a.grad, b.grad = lib.ones(2), lib.ones(3)
    opt.step()
    return a.detach().numpy(), b.detach().numpy(), opt.state_dict()


@pytest.mark.parametrize("ids", [("v", "w"), (5, 0), ("layer.weight", 7), ("²", "①"),
                                 ("3", "\u0663")])  # (an ASCII and an Arabic-Indic 3: two ids)
def test_saved_ids_map_by_position_as_in_torch(ids):
    ea, eb, esd = _load_and_step(ember, ids)
    ta, tb, tsd = _load_and_step(torch, ids)
    np.testing.assert_allclose(ea, ta)
    np.testing.assert_allclose(eb, tb)
    assert sorted(esd["state"]) == sorted(tsd["state"]) == [0, 1]
    assert esd["param_groups"][0]["params"] == tsd["param_groups"][0]["params"] == [0, 1]
    np.testing.assert_allclose(esd["state"][1]["momentum_buffer"].numpy(),
                               tsd["state"][1]["momentum_buffer"].numpy())


@pytest.mark.parametrize("ids", [("3", 3), ("3", "03")])
def test_saved_ids_that_read_as_one_id_are_refused(ids):
    """PyTorch keeps 3 and '3' apart; Ember reads JSON's '3' as 3, so a pair that would
    become one id (the state of one landing on the other's parameter) is refused."""
    with pytest.raises(ValueError, match=f"{ids[0]!r} and {ids[1]!r} both read as parameter id 3"):
        _load_and_step(ember, ids)
    w = ember.ones(2, requires_grad=True)
    opt = ember.optim.SGD([w], lr=0.1)
    with pytest.raises(ValueError, match="state keys '3' and 3 both read as parameter id 3"):
        opt.load_state_dict({"state": {"3": {}, 3: {}},
                             "param_groups": [dict(opt.state_dict()["param_groups"][0],
                                                   params=[3])]})
