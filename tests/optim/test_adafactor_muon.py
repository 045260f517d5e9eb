"""Adafactor and Muon against PyTorch: float64 (and float32) trajectories step by step for their
options, state dicts (layout, a JSON round trip mid-run, loading torch's), their argument
errors, and a training step compiled by ember.jit."""

from __future__ import annotations

import numpy as np
import pytest
import torch

import ember
from tests.optim.helpers import through_checkpoint

# Adafactor factors the last two dims of a matrix or a batch of matrices; Muon takes matrices.
SHAPES = {"Adafactor": [(3, 4), (2, 3, 5), (5,), ()], "Muon": [(3, 4), (6, 2)]}
CASES = [
    ("Adafactor", dict()),
    ("Adafactor", dict(lr=0.05, weight_decay=0.1, maximize=True)),
    ("Adafactor", dict(lr=0.5, eps=(1e-3, 1e-2), d=1.5, beta2_decay=-0.5, foreach=False)),
    ("Muon", dict(lr=0.02)),
    ("Muon", dict(lr=0.02, weight_decay=0.01, nesterov=False, momentum=0.9)),
    ("Muon", dict(lr=0.05, adjust_lr_fn="match_rms_adamw", ns_steps=3,
                  ns_coefficients=(2.0, -1.5, 0.5), eps=1e-3)),
]
IDS = [f"{n}-{k}" for n, k in CASES]


def pair(name, dtype=np.float64, seed=0):
    rng = np.random.default_rng(seed)
    arrays = [rng.standard_normal(s).astype(dtype) for s in SHAPES[name]]
    return ([ember.tensor(a.copy(), requires_grad=True) for a in arrays],
            [torch.tensor(a.copy(), requires_grad=True) for a in arrays])


def backward(lib, opt, params):
    opt.zero_grad()
    sum(((p * p) * (0.5 + i) + lib.sin(3.0 * p)).sum() for i, p in enumerate(params)).backward()


def step_both(eo, to, ep, tp, steps, rtol):
    # Muon's bfloat16 iteration can round one element the other way (a float32 sum in
    # another order): a step of lr * 2**-8 at most
    atol = eo.defaults["lr"] / 128 if isinstance(eo, ember.optim.Muon) else 0.0
    for _ in range(steps):
        backward(ember, eo, ep)
        eo.step()
        backward(torch, to, tp)
        to.step()
        for e, t in zip(ep, tp, strict=True):
            np.testing.assert_allclose(e.detach().numpy(), t.detach().numpy(), rtol=rtol,
                                       atol=max(atol, 1e-12))


@pytest.mark.parametrize(("name", "kwargs"), CASES, ids=IDS)
def test_trajectory_matches_torch(name, kwargs):
    ep, tp = pair(name)
    eo, to = getattr(ember.optim, name)(ep, **kwargs), getattr(torch.optim, name)(tp, **kwargs)
    step_both(eo, to, ep, tp, 8 if name == "Adafactor" else 5, rtol=1e-10)


@pytest.mark.parametrize(("name", "kwargs"), CASES[::2], ids=IDS[::2])
def test_float32_trajectory(name, kwargs):
    ep, tp = pair(name, np.float32)
    eo, to = getattr(ember.optim, name)(ep, **kwargs), getattr(torch.optim, name)(tp, **kwargs)
    step_both(eo, to, ep, tp, 4, rtol=1e-5)
    assert all(v.dtype is ember.float32 for s in eo.state.values() for v in s.values())


@pytest.mark.parametrize(("name", "kwargs"), CASES, ids=IDS)
def test_state_dict_matches_torch_and_round_trips(name, kwargs):
    ep, tp = pair(name)
    eo, to = getattr(ember.optim, name)(ep, **kwargs), getattr(torch.optim, name)(tp, **kwargs)
    step_both(eo, to, ep, tp, 3, rtol=1e-10)
    es, ts = eo.state_dict(), to.state_dict()
    assert es["param_groups"] == ts["param_groups"]
    for i, state in ts["state"].items():
        assert es["state"][i].keys() == state.keys()
        for k, v in state.items():
            assert tuple(es["state"][i][k].shape) == tuple(v.shape), k
            np.testing.assert_allclose(es["state"][i][k].numpy(), v.numpy(), rtol=1e-10)
    ep2 = [ember.tensor(p.detach().numpy().copy(), requires_grad=True) for p in ep]
    eo2 = getattr(ember.optim, name)(ep2, **dict(kwargs, lr=123.0))
    eo2.load_state_dict(through_checkpoint(es))
    assert eo2.param_groups[0]["lr"] == eo.param_groups[0]["lr"]
    # JSON made eps and ns_coefficients lists: they come back as the tuples torch keeps
    assert eo2.state_dict()["param_groups"] == ts["param_groups"]
    step_both(eo2, to, ep2, tp, 4, rtol=1e-10)


@pytest.mark.parametrize("name", ["Adafactor", "Muon"])
def test_loads_a_torch_state_dict(name):
    ep, tp = pair(name)
    to = getattr(torch.optim, name)(tp, lr=0.03)
    for _ in range(3):
        backward(torch, to, tp)
        to.step()
    ep = [ember.tensor(p.detach().numpy().copy(), requires_grad=True) for p in tp]
    eo = getattr(ember.optim, name)(ep, lr=0.03)
    eo.load_state_dict(to.state_dict())
    step_both(eo, to, ep, tp, 3, rtol=1e-10)


def test_muon_orthogonalizes_like_torch():
    """One Newton–Schulz result, wide and tall: torch's bfloat16 values exactly."""
    from torch.optim._muon import _zeropower_via_newtonschulz

    from ember.optim.muon import NS_COEFFICIENTS, orthogonalize

    rng = np.random.default_rng(1)
    for shape in [(4, 7), (9, 3)]:
        g = rng.standard_normal(shape)
        ours = orthogonalize(np, g, NS_COEFFICIENTS, 5, 1e-7)
        theirs = _zeropower_via_newtonschulz(torch.tensor(g), NS_COEFFICIENTS, 5, 1e-7)
        np.testing.assert_array_equal(ours, theirs.float().numpy())


def test_muon_addmm_rounds_like_torch_near_bfloat16_ties():
    """torch's bfloat16 addmm(C, A, B, beta, alpha) on the CPU is fma(beta, C, alpha * A@B) in
    float32, rounded once to bfloat16; Ember added beta * C rounded to float32, so a result
    next to a bfloat16 tie rounded the other way (1 small matrix in 75 was off by an ulp)."""
    from torch.optim._muon import _zeropower_via_newtonschulz

    from ember.optim.muon import NS_COEFFICIENTS, orthogonalize

    for shape, seed in [((5, 3), 101), ((5, 3), 168), ((8, 8), 3), ((8, 8), 92), ((16, 4), 45),
                        ((16, 4), 178)]:
        g = np.random.default_rng(seed).standard_normal(shape).astype(np.float32)
        ours = orthogonalize(np, g, NS_COEFFICIENTS, 5, 1e-7)
        theirs = _zeropower_via_newtonschulz(torch.tensor(g), NS_COEFFICIENTS, 5, 1e-7)
        np.testing.assert_array_equal(ours, theirs.float().numpy())


def test_muon_addmm_rounds_the_exact_sum_once():
    """beta * C + A@B with a float64 sum that rounds onto a float32 tie: torch's fma rounds
    the exact sum once (1 + 2**-8 + 2**-24 + 2**-80 is above the bfloat16 tie 1 + 2**-8);
    Ember's float64 sum rounded twice gave the tie, then 1.0 (review53a)."""
    from ember.optim.muon import _bfloat16, _fused_add

    beta = 5614251 * 2.0**-24  # (float32; times 3 is 1 + 2**-8 + 2**-24)
    for sign_c, sign_p in [(1, 1), (1, -1), (-1, 1), (-1, -1)]:
        c = torch.tensor([[3.0 * sign_c]], dtype=torch.bfloat16)
        m = torch.tensor([[2.0**-40]], dtype=torch.bfloat16)
        want = torch.addmm(c, sign_p * m, m, beta=beta).float().numpy()
        got = _bfloat16(np, _fused_add(np, np.float32(beta), c.float().numpy(),
                                       np.full((1, 1), sign_p * 2.0**-80, np.float32)))
        np.testing.assert_array_equal(got, want)


def test_muon_orthogonalizes_alike_on_any_thread_count():
    """A large product's float32 sums on two BLAS threads came out in another order than on one
    (700×700: bfloat16 ulps apart); the iteration runs on one whatever the count."""
    from ember.optim.muon import NS_COEFFICIENTS, orthogonalize

    g = np.random.default_rng(2).standard_normal((700, 700)).astype(np.float32)
    before = ember.get_num_threads()
    try:
        results = []
        for n in (1, 2):
            ember.set_num_threads(n)
            results.append(orthogonalize(np, g, NS_COEFFICIENTS, 5, 1e-7))
    finally:
        ember.set_num_threads(before)
    np.testing.assert_array_equal(results[0], results[1])


@pytest.mark.parametrize(("make", "error", "match"), [
    (lambda p: ember.optim.Adafactor(p, lr=-1.0), ValueError, "Learning rate should be >= 0"),
    (lambda p: ember.optim.Adafactor(p, beta2_decay=0.5), ValueError, "beta2_decay should be"),
    (lambda p: ember.optim.Adafactor(p, eps=(-1.0, 1e-3)), ValueError, "epsilon1 should be"),
    (lambda p: ember.optim.Adafactor(p, eps=(None, -1.0)), ValueError, "epsilon2 should be"),
    (lambda p: ember.optim.Adafactor(p, d=0.5), ValueError, "Clipping threshold d"),
    (lambda p: ember.optim.Adafactor(p, weight_decay=-0.1), ValueError, "weight_decay should"),
    (lambda p: ember.optim.Muon(p, lr=-1.0), ValueError, "Learning rate should be >= 0"),
    (lambda p: ember.optim.Muon(p, momentum=-0.5), ValueError, "momentum should be >= 0"),
    (lambda p: ember.optim.Muon(p, weight_decay=-1), ValueError, "weight decay should be"),
    (lambda p: ember.optim.Muon(p, adjust_lr_fn="rms"), ValueError, "rms is not supported"),
    (lambda p: ember.optim.Muon(p + [ember.zeros(3, requires_grad=True)]), ValueError,
     r"only supports 2D parameters .* size: \(3,\)"),
])
def test_bad_arguments_raise_like_torch(make, error, match):
    with pytest.raises(error, match=match):
        make([ember.zeros(2, 2, requires_grad=True)])


@pytest.mark.parametrize(("kwargs", "match"), [(dict(ns_steps=100), "less than 100"),
                                               (dict(ns_coefficients=(1.0, 2.0)), "exactly 3")])
def test_muon_bad_iteration_raises_at_step_like_torch(kwargs, match):
    w = ember.ones(2, 2, requires_grad=True)
    opt = ember.optim.Muon([w], **kwargs)
    w.sum().backward()
    with pytest.raises(ValueError, match=match):
        opt.step()


def test_adafactor_refuses_an_empty_parameter():
    w = ember.ones(2, 0, requires_grad=True)
    opt = ember.optim.Adafactor([w])
    w.sum().backward()
    with pytest.raises(ember.errors.DivisionByZero, match=r"shape \(2, 0\) has no elements"):
        opt.step()


@pytest.mark.parametrize("name", ["Adafactor", "Muon"])
def test_compiled_training_step_matches_eager(name):
    def run(compiled):
        ember.manual_seed(0)
        model = ember.nn.Sequential(ember.nn.Linear(4, 3, bias=False), ember.nn.Tanh(),
                                    ember.nn.Linear(3, 2, bias=False))
        opt = getattr(ember.optim, name)(model.parameters(), lr=0.05)

        def step(x):
            opt.zero_grad()
            model(x).pow(2).mean().backward()
            opt.step()

        step = ember.jit.compile(step) if compiled else step
        x = ember.randn(5, 4)
        for _ in range(4):
            step(x)
        return [p.detach().numpy() for p in model.parameters()]

    for a, b in zip(run(False), run(True), strict=True):
        np.testing.assert_allclose(a, b, rtol=1e-6)


@pytest.mark.parametrize("dtype", ["bfloat16", "float16"])
def test_adafactor_steps_half_precision_parameters_like_torch(dtype):
    """eps1=None is the machine epsilon of the parameter's dtype, bfloat16's too; values
    within an ulp of torch's (each does its half-precision rounding in its own order)."""
    rng = np.random.default_rng(0)
    arrays = [rng.standard_normal(s).astype(np.float32) for s in [(3, 4), (5,)]]
    results = []
    for lib in (ember, torch):
        params = [lib.tensor(a).to(getattr(lib, dtype)).requires_grad_() for a in arrays]
        opt = lib.optim.Adafactor(params, lr=0.1, weight_decay=0.1)
        for _ in range(3):
            opt.zero_grad()
            sum((p.float() ** 2).sum() for p in params).backward()
            opt.step()
        results.append([p.detach().float().numpy() for p in params])
        assert all(str(p.dtype).endswith(dtype) for p in params)
    for ours, theirs in zip(*results, strict=True):
        np.testing.assert_allclose(ours, theirs, rtol=2e-2, atol=2e-3)


@pytest.mark.parametrize("adjust", [None, "match_rms_adamw"])
def test_muon_float32_tensor_lr_scales_in_float32_like_torch(adjust):
    # PyTorch's adjusted lr is lr * scale, a float32 tensor product (was computed in double)
    rng = np.random.default_rng(0)
    start, grads = rng.standard_normal((6, 4)), rng.standard_normal((5, 6, 4))
    ep = ember.tensor(start.copy(), requires_grad=True)
    tp = torch.tensor(start.copy(), requires_grad=True)
    eo = ember.optim.Muon([ep], lr=ember.tensor(0.02), adjust_lr_fn=adjust)
    to = torch.optim.Muon([tp], lr=torch.tensor(0.02), adjust_lr_fn=adjust)
    for g in grads:
        ep.grad, tp.grad = ember.tensor(g.copy()), torch.tensor(g.copy())
        eo.step()
        to.step()
    np.testing.assert_allclose(ep.detach().numpy(), tp.detach().numpy(), rtol=1e-14, atol=1e-15)


@pytest.mark.parametrize("shape", [(6,), (2, 3)])
@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_adafactor_lerps_from_the_nearer_end_as_torch(shape, dtype):
    # (its first steps' beta is >= 1/2, where torch's lerp_ computes b - (b - a) * (1 - w): a
    # gradient whose square overflows makes the second moment NaN there, and its element
    # NaN; Ember's a + w * (b - a) gave inf, an update of 0: the element stayed put)
    big = 1e20 if dtype == "float32" else 1e300
    ours, theirs = [], []
    for lib, out in ((ember, ours), (torch, theirs)):
        p = lib.tensor(np.linspace(-1.0, 1.0, 6).reshape(shape), dtype=getattr(lib, dtype),
                       requires_grad=True)
        opt = lib.optim.Adafactor([p])
        for t in range(3):
            g = np.cos(np.arange(6) * (t + 1.0))
            g[2] = big if t == 0 else g[2]
            p.grad = lib.tensor(g.reshape(shape), dtype=getattr(lib, dtype))
            opt.step()
            out.append(p.detach().numpy().copy())
    for e, t in zip(ours, theirs, strict=True):
        np.testing.assert_allclose(e, t, rtol=1e-6 if dtype == "float32" else 1e-12)


@pytest.mark.parametrize("name, key", [("Adafactor", "variance"), ("Muon", "momentum_buffer")])
def test_float32_lerped_state_bit_for_bit_as_torch(name, key):
    # (torch's lerp_ rounds once; Ember's own two-form lerp rounded three times: 25 % of
    # Adafactor's second moments and 49 % of Muon's buffers 1 ulp apart)
    shape = (64,) if name == "Adafactor" else (16, 24)
    rng = np.random.default_rng(1)
    grads = [rng.standard_normal(shape).astype(np.float32) for _ in range(5)]
    states = []
    for lib in (ember, torch):
        p = lib.tensor(np.linspace(-1.0, 1.0, 384)[:np.prod(shape)].reshape(shape),
                       dtype=lib.float32, requires_grad=True)
        opt = getattr(lib.optim, name)([p], lr=0.01)
        for g in grads:
            p.grad = lib.tensor(g.copy())
            opt.step()
        states.append(opt.state[p][key].detach().numpy())
    np.testing.assert_array_equal(states[0], states[1])
