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
    s.scale(ep.sum() * float("nan")).backward()
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


def _run_scaler(lib, scaler, steps, bad_every):
    w = lib.tensor([1.0, -2.0], requires_grad=True)
    opt = lib.optim.SGD([w], lr=0.01)
    scales = []
    for step in range(steps):
        opt.zero_grad()
        loss = (w * w).sum() * (float("inf") if step % bad_every == bad_every - 1 else 1.0)
        scaler.scale(loss).backward()
        scaler.step(opt)
        scaler.update()
        scales.append(scaler.get_scale())
    return scales


@pytest.mark.parametrize("kw", [
    dict(growth_factor=3.0, backoff_factor=0.3, growth_interval=2),  # float32 rounding
    dict(init_scale=2.0 ** 120, growth_factor=2.0 ** 5, growth_interval=1),  # past float32 max
])
def test_scale_is_float32_and_stops_growing_at_its_range_like_torch(kw):
    ember_scales = _run_scaler(ember, GradScaler(**kw), 12, bad_every=5)
    torch_scales = _run_scaler(torch, torch.amp.GradScaler("cpu", **kw), 12, bad_every=5)
    assert ember_scales == torch_scales


def test_unscaling_float16_gradients_is_refused_as_torch_and_leaves_them_alone():
    for lib in (torch, ember):
        w = lib.ones(3, dtype=lib.float16, requires_grad=True)
        kept = lib.ones(2, requires_grad=True)
        kept.grad, w.grad = lib.full((2,), 8.0), lib.full((3,), 8.0, dtype=lib.float16)
        opt = lib.optim.SGD([kept, w], lr=0.1)
        scaler = lib.amp.GradScaler("cpu", init_scale=4.0)
        scaler.scale(kept.sum())
        with pytest.raises(ValueError, match="Attempting to unscale FP16 gradients"):
            scaler.unscale_(opt)
        with pytest.raises(ValueError, match="Attempting to unscale FP16 gradients"):
            scaler.step(opt)
        assert w.tolist() == [1.0] * 3 and w.grad.tolist() == [8.0] * 3
    assert kept.grad.tolist() == [8.0, 8.0]  # (Ember checks every gradient before any write)


def test_unscaling_bfloat16_gradients_by_a_large_scale_does_not_flush_them_to_zero():
    w = ember.ones(3, dtype=ember.bfloat16, requires_grad=True)
    scaler = GradScaler(init_scale=2.0 ** 25)  # (a float16 1/scale would be 0)
    optimizers = []  # (kept alive: the scaler knows an optimizer by its id, as PyTorch's)
    scaler.scale(w.sum())  # (unscale_ needs a scale() before it, as PyTorch's)
    for grad in (ember.full((3,), 336.0, dtype=w.dtype),  # writable, and a read-only view
                 ember.full((1,), 336.0, dtype=w.dtype).expand(3)):
        w.grad = grad
        optimizers.append(ember.optim.SGD([w], lr=0.1))
        scaler.unscale_(optimizers[-1])
        assert w.grad.dtype is w.dtype
        np.testing.assert_allclose(w.grad.float().numpy(), 336.0 / 2 ** 25, rtol=1e-2)


def test_scale_of_other_iterables_and_of_non_tensors_as_torch():
    results = []
    for lib in (ember, torch):
        scaler = lib.amp.GradScaler("cpu", init_scale=4.0)
        lazy = scaler.scale(x for x in [lib.ones(1), lib.ones(2)])
        nested = scaler.scale([lib.ones(1), (lib.ones(1),)])
        with pytest.raises(ValueError, match="outputs must be a Tensor or an iterable"):
            scaler.scale(2.0)
        results.append((type(lazy).__name__, [t.tolist() for t in lazy],
                        nested[0].tolist(), nested[1][0].tolist()))
    assert results[0] == results[1] == ("map", [[4.0], [4.0, 4.0]], [4.0], [4.0])


def test_an_optimizer_without_gradients_is_refused_as_in_torch():
    for lib in (ember, torch):
        p, q = lib.nn.Parameter(lib.ones(2)), lib.nn.Parameter(lib.ones(2))
        without, with_grads = lib.optim.SGD([p], lr=1.0), lib.optim.SGD([q], lr=1.0)
        scaler = lib.amp.GradScaler("cpu")
        scaler.scale(q.sum()).backward()
        with pytest.raises((RuntimeError, AssertionError),
                           match="No inf checks were recorded for this optimizer"):
            scaler.step(without)
        scaler = lib.amp.GradScaler("cpu")
        scaler.scale(q.sum())
        scaler.unscale_(without)
        with pytest.raises((RuntimeError, AssertionError),
                           match="No inf checks were recorded prior to update"):
            scaler.update()
        scaler.step(with_grads)  # (one optimizer with gradients is enough for update)
        scaler.update()
        assert scaler.get_scale() == 2.0 ** 16


@pytest.mark.parametrize("bad", ["two_elements", "requires_grad", "string"])
def test_update_refuses_a_bad_new_scale_clearly_as_torch_refuses_it(bad):
    def make(lib):
        return {"two_elements": lambda: lib.tensor([4.0, 2.0]),
                "requires_grad": lambda: lib.tensor(4.0, requires_grad=True),
                "string": lambda: "4.0"}[bad]()
    for lib in (ember, torch):
        p = lib.nn.Parameter(lib.ones(2))
        opt = lib.optim.SGD([p], lr=0.1)
        scaler = lib.amp.GradScaler("cpu")
        scaler.scale(p.sum()).backward()
        scaler.step(opt)
        if lib is torch:  # (AssertionError for tensors, AttributeError for a str)
            with pytest.raises((AssertionError, AttributeError)):
                scaler.update(make(lib))
        else:  # (before: item()'s error, or a scale of 4.0 from the string)
            with pytest.raises((ValueError, TypeError), match="GradScaler.update: new_scale"):
                scaler.update(make(lib))
            assert scaler.get_scale() == 2.0 ** 16


def test_update_takes_a_new_scale_as_torch():
    scales = []
    for lib in (ember, torch):
        p = lib.nn.Parameter(lib.ones(2))
        scaler = lib.amp.GradScaler("cpu")
        scaler.scale(p.sum())
        scaler.update(lib.tensor(4.0))
        scaler.update(lib.tensor(8.0))
        first = scaler.get_scale()
        scaler.update(16.0)
        scales.append((first, scaler.get_scale()))
    assert scales[0] == scales[1] == (8.0, 16.0)


def test_pickling_mid_iteration_is_refused_as_torchs():
    # (the per-optimizer stages, keyed by the optimizers of this process, would go with it)
    import copy
    import pickle

    for lib in (torch, ember):
        w = lib.ones(2, requires_grad=True)
        optimizer = lib.optim.SGD([w], lr=0.1)
        scaler = lib.amp.GradScaler("cpu", init_scale=8.0)
        scaler.scale(w.sum()).backward()
        scaler.unscale_(optimizer)
        with pytest.raises((AssertionError, RuntimeError), match="may only be pickled at the "
                           "beginning of an iteration"):
            pickle.dumps(scaler)
        scaler.step(optimizer)
        scaler.update()
        restored = pickle.loads(pickle.dumps(scaler))
        assert restored.state_dict() == scaler.state_dict()
        assert copy.deepcopy(scaler).get_scale() == 8.0


@pytest.mark.parametrize("init_scale", [0.1, 1.0 / 3, 2.0 ** 16])
def test_get_scale_before_scale_is_init_scale_as_given_as_torch(init_scale):
    scalers = [lib.amp.GradScaler("cpu", init_scale=init_scale) for lib in (ember, torch)]
    assert [s.get_scale() for s in scalers] == [init_scale] * 2
    assert scalers[0].state_dict() == scalers[1].state_dict()
    for s, lib in zip(scalers, (ember, torch)):
        s.scale(lib.ones(1))
    assert scalers[0].get_scale() == scalers[1].get_scale()
    loaded = ember.amp.GradScaler("cpu")
    loaded.load_state_dict({**scalers[1].state_dict(), "scale": 0.1})
    assert loaded.get_scale() == 0.1
