"""The continuous families beyond the table's generic checks: samples against their CDFs
(Kolmogorov-Smirnov distance), gradients of log_prob, entropy, cdf and icdf against torch,
moments in every regime, GeneralizedPareto (torch's works in float32 only), von Mises
sampling, the new transforms and the validation errors."""

import doctest
import importlib
import math

import mpmath
import numpy as np
import pytest
import torch
import torch.distributions.transforms as TT

import ember
import ember.distributions as D
import ember.distributions.transforms as ET
from ember.autograd.gradcheck import gradcheck, gradgradcheck

from .cases import CASES, CDF_CHECKED, E, T, build, close, values

N = 20_000
KS_BOUND = 0.016  # P(KS distance > 0.016) < 2 exp(-2 N 0.016^2) ~ 7e-5 per column


def _ks_distance(samples, cdf):
    """The largest gap between the empirical CDF of each column and ``cdf`` at the sorted
    samples."""
    x = np.sort(samples, axis=0)
    f = cdf(x)
    n = x.shape[0]
    upper = np.arange(1, n + 1)[:, None] / n
    return np.max(np.maximum(upper - f, f - (upper - 1 / n)), axis=0)


def _numeric_cdf(t, lo, hi, points=400_001):
    """The CDF of torch distribution ``t`` (batch (3,)) by integrating its density on a grid."""
    grid = np.linspace(lo, hi, points)
    with torch.no_grad():
        pdf = t.log_prob(torch.tensor(grid)[:, None].expand(-1, 3)).exp().numpy()
    steps = (pdf[1:] + pdf[:-1]) / 2 * np.diff(grid)[:, None]
    cumulative = np.concatenate([np.zeros((1, 3)), np.cumsum(steps, 0)])

    def cdf(x):
        return np.stack([np.interp(x[:, j], grid, cumulative[:, j]) for j in range(3)], 1)

    return cdf


def _torch_cdf(t):
    def cdf(x):
        with torch.no_grad():
            return t.cdf(torch.tensor(x)).numpy()

    return cdf


NUMERIC_RANGE = {"StudentT": (-2000.0, 2000.0), "FisherSnedecor": (1e-9, 2000.0),
                 "VonMises": (-math.pi, math.pi)}


@pytest.mark.parametrize("name", sorted(CDF_CHECKED - {"LogisticNormal"}))
def test_samples_follow_the_cdf(name):
    ember.manual_seed(0)
    d, t, _ = build(name)
    x = d.sample((N,))
    assert x.dtype == ember.float64 and bool(d.support.check(x).all())
    if name in NUMERIC_RANGE:
        cdf = _numeric_cdf(t, *NUMERIC_RANGE[name])
    else:
        cdf = _torch_cdf(t)
    assert (_ks_distance(x.numpy(), cdf) < KS_BOUND).all()


def test_logistic_normal_samples_map_back_to_the_normal():
    ember.manual_seed(1)
    d, t, _ = build("LogisticNormal")
    x = d.sample((N,))
    assert x.shape == (N, 2, 4) and bool(d.support.check(x).all())
    z = ET.StickBreakingTransform().inv(x).numpy().reshape(N, -1)  # back to Normal(loc, scale)
    base = torch.distributions.Normal(t.loc.reshape(-1), t.scale.reshape(-1))
    assert (_ks_distance(z, _torch_cdf(base)) < KS_BOUND).all()


NEW = sorted(CDF_CHECKED)


def _grads(lib, name, fn):
    """Values of ``fn(dist)`` and gradients of their sum in every parameter, for ``lib``."""
    _, params, _ = CASES[name]
    leaves = {k: lib.tensor(np.asarray(v), requires_grad=True) for k, v in params.items()}
    d = getattr(lib.distributions, CASES[name][0])(**leaves)
    out = fn(lib, d)
    out.sum().backward()
    return [out] + [leaves[k].grad for k in params]


@pytest.mark.parametrize("name", NEW)
@pytest.mark.parametrize("what", ["log_prob", "entropy", "cdf", "icdf"])
def test_values_and_gradients_match_torch(name, what):
    q = np.random.default_rng(2).uniform(0.05, 0.95, (4,) + values(name).shape[1:])
    arg = {"log_prob": values(name), "cdf": values(name), "icdf": q}.get(what)

    def fn(lib, d):
        method = getattr(d, what)
        return method() if arg is None else method(lib.tensor(arg))

    try:
        want = _grads(torch, name, fn)
    except NotImplementedError:  # no such method, or (InverseGamma.cdf) no concentration grad
        with pytest.raises((NotImplementedError, ember.errors.GradError)):
            _grads(ember, name, fn)
        d, t, _ = build(name)
        if what == "cdf" and "cdf" in type(t).__dict__:  # torch's values, without gradients
            close(d.cdf(E(arg)), t.cdf(T(arg)))
        return
    got_all = _grads(ember, name, fn)
    if name == "ContinuousBernoulliProbs" and what in ("cdf", "icdf"):
        # at probs 1/2 (column 1, inside lims) torch's slope in probs is zero; ours is tested
        # against mpmath in test_continuous_bernoulli_cdf_and_icdf_inside_lims
        got_all[1], want[1] = (g.detach().numpy()[[0, 2]] for g in (got_all[1], want[1]))
    for got, expected in zip(got_all, want):
        if expected is None:  # torch's graph does not reach this parameter
            assert got is None or not got.numpy().any()
        else:
            close(got, expected, rtol=1e-6, atol=1e-9)


@pytest.mark.parametrize("name", ["StudentT", "InverseGamma", "FisherSnedecor", "VonMises"])
def test_entropy_and_moment_gradchecks(name):
    d, _, params = build(name, requires_grad=True)
    cls, names = type(d), list(params)

    def f(*xs):
        made = cls(**dict(zip(names, xs)), validate_args=False)
        try:
            return made.entropy() + made.variance
        except NotImplementedError:  # VonMises: no entropy
            return made.variance + made.log_prob(E(values(name)))

    assert gradcheck(f, tuple(params[k] for k in names))


@pytest.mark.parametrize(("cls", "args"), [
    ("StudentT", [[0.5, 1.5, 2.0, 3.0]]),
    ("FisherSnedecor", [[1.0, 2.5, 3.0, 6.0], [2.0, 3.0, 4.0, 6.0]]),
    ("InverseGamma", [[0.5, 1.0, 1.5, 3.0], [1.0, 2.0, 1.0, 2.0]]),
    ("Pareto", [[1.0, 2.0, 1.0, 2.0], [0.5, 1.0, 1.5, 3.0]]),
    ("Kumaraswamy", [[0.5, 2.0, 2.0, 3.0], [2.0, 0.5, 2.0, 4.0]]),
    ("Weibull", [[1.0, 2.0, 1.0], [0.5, 1.5, 3.0]]),
    ("ContinuousBernoulli", [[0.001, 0.4995, 0.5, 0.5005, 0.999]]),
    ("HalfCauchy", [[1.0, 2.0]]),
    ("Cauchy", [[0.0, 1.0], [1.0, 2.0]]),
])
def test_moments_in_every_regime(cls, args):
    """Infinite or undefined moments where the tails are heavy, NaN modes, and Taylor
    branches near probs = 1/2, as torch; and no NaN in the gradients there."""
    leaves = [ember.tensor(a, dtype=ember.float64, requires_grad=True) for a in args]
    ours = getattr(D, cls)(*leaves)
    theirs = getattr(torch.distributions, cls)(*[torch.tensor(a, dtype=torch.float64)
                                                 for a in args])
    for prop in ("mean", "mode", "variance", "stddev"):
        try:
            want = getattr(theirs, prop)
        except NotImplementedError:  # ContinuousBernoulli has no mode
            with pytest.raises(NotImplementedError):
                getattr(ours, prop)  # noqa: B018
            continue
        got = getattr(ours, prop)
        if (cls, prop) in TORCH_NAN_WHERE_HEAVY:  # torch where finite, else Ember's convention
            ok = torch.isfinite(want).numpy()
            assert ok.any() and not ok.all()
            close(got.detach().numpy()[ok], want.numpy()[ok])
            close(got.detach().numpy()[~ok],
                  np.full((~ok).sum(), TORCH_NAN_WHERE_HEAVY[cls, prop]))
        elif (cls, prop) not in TORCH_MODE_BUGS:
            close(got, want)
        finite = ember.where(ember.isfinite(got), got, 0.0).sum()
        if prop != "stddev" and finite.requires_grad:  # (sqrt of a NaN variance is NaN)
            for g in ember.autograd.grad(finite, leaves, allow_unused=True, retain_graph=True):
                assert g is None or not bool(ember.isnan(g).any())


# torch's Kumaraswamy.mode is NaN everywhere, its Weibull.mode NaN (or garbage) below k = 1
TORCH_MODE_BUGS = {("Kumaraswamy", "mode"), ("Weibull", "mode")}
# torch's FisherSnedecor moments are NaN where Ember's are inf (mode: 0), and right elsewhere
TORCH_NAN_WHERE_HEAVY = {("FisherSnedecor", "mean"): math.inf,
                         ("FisherSnedecor", "mode"): 0.0,
                         ("FisherSnedecor", "variance"): math.inf,
                         ("FisherSnedecor", "stddev"): math.inf}


def test_modes_where_torch_has_none():
    close(D.Kumaraswamy(ember.tensor([2.0, 1.0, 0.5]), 3.0).mode, [0.4472136, 0.0, math.nan])
    close(D.Weibull(2.0, ember.tensor([0.5, 1.0, 3.0])).mode,
          [0.0, 0.0, 2.0 * (2.0 / 3.0) ** (1 / 3.0)], rtol=1e-6)


# GeneralizedPareto: torch's log_prob compares with a float32 zero, so it runs in float32.

GP_PARAMS = dict(loc=[0.1, -0.5, 1.0, 0.0], scale=[2.0, 0.5, 1.5, 1.0],
                 concentration=[0.4, -0.3, 0.0, 1e-9])
GP_VALUES = [[0.3, -0.4, 1.2, 0.5], [2.0, 1.0, 4.0, 3.0]]


def _gp(lib, dtype, requires_grad=False):
    leaves = {k: lib.tensor(v, dtype=dtype, requires_grad=requires_grad)
              for k, v in GP_PARAMS.items()}
    return lib.distributions.GeneralizedPareto(**leaves), leaves


def test_generalized_pareto_against_torch():
    for what in ("log_prob", "cdf", "log_cdf", "log_survival_function", "icdf", "entropy",
                 "mean", "variance", "mode"):
        results = []
        for lib in (ember, torch):
            d, leaves = _gp(lib, lib.float32, requires_grad=True)
            arg = lib.tensor([[0.2, 0.1, 0.7, 0.9]] if what == "icdf" else GP_VALUES)
            out = getattr(d, what)
            out = out(arg) if callable(out) and what != "entropy" else out
            out = out() if what == "entropy" else out
            if out.requires_grad:
                ok = lib.isfinite(out)
                lib.where(ok, out, lib.zeros_like(out)).sum().backward()
            results.append([out] + [leaves[k].grad for k in GP_PARAMS])
        for key, got, want in zip(["value", *GP_PARAMS], *results):
            if key == "concentration" and want is not None:
                # torch's slope is zero at concentration 0, ours the limit's (tested below)
                got, want = got[:2], want[:2]
            if want is None:
                assert got is None or not got.numpy().any()
            else:
                close(got, want, rtol=2e-5, atol=1e-6)
    d, _ = _gp(ember, ember.float32)
    assert d.batch_shape == (4,) and d.has_rsample
    close(d.support.upper_bound, [math.inf, -0.5 + 0.5 / 0.3, math.inf, math.inf], rtol=1e-6)
    with pytest.raises(ValueError, match="GeneralizedPareto.*support"):
        d.log_prob(ember.tensor([0.3, 1.5, 1.2, 0.5]))  # above -0.5 + 0.5 / 0.3


def test_generalized_pareto_gradcheck_and_samples():
    _, leaves = _gp(ember, ember.float64, requires_grad=True)
    params = {k: v[:2] for k, v in leaves.items()}  # away from concentration 0
    v = ember.tensor([0.3, -0.4], dtype=ember.float64)

    def f(loc, scale, concentration):
        d = D.GeneralizedPareto(loc, scale, concentration, validate_args=False)
        return d.log_prob(v) + d.cdf(v) + d.icdf(ember.tensor([0.3, 0.6], dtype=ember.float64))

    assert gradcheck(f, tuple(params.values()))
    ember.manual_seed(3)
    d = D.GeneralizedPareto(*[ember.tensor(GP_PARAMS[k], dtype=ember.float64)
                              for k in ("loc", "scale", "concentration")])
    x = d.rsample((N,))
    assert x.shape == (N, 4) and bool(d.support.check(x).all())
    t, _ = _gp(torch, torch.float32)
    assert (_ks_distance(x.numpy(), lambda s: t.cdf(torch.tensor(s).float()).numpy())
            < KS_BOUND).all()
    assert d.expand((2, 4)).sample().shape == (2, 4)


def test_generalized_pareto_gradients_at_zero_concentration():
    """Where the concentration is (within isclose of) zero the formulas switch to the
    exponential limit; its slope in the concentration is not zero (torch's is), so a model
    starting at concentration 0 can leave it. Central differences step across the switch."""
    xi = ember.zeros(3, dtype=ember.float64, requires_grad=True)
    scale = ember.tensor([1.0, 2.0, 0.5], dtype=ember.float64, requires_grad=True)
    v = ember.tensor([0.3, 1.5, 4.0], dtype=ember.float64)
    u = ember.tensor([0.2, 0.7, 0.95], dtype=ember.float64)

    def f(scale, concentration):
        d = D.GeneralizedPareto(0.0, scale, concentration, validate_args=False)
        return ember.stack([d.log_prob(v), d.cdf(v), d.log_survival_function(v), d.icdf(u)])

    assert gradcheck(f, (scale, xi))
    d = D.GeneralizedPareto(0.0, 1.0, ember.tensor(0.0, dtype=ember.float64))
    close(d.log_prob(v), -v)
    close(d.icdf(u), -ember.log1p(-u))


def test_generalized_pareto_limits_at_zero_concentration_as_torch():
    """At concentration 0 the exponential limit holds at the ends of the support too (the
    first-order term is not ``0 * inf``), and for huge values too (not ``0 * t^2``)."""
    results = []
    for lib in (ember, torch):
        d = lib.distributions.GeneralizedPareto(0.0, 2.0, lib.zeros(3))
        v = lib.tensor([math.inf, 1e20, 0.5])
        results.append([d.log_prob(v), d.cdf(v), d.log_survival_function(v),
                        d.icdf(lib.tensor([1.0, 0.0, 0.5]))])
    for got, want in zip(*results):
        close(got, want, rtol=1e-6)


def test_generalized_pareto_tiny_concentration_far_out_is_exact():
    """Within ``isclose`` of zero but with ``xi t`` not small, the first-order series is
    wrong (it changes sign); the exact formulas apply (torch's value there is the limit's,
    ``-z``)."""
    xi, z = 1e-9, 1e10
    d = D.GeneralizedPareto(0.0, 1.0, ember.tensor([xi], dtype=ember.float64))
    v = ember.tensor([z], dtype=ember.float64)
    close(d.log_prob(v), [-(1 + 1 / xi) * math.log1p(xi * z)], rtol=1e-12)
    close(d.log_survival_function(v), [-math.log1p(xi * z) / xi], rtol=1e-12)


def test_continuous_bernoulli_cdf_and_icdf_inside_lims():
    """Near probs 1/2 (inside ``lims``) the CDF ``expm1(l x) / expm1(l)`` (``l`` the logit)
    and its inverse are series in ``l``, with values and slopes of the exact ones; torch
    returns the identity there (off by up to 5e-4, with no slope in probs)."""
    probs = [0.4992, 0.5, 0.5008]
    x = [0.3, 0.7, 0.9]

    def exact(p, v, inverse):
        lam = mpmath.log(p / (1 - p))
        if lam == 0:
            return mpmath.mpf(v)
        return (mpmath.log1p(v * mpmath.expm1(lam)) / lam if inverse
                else mpmath.expm1(lam * v) / mpmath.expm1(lam))

    p = ember.tensor(probs, dtype=ember.float64, requires_grad=True)
    d = D.ContinuousBernoulli(p)
    for what, inverse in (("cdf", False), ("icdf", True)):
        out = getattr(d, what)(ember.tensor(x, dtype=ember.float64))
        (slope,) = ember.autograd.grad(out.sum(), [p], retain_graph=True)
        with mpmath.workdps(30):
            want = [float(exact(mpmath.mpf(pi), vi, inverse)) for pi, vi in zip(probs, x)]
            want_slope = [float(mpmath.diff(lambda q, v=vi, i=inverse: exact(q, v, i),
                                            mpmath.mpf(pi))) for pi, vi in zip(probs, x)]
        close(out, want, rtol=1e-9)
        close(slope, want_slope, rtol=1e-5)


@pytest.mark.parametrize("name", ["StudentT", "InverseGamma", "FisherSnedecor"])
def test_gamma_based_rsample_gradients(name):
    """d/dtheta E[x^2] from reparameterized samples against the exact derivative of the
    closed-form moment (implicit gradients through ember._standard_gamma)."""
    ember.manual_seed(4)
    params = {"StudentT": dict(df=8.0, loc=0.5, scale=2.0),
              "InverseGamma": dict(concentration=6.0, rate=2.0),
              "FisherSnedecor": dict(df1=5.0, df2=12.0)}[name]
    leaves = {k: ember.tensor(v, dtype=ember.float64, requires_grad=True)
              for k, v in params.items()}
    d = getattr(D, name)(**leaves)
    sampled = ember.autograd.grad((d.rsample((50_000,)) ** 2).mean(), list(leaves.values()))
    exact = ember.autograd.grad(d.variance + d.mean ** 2, list(leaves.values()))
    for s, e in zip(sampled, exact):
        assert abs(s.item() - e.item()) < 0.05 * abs(e.item()) + 0.01, (name, s.item(), e)


def test_von_mises_sampling():
    ember.manual_seed(5)
    d = D.VonMises(ember.tensor([3.0, -2.0, 0.0]), ember.tensor([1e-6, 0.5, 40.0]))
    x = d.sample((N,))
    assert x.shape == (N, 3) and x.dtype == ember.float32 and not d.has_rsample
    x = x.to(ember.float64).numpy()
    assert (x >= -math.pi).all() and (x <= math.pi).all()
    resultant = np.exp(1j * x).mean(0)
    np.testing.assert_allclose(1 - np.abs(resultant), d.variance.numpy(), atol=0.012)
    np.testing.assert_allclose(np.angle(resultant[1:]), [-2.0, 0.0], atol=0.05)
    with pytest.raises(NotImplementedError, match="VonMises"):
        d.rsample()
    assert d.expand((2, 3)).sample((4,)).shape == (4, 2, 3)


def test_folded_distributions_below_zero():
    for name in ("HalfNormal", "HalfCauchy"):
        ours = getattr(D, name)(ember.tensor([1.0, 2.0]), validate_args=False)
        theirs = getattr(torch.distributions, name)(torch.tensor([1.0, 2.0]),
                                                    validate_args=False)
        v = [-0.5, 0.5]
        close(ours.log_prob(ember.tensor(v)), theirs.log_prob(torch.tensor(v)), rtol=1e-6)
        with pytest.raises(ValueError, match=name):
            getattr(D, name)(ember.tensor([1.0, 2.0])).log_prob(ember.tensor(v))


@pytest.mark.parametrize("name", NEW)
def test_constraints_match_torch(name):
    d, t, _ = build(name)
    assert list(d.arg_constraints) == list(t.arg_constraints)
    for k, c in d.arg_constraints.items():
        assert repr(c) == repr(t.arg_constraints[k])
    assert repr(d.support).replace("ember", "torch") == repr(t.support)
    if name != "LogisticNormal":  # (no variance)
        expanded = d.expand((2,) + d.batch_shape)
        close(expanded.variance, t.expand(torch.Size((2,) + d.batch_shape)).variance)


def test_scalar_parameters_and_shapes():
    for ours, theirs in [(D.Cauchy(0.0, 1.0), torch.distributions.Cauchy(0.0, 1.0)),
                         (D.HalfNormal(2.0), torch.distributions.HalfNormal(2.0)),
                         (D.StudentT(3.0), torch.distributions.StudentT(3.0)),
                         (D.LogisticNormal(0.0, 1.0), torch.distributions.LogisticNormal(0.0,
                                                                                         1.0)),
                         (D.Pareto(1.0, 2.0), torch.distributions.Pareto(1.0, 2.0)),
                         (D.ContinuousBernoulli(logits=0.3),
                          torch.distributions.ContinuousBernoulli(logits=0.3))]:
        assert ours.batch_shape == tuple(theirs.batch_shape)
        assert ours.event_shape == tuple(theirs.event_shape)
        assert ours.rsample((2,)).shape == tuple(theirs.rsample((2,)).shape)
        assert set(ours.arg_constraints) == set(theirs.arg_constraints)


@pytest.mark.parametrize(("make", "words"), [
    (lambda: D.Cauchy(0.0, -1.0), ["Cauchy", "scale"]),
    (lambda: D.HalfNormal(ember.tensor([1.0, 0.0])), ["HalfNormal", "scale", "(2,)"]),
    (lambda: D.StudentT(ember.tensor(-1.0)), ["StudentT", "df"]),
    (lambda: D.Pareto(1.0, ember.tensor(0.0)), ["Pareto", "alpha"]),
    (lambda: D.InverseGamma(ember.tensor(-1.0), 1.0), ["InverseGamma", "concentration"]),
    (lambda: D.VonMises(0.0, ember.tensor(0.0)), ["VonMises", "concentration"]),
    (lambda: D.Weibull(ember.tensor(1.0), -2.0), ["Weibull", "concentration"]),
    (lambda: D.Kumaraswamy(ember.tensor(1.0), 0.0), ["Kumaraswamy", "concentration0"]),
    (lambda: D.FisherSnedecor(ember.tensor(1.0), 0.0), ["FisherSnedecor", "df2"]),
    (lambda: D.GeneralizedPareto(0.0, ember.tensor(-1.0), 0.1), ["GeneralizedPareto", "scale"]),
    (lambda: D.ContinuousBernoulli(ember.tensor(1.5)), ["ContinuousBernoulli", "probs"]),
    (lambda: D.ContinuousBernoulli(0.5, 0.0), ["ContinuousBernoulli", "exactly one"]),
    (lambda: D.LogisticNormal(ember.zeros(2), ember.tensor([1.0, -1.0])),
     ["LogisticNormal", "scale"]),
    (lambda: D.Pareto(ember.tensor(2.0), 3.0).log_prob(ember.tensor(1.0)), ["Pareto", "support"]),
    (lambda: D.Kumaraswamy(ember.tensor(2.0), 3.0).log_prob(ember.tensor(1.5)),
     ["Kumaraswamy", "support"]),
    (lambda: D.LogisticNormal(ember.zeros(2), 1.0).log_prob(ember.tensor([0.5, 0.5, 0.5])),
     ["LogisticNormal", "support"]),
])
def test_validation_errors(make, words):
    with pytest.raises(ValueError) as err:
        make()
    for w in words:
        assert w in str(err.value)


def test_continuous_bernoulli_clamps_probs_without_validation():
    """As torch without validation: probs are clamped into [eps, 1 - eps]."""
    d = D.ContinuousBernoulli(ember.tensor(1.5), validate_args=False)
    t = torch.distributions.ContinuousBernoulli(torch.tensor(1.5))  # torch only checks then
    close(d.probs, t.probs)
    close(d.mean, t.mean, rtol=1e-5)


# transforms


def _pairs():
    exponent = np.array([0.5, -2.0, 3.0])
    return [(ET.PowerTransform(E(exponent)), TT.PowerTransform(T(exponent)), np.abs),
            (ET.AbsTransform(), TT.AbsTransform(), lambda x: x),
            (ET.SoftmaxTransform(), TT.SoftmaxTransform(), lambda x: x),
            (ET.StickBreakingTransform(), TT.StickBreakingTransform(), lambda x: x)]


@pytest.mark.parametrize("i", range(4))
def test_new_transforms_against_torch(i):
    ours, theirs, to_domain = _pairs()[i]
    x = to_domain(np.random.default_rng(8).normal(size=(2, 3)))
    y = ours(E(x))
    close(y, theirs(T(x)))
    close(ours.inv(y), theirs.inv(theirs(T(x))))
    for attr in ("bijective",):
        assert getattr(ours, attr) == getattr(theirs, attr)
    for c in ("domain", "codomain"):
        assert getattr(ours, c).event_dim == getattr(theirs, c).event_dim
        assert type(getattr(ours, c)).__name__.lstrip("_") in type(getattr(theirs, c)).__name__
    for shape in [(2, 3), (5, 2, 3)]:
        assert ours.forward_shape(shape) == tuple(theirs.forward_shape(torch.Size(shape)))
        assert ours.inverse_shape(shape) == tuple(theirs.inverse_shape(torch.Size(shape)))
    try:
        want = theirs.log_abs_det_jacobian(T(x), theirs(T(x)))
    except NotImplementedError:
        with pytest.raises(NotImplementedError):
            ours.log_abs_det_jacobian(E(x), y)
    else:
        close(ours.log_abs_det_jacobian(E(x), y), want)
    try:
        sign = theirs.sign
    except NotImplementedError:
        with pytest.raises(NotImplementedError, match=type(ours).__name__):
            ours.sign  # noqa: B018
    else:
        close(ours.sign, sign)
    assert ours == type(ours)(*([E(np.array([0.5, -2.0, 3.0]))] if i == 0 else []))


def test_stick_breaking_jacobian_gradcheck_and_shape_errors():
    t = ET.StickBreakingTransform()
    x = ember.tensor(np.random.default_rng(9).normal(size=(2, 3)), requires_grad=True)
    assert gradcheck(lambda x: t.log_abs_det_jacobian(x, t(x)), (x,))
    assert gradcheck(lambda x: t.inv(t(x) * 1.0), (x,))
    with pytest.raises(ValueError, match="StickBreakingTransform.*at least one dim"):
        t.forward_shape(())
    with pytest.raises(ValueError, match="SoftmaxTransform"):
        ET.SoftmaxTransform().inverse_shape(())
    assert ET.PowerTransform(2.0) != ET.PowerTransform(3.0)


MODULES = ["cauchy", "folded", "gamma_ratios", "extreme_value", "unit_interval", "von_mises",
           "logistic_normal", "transforms", "utils"]


@pytest.mark.parametrize("name", MODULES)
def test_docstring_examples_run(name):
    mod = importlib.import_module(f"ember.distributions.{name}")
    namespace = {"ember": ember, **{k: getattr(ET, k) for k in ET.__all__}}
    result = doctest.testmod(mod, extraglobs=namespace, optionflags=doctest.NORMALIZE_WHITESPACE)
    assert result.failed == 0 and result.attempted > 0


@pytest.mark.parametrize("name", NEW)
def test_log_prob_gradgradcheck(name):
    d, _, params = build(name, requires_grad=True)
    cls, names = type(d), list(params)
    v = E(values(name)[:1])

    def log_prob(*xs):
        return cls(**dict(zip(names, xs)), validate_args=False).log_prob(v)

    assert gradgradcheck(log_prob, tuple(params[k] for k in names))


@pytest.mark.parametrize("name", NEW)
def test_float32_matches_torch(name):
    cls, params, v = CASES[name]
    ours = getattr(D, cls)(**{k: ember.tensor(np.asarray(p), dtype=ember.float32)
                              for k, p in params.items()})
    theirs = getattr(torch.distributions, cls)(**{k: torch.tensor(np.asarray(p)).float()
                                                  for k, p in params.items()})
    got = ours.log_prob(ember.tensor(v, dtype=ember.float32))
    assert got.dtype == ember.float32 and ours.sample((2,)).dtype == ember.float32
    close(got, theirs.log_prob(torch.tensor(v).float()), rtol=2e-5, atol=2e-5)


@pytest.mark.parametrize(("name", "args"), [("Gumbel", (0.0, 1.0)), ("Pareto", (1.0, 2.0)),
                                            ("HalfNormal", (1.0,)), ("Weibull", (1.0, 2.0)),
                                            ("StudentT", (3.0,)), ("Cauchy", (0.0, 2.0))])
def test_repr_as_torch(name, args):
    assert repr(getattr(D, name)(*args)) == repr(getattr(torch.distributions, name)(*args))


def test_generalized_pareto_heavy_tail_moments_are_inf_as_the_same_pareto():
    """GeneralizedPareto(scale / xi, scale, xi) is Pareto(scale / xi, 1 / xi): its mean is inf
    for xi >= 1 and its variance for xi >= 1/2, as Pareto's (torch's GeneralizedPareto: NaN)."""
    xi = E([0.3, 0.6, 1.0, 1.5])
    gp = D.GeneralizedPareto(1.0 / xi, ember.ones(4, dtype=ember.float64), xi)
    pareto = D.Pareto(1.0 / xi, 1.0 / xi)
    close(gp.mean, pareto.mean)
    close(gp.variance, pareto.variance)
    close(gp.stddev, [pareto.stddev.numpy()[0], math.inf, math.inf, math.inf])
    close(gp.mean, [1.0 / 0.3 + 1.0 / 0.7, 1.0 / 0.6 + 1.0 / 0.4, math.inf, math.inf])


def test_fisher_snedecor_heavy_tail_moments_are_inf_and_low_df1_mode_zero():
    """A positive variable's diverging mean/variance is inf (as InverseGamma's, Pareto's);
    for df1 <= 2 the density peaks at zero (torch: NaN for all three)."""
    d = D.FisherSnedecor(E([3.0, 3.0, 3.0, 2.0, 1.0]), E([1.0, 2.0, 3.0, 5.0, 6.0]))
    close(d.mean, [math.inf, math.inf, 3.0, 5.0 / 3.0, 1.5])
    close(d.variance[:3], [math.inf] * 3)
    close(d.mode, [1 / 9, 1 / 6, 0.2, 0.0, 0.0])

