"""Differences the sweep50dist sweep found against torch.distributions 2.13."""

import math

import numpy as np
import pytest
import torch

import ember
import ember.distributions as D

from .cases import close


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("name, p", [("Bernoulli", 0.0), ("Bernoulli", 1.0), ("Geometric", 1.0)])
def test_entropy_slope_at_probs_zero_and_one_is_torchs_clamped_one(name, p, dtype):
    # the exact slope is +-inf; it was NaN (0 * inf from xlogy / xlog1py); torch's clamp gives
    # -logit(eps) there, and the KLs that take the entropy (Bernoulli || Poisson) follow it
    e = ember.tensor(p, dtype=getattr(ember, dtype)).requires_grad_()
    t = torch.tensor(p, dtype=getattr(torch, dtype), requires_grad=True)
    he = getattr(D, name)(probs=e).entropy()
    ht = getattr(torch.distributions, name)(probs=t).entropy()
    assert float(he) == 0.0
    close(ember.autograd.grad(he, [e])[0], torch.autograd.grad(ht, [t])[0], rtol=1e-6)
    if name == "Bernoulli":
        e2, t2 = e.detach().requires_grad_(), t.detach().requires_grad_()
        qe = D.Poisson(ember.tensor(2.0, dtype=e.dtype))
        qt = torch.distributions.Poisson(torch.tensor(2.0, dtype=t.dtype))
        ke = D.kl_divergence(D.Bernoulli(probs=e2), qe)
        kt = torch.distributions.kl_divergence(torch.distributions.Bernoulli(probs=t2), qt)
        close(ember.autograd.grad(ke, [e2])[0], torch.autograd.grad(kt, [t2])[0], rtol=1e-6)


def test_wrappers_name_a_base_or_transform_of_the_wrong_kind():
    # a non-Distribution base was AttributeError "'int' object has no attribute 'batch_shape'"
    # (torch's too); a non-Transform a TypeError where torch raises ValueError
    normal = D.Normal(0.0, 1.0)
    for make in (lambda: D.Independent(3, 0), lambda: D.TransformedDistribution(3, [])):
        with pytest.raises(ember.errors.ArgumentTypeError, match="base_distribution must be a "
                           "Distribution, got int"):
            make()
    with pytest.raises(ValueError, match="transforms must be Transform instances, got int"):
        D.TransformedDistribution(normal, [1])
    with pytest.raises(ValueError):  # as torch's
        torch.distributions.TransformedDistribution(torch.distributions.Normal(0.0, 1.0), [1])


@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_binary_kls_from_probs_exactly_zero_or_one(dtype):
    # KL(Bernoulli(0) || Bernoulli(q)) is -log1p(-q): float32 gave -1.1e-7 at q = 1e-8 (a
    # negative KL) and 0 at q = 1 - 1e-7, from softplus(logit(eps)) standing in for -log1p(-0)
    p = np.array([0.0, 1.0, 0.0, 1.0], dtype=dtype)
    q = np.array([1e-8, 0.999, 1e-3, 1 - 1e-7], dtype=dtype)
    exact = np.where(p == 0, -np.log1p(-q.astype(np.float64)), -np.log(q.astype(np.float64)))
    rtol = 1e-6 if dtype == "float32" else 1e-12
    pe = ember.tensor(p).requires_grad_()
    pt = torch.tensor(p, dtype=torch.float64, requires_grad=True)  # float64 slopes, which the
    qe = ember.tensor(q).requires_grad_()  # float32 ones now match (torch's float32: 0, 0)
    qt = torch.tensor(q, dtype=torch.float64, requires_grad=True)
    for ours, theirs, n in ((D.Bernoulli, torch.distributions.Bernoulli, None),
                            (D.Binomial, torch.distributions.Binomial, 3.0)):
        args = () if n is None else (n,)
        kl = D.kl_divergence(ours(*args, probs=pe), ours(*args, probs=qe))
        np.testing.assert_allclose(kl.detach().numpy(), exact * (n or 1), rtol=rtol, atol=0)
        if n is not None:  # torch's Binomial KL is -inf at p in {0, 1} (docs/distributions.md)
            continue
        ref = torch.distributions.kl_divergence(theirs(probs=pt), theirs(probs=qt))
        for a, b in zip(ember.autograd.grad(kl.sum(), [pe, qe]),
                        torch.autograd.grad(ref.sum(), [pt, qt])):
            close(a, b, rtol=1e-5, atol=1e-9)


def _gpd(xi, loc=1.0, scale=2.0):
    params = [ember.tensor(v, dtype=ember.float64).requires_grad_() for v in (loc, scale, xi)]
    return D.GeneralizedPareto(*params), params


@pytest.mark.parametrize("xi", [0.0, 0.3, -0.3])
def test_generalized_pareto_cdf_next_to_loc(xi):
    # 1 - exp(log_sf) cancelled: cdf 8e-4 off at z = 1e-15, 8e-8 at 1e-10 (torch's too); at
    # value = loc every slope was NaN (log1p(-1)), the exact ones are -1/scale, 0, 0
    mpmath = pytest.importorskip("mpmath")
    mpmath.mp.dps = 40
    d, params = _gpd(xi)
    for z in (1e-15, 1e-10, 1e-6, 0.5):
        got = float(d.cdf(ember.tensor(1.0 + 2.0 * z, dtype=ember.float64)))
        zz = (mpmath.mpf(1.0 + 2.0 * z) - 1) / 2
        x = mpmath.mpf(xi)
        exact = 1 - (mpmath.exp(-zz) if xi == 0 else (1 + x * zz) ** (-1 / x))
        assert abs(got / float(exact) - 1) < 1e-14, (z, got, float(exact))
    slopes = ember.autograd.grad(d.cdf(ember.tensor(1.0, dtype=ember.float64)), params)
    np.testing.assert_allclose([float(g) for g in slopes], [-0.5, 0.0, 0.0], atol=1e-15)
    tiny = ((1.0 + 2e-15) - 1.0) / 2  # z of the rounded value; log cdf = log z - z/2 + ...
    assert float(d.log_cdf(ember.tensor(1.0 + 2e-15, dtype=ember.float64))) == pytest.approx(
        math.log(tiny) - tiny * (1 + xi) / 2, rel=1e-14)


def test_generalized_pareto_log_prob_slope_far_out():
    # the unused series term xi z^2 / 2 overflowed to inf far out and its product with the
    # (1 + xi) factor gave a NaN slope in xi at value 1e200 (torch: 1830.52)
    mpmath = pytest.importorskip("mpmath")
    mpmath.mp.dps = 40

    def exact(loc, scale, xi):
        z = (mpmath.mpf(1e200) - loc) / scale
        return -mpmath.log(scale) - (1 / xi + 1) * mpmath.log1p(xi * z)

    d, params = _gpd(0.5)
    got = d.log_prob(ember.tensor(1e200, dtype=ember.float64))
    assert float(got) == pytest.approx(float(exact(1, 2, 0.5)), rel=1e-14)
    want = [float(mpmath.diff(exact, (1, 2, 0.5), n)) for n in ((1, 0, 0), (0, 1, 0), (0, 0, 1))]
    np.testing.assert_allclose([float(g) for g in ember.autograd.grad(got, params)], want,
                               rtol=1e-12, atol=1e-190)  # (d/dloc: 3e-200)


@pytest.mark.parametrize("name, params, exact, xs", [
    ("Normal", (0.0, 1.0), lambda m, x: m.ncdf(x), [-10.0, -30.0, -1e-15, 3.0]),
    ("LogNormal", (0.0, 1.0), lambda m, x: m.ncdf(m.log(x)), [1e-5, 1e-10, 0.5]),
    ("Exponential", (2.0,), lambda m, x: -m.expm1(-2 * x), [1e-15, 1e-10, 3.0]),
    ("Weibull", (1.0, 2.0), lambda m, x: -m.expm1(-x ** 2), [1e-8, 1e-5, 1.5]),
    ("HalfNormal", (2.0,), lambda m, x: m.erf(x / 2 / m.sqrt(2)), [1e-15, 1e-10, 1.0]),
    ("HalfCauchy", (2.0,), lambda m, x: 2 / m.pi * m.atan(x / 2), [1e-15, 1e-10, 1.0]),
    ("Laplace", (1.0, 2.0), lambda m, x: m.exp((x - 1) / 2) / 2, [-30.0, -60.0, 0.5]),
    ("Cauchy", (1.0, 2.0), lambda m, x: m.atan(-2 / (x - 1)) / m.pi if x < 1
     else m.mpf(1) / 2 + m.atan((x - 1) / 2) / m.pi, [-1e10, -1e300, 0.5, 3.0]),
])
def test_cdfs_keep_their_precision_in_the_lower_tail(name, params, exact, xs):
    # 1 + erf(z) and 1 - exp(-x) cancelled (torch's too): Normal.cdf(-10) was 0 (7.6e-24),
    # Exponential(2).cdf(1e-15) 8e-4 off, Weibull(1, 2).cdf(1e-8) 11% off (also from the
    # TransformedDistribution's sign (cdf - 1/2) + 1/2 for its PowerTransform's tensor sign)
    mpmath = pytest.importorskip("mpmath")
    mpmath.mp.dps = 50
    args = [ember.tensor(p, dtype=ember.float64).requires_grad_() for p in params]
    d = getattr(D, name)(*args)
    for x in xs:
        got = d.cdf(ember.tensor(x, dtype=ember.float64))
        want = float(exact(mpmath, mpmath.mpf(x)))
        assert float(got) == pytest.approx(want, rel=1e-12, abs=0), (x, float(got), want)
    # slopes unchanged where nothing cancelled: against torch
    t = [torch.tensor(p, dtype=torch.float64, requires_grad=True) for p in params]
    ref = getattr(torch.distributions, name)(*t).cdf(torch.tensor(xs[-1], dtype=torch.float64))
    got = d.cdf(ember.tensor(xs[-1], dtype=ember.float64))
    for a, b in zip(ember.autograd.grad(got, args), torch.autograd.grad(ref, t)):
        close(a, b, rtol=1e-12)


def test_gumbel_cdf_far_right_under_validation():
    # through the transforms the base Uniform(tiny, 1 - eps) refused the value 1 (torch too)
    d = D.Gumbel(ember.tensor(0.0, dtype=ember.float64), ember.tensor(1.0, dtype=ember.float64),
                 validate_args=True)
    assert float(d.cdf(ember.tensor(40.0, dtype=ember.float64))) == 1.0
    close(d.cdf(ember.tensor([-3.0, 0.5], dtype=ember.float64)),
          np.exp(-np.exp(-np.array([-3.0, 0.5]))), rtol=1e-15)


def test_kumaraswamy_cdf_slopes_at_one():
    # log1p(-1) = -inf made the parameter slopes of cdf(1) NaN (torch: 0)
    params = [ember.tensor(v, dtype=ember.float64).requires_grad_() for v in (2.0, 3.0)]
    cdf = D.Kumaraswamy(*params).cdf(ember.tensor(1.0, dtype=ember.float64))
    assert float(cdf) == 1.0
    assert [float(g) for g in ember.autograd.grad(cdf, params)] == [0.0, 0.0]
