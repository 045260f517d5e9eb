"""get_optimizer_state_dict makes state not made yet as PyTorch's does: a step with zero
gradients and lr 0, none for frozen parameters, nothing when gradients exist (one process)."""

import numpy as np
import pytest
import torch
from torch.distributed.checkpoint.state_dict import get_optimizer_state_dict as torch_get

import ember
from ember.distributed.fsdp import get_optimizer_state_dict


def _model(lib):
    lib.manual_seed(0)
    model = lib.nn.Sequential(lib.nn.Linear(3, 2), lib.nn.Tanh(), lib.nn.Linear(2, 1))
    with lib.no_grad():
        for p, v in zip(model.parameters(), (0.1 * np.arange(6.0).reshape(2, 3), [0.2, -0.1],
                                             [[0.5, -0.3]], [0.05])):
            p.copy_(lib.tensor(v))
    model[2].weight.requires_grad_(False)
    return model, lib.optim.Adam(model.parameters(), lr=0.1)


def _state(sd):
    return {name: {k: np.asarray(v.detach().numpy(), float).tolist() for k, v in s.items()}
            for name, s in sd["state"].items()}


@pytest.mark.parametrize("with_grads", [False, True])
def test_state_made_before_the_first_step_is_torchs(with_grads):
    runs = {}
    for lib, get in ((ember, get_optimizer_state_dict), (torch, torch_get)):
        model, opt = _model(lib)
        x = lib.tensor(np.linspace(-1, 1, 12, dtype=np.float32).reshape(4, 3))
        if with_grads:  # backward done, step not yet: the state must not count this gradient
            model(x).sum().backward()
        made = _state(get(model, opt))
        for _ in range(2):
            opt.step()
            opt.zero_grad()
            model(x).sum().backward()
        runs[lib.__name__] = made, [p.detach().numpy().copy() for p in model.parameters()]
    (made, params), (want_made, want_params) = runs["ember"], runs["torch"]
    assert made.keys() == want_made.keys()  # (no state for the frozen weight)
    assert made == want_made  # (zeros, step 1; or nothing when gradients exist)
    for p, q in zip(params, want_params):
        np.testing.assert_allclose(p, q, rtol=1e-5, atol=1e-7)


def test_state_made_for_an_infinite_parameter_is_zeros_as_torchs():
    runs = {}
    for lib, get in ((ember, get_optimizer_state_dict), (torch, torch_get)):
        model, opt = _model(lib)
        with lib.no_grad():
            model[0].bias.fill_(float("inf"))  # a zero gradient is zeros, not inf * 0 = NaN
        runs[lib.__name__] = _state(get(model, opt))
    assert runs["ember"] == runs["torch"]
