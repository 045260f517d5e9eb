"""Elementwise ops on nested tensors with nested operands given anywhere (``clamp``'s bounds,
keywords), against torch.nested (jagged)."""

import numpy as np
import torch

import ember
from tests.nested.helpers import assert_close, pair


def test_clamp_takes_nested_bounds_as_torch():
    nt, tnt = pair()
    lo, tlo = nt * 0.5, tnt * 0.5
    assert_close(ember.clamp(nt, lo), torch.clamp(tnt, tlo))
    assert_close(nt.clamp(min=lo), tnt.clamp(min=tlo))
    assert_close(nt.clone().clamp_(lo), tnt.clone().clamp_(tlo))
    assert_close(nt.clone().clamp_(min=lo), tnt.clone().clamp_(min=tlo))
    # (torch refuses a nested max= and both bounds nested; per element they are these)
    x, low = nt.values().numpy(), lo.values().numpy()
    np.testing.assert_allclose(nt.clip(max=lo).values().numpy(), np.minimum(x, low))
    np.testing.assert_allclose(nt.clamp(lo, lo + 0.1).values().numpy(), np.clip(x, low, low + 0.1))


def test_clamp_bound_gradients_reach_the_nested_bound():
    nt, _ = pair()
    lo = (nt * 0.5).detach().requires_grad_()
    nt.clamp(min=lo).sum().backward()
    want = (nt.values() < lo.values()).double()
    np.testing.assert_array_equal(lo.grad.values().numpy(), want.numpy())
