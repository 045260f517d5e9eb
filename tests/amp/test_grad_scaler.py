"""ember.amp.GradScaler against torch.amp.GradScaler("cpu"): scales, skipped steps, growth
and backoff, unscale_ before clipping, state dicts and misuse errors."""

import numpy as np
import pytest
import torch

import ember
from ember.amp import GradScaler


def _pair(seed=0):
    v = np.random.default_rng(seed).standard_normal((3, 2)).astype(np.float32)
    ep, tp = ember.tensor(v, requires_grad=True), torch.tensor(v, requires_grad=True)
    return ep, tp, ember.optim.SGD([ep], lr=0.1), torch.optim.SGD([tp], lr=0.1)


def test_trajectory_with_inf_steps_like_torch():
    ep, tp, eo, to = _pair()
    kw = dict(init_scale=2.0 ** 4, growth_factor=2.0, backoff_factor=0.5, growth_interval=2)
    es, ts = GradScaler(**kw), torch.amp.GradScaler("cpu", **kw)
    for step in range(8):
        bad = step in (2, 5)
        eo.zero_grad()
        to.zero_grad()
        el = (ep * ep).sum() * (float("inf") if bad else 1.0)
        tl = (tp * tp).sum() * (float("inf") if bad else 1.0)
        es.scale(el).backward()
        ts.scale(tl).backward()
        if step % 3 == 0:  # unscale_ first, then clip, as the docs show
            es.unscale_(eo)
            ts.unscale_(to)
            np.testing.assert_allclose(ep.grad.numpy(), tp.grad.numpy(), rtol=1e-6)
        es.step(eo)
        ts.step(to)
        es.update()
        ts.update()
        assert es.get_scale() == ts.get_scale(), step
        np.testing.assert_allclose(ep.detach().numpy(), tp.detach().numpy(), rtol=1e-6)
    assert es.state_dict() == {k: (v if not hasattr(v, "item") else v.item())
                               for k, v in ts.state_dict().items()}


def test_state_dict_round_trip_and_disabled():
    s = GradScaler(init_scale=8.0, growth_interval=3)
    s._growth_tracker = 2
    t = GradScaler()
    t.load_state_dict(s.state_dict())
    assert t.state_dict() == s.state_dict()
    off = GradScaler(enabled=False)
    assert off.state_dict() == {} and off.get_scale() == 1.0
    x = ember.ones(2, requires_grad=True)
    assert off.scale(x) is x
    with pytest.raises(RuntimeError, match="state dict is empty"):
        t.load_state_dict({})


def test_misuse_errors_and_skip_returns_none():
    ep, _, eo, _ = _pair()
    s = GradScaler()
    (ep.sum() * float("nan")).backward()
    s.unscale_(eo)
    with pytest.raises(RuntimeError, match="already been called"):
        s.unscale_(eo)
    before = ep.detach().numpy().copy()
    assert s.step(eo) is None
    np.testing.assert_array_equal(ep.detach().numpy(), before)
    with pytest.raises(RuntimeError, match="step\\(\\) has already been called"):
        s.step(eo)
    s.update()
    assert s.get_scale() == 2.0 ** 15
    with pytest.raises(RuntimeError, match="No inf checks"):
        s.update()
    with pytest.raises(ValueError, match="growth_factor"):
        GradScaler(growth_factor=1.0)
    s.update(new_scale=4.0)
    assert s.get_scale() == 4.0
    assert s.scale([ep, ep])[1].requires_grad


def test_a_half_precision_loss_is_scaled_in_float32_as_in_torch():
    for lib, scaler in ((ember, GradScaler()), (torch, torch.amp.GradScaler("cpu"))):
        scaled = scaler.scale(lib.tensor(3.0, dtype=lib.float16))
        assert str(scaled.dtype).endswith("float32") and scaled.item() == 3.0 * 2 ** 16
