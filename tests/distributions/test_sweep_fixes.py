"""Divergences from torch.distributions found by the differential sweep, each checked against
torch: tiny-probability entropies, value conversion, dtypes and empty samples."""

import math

import mpmath
import torch

import ember
import ember.distributions as D

from .cases import close

TD = torch.distributions


def _exact_entropy(a, key: str, name: str):
    p = mpmath.mpf(a) if key == "probs" else 1 / (1 + mpmath.exp(-mpmath.mpf(a)))
    h = -p * mpmath.log(p) - (1 - p) * mpmath.log1p(-p) if p < 1 else mpmath.mpf(0)
    return h / p if name == "Geometric" else h


def test_geometric_and_bernoulli_entropy_for_tiny_probs():
    # logsigmoid kept log1p(exp(x)) below x = -20 (softplus's threshold): entropy / p was off by 1
    # torch's float32 entropies are 0 below probs = 1e-8, 11% off at 1e-7 (its logits clamp
    # probs at eps and the cross-entropy cancels); its float64 ones are 1e-4 off at 1e-12 and 0
    # at logits -40, so the values are checked against mpmath's
    p = [1e-12, 1e-9, 1e-7, 1e-6, 0.3, 0.9999, 1 - 2 ** -23, 1.0]
    logits = [-200.0, -90.0, -40.0, -25.0, 0.0, 3.0, 15.0]
    mpmath.mp.dps = 40
    for dt in (torch.float64, torch.float32):
        for name in ("Geometric", "Bernoulli"):
            for key, v in (("probs", p), ("logits", logits)):
                x = ember.tensor(v, dtype=getattr(ember, str(dt)[6:]))
                d = getattr(D, name)(**{key: x})
                assert d.entropy().dtype == d.probs.dtype
                close(d.entropy(), [float(_exact_entropy(a, key, name)) for a in x.tolist()],
                      rtol=1e-6 if dt == torch.float32 else 1e-9, atol=1e-13)
            # the slopes in the parameter, against mpmath's too (torch's float64 ones cancel
            # below probs 1e-7 and at logits -25)
            for key, v in (("probs", p[2:-1]), ("logits", logits)):
                x = ember.tensor(v, dtype=getattr(ember, str(dt)[6:]), requires_grad=True)
                (g,) = ember.autograd.grad(getattr(D, name)(**{key: x}).entropy().sum(), [x])
                exact = [float(mpmath.diff(lambda t, k=key, n=name: _exact_entropy(t, k, n), a))
                         for a in x.tolist()]
                close(g, exact, rtol=1e-5 if dt == torch.float32 else 1e-8)
    x = torch.tensor([-40.0, -27.6, -20.5, 0.0, 25.0], dtype=torch.float64)
    close(ember.nn.functional.logsigmoid(ember.tensor(x.numpy())),
          torch.nn.functional.logsigmoid(x), rtol=1e-12)


def test_gamma_and_half_cauchy_convert_the_value_like_torch():
    # numbers and other dtypes are converted to the parameter's dtype (torch's as_tensor)
    for validate in (True, False):
        for name, params in [("Gamma", (2.0, 3.0)), ("Chi2", (3.0,)), ("HalfCauchy", (2.0,))]:
            if name == "HalfCauchy" and validate:
                continue  # (torch checks the value before converting it: a number is refused)
            d = getattr(D, name)(*(ember.tensor([p]) for p in params), validate_args=validate)
            t = getattr(TD, name)(*(torch.tensor([p]) for p in params), validate_args=validate)
            for value in (1.5, 2, torch.tensor([0.5, 1.5], dtype=torch.float64)):
                got = d.log_prob(ember.tensor(value.numpy()) if torch.is_tensor(value) else value)
                want = t.log_prob(value)
                assert str(got.dtype)[6:] == str(want.dtype)[6:]
                close(got, want, rtol=1e-6)


def test_student_t_variance_keeps_a_half_dtype():
    for dt in ("float16", "bfloat16"):
        d = D.StudentT(ember.tensor([0.5, 1.5, 3.0], dtype=getattr(ember, dt)))
        t = TD.StudentT(torch.tensor([0.5, 1.5, 3.0], dtype=getattr(torch, dt)))
        assert d.variance.dtype == getattr(ember, dt) and d.stddev.dtype == d.variance.dtype
        close(d.variance.float(), t.variance.float(), rtol=1e-2)


def test_empty_batches_of_matrices():
    # constraint checks reshaped to (..., -1), which an empty batch cannot resolve
    d = D.Wishart(ember.tensor(4.0), ember.eye(2))
    t = TD.Wishart(torch.tensor(4.0), torch.eye(2))
    assert d.sample((0,)).shape == t.sample((0,)).shape
    assert TD.constraints.positive_definite.check(torch.zeros(0, 3, 3)).shape == (0,)
    for c in ("positive_definite", "symmetric", "lower_cholesky", "corr_cholesky"):
        # (torch's own lower_cholesky check fails on an empty batch too)
        assert getattr(D.constraints, c).check(ember.zeros(0, 3, 3)).shape == (0,)
    i = D.Independent(D.Normal(ember.zeros(0, 3), 1.0), 1)
    assert i.log_prob(ember.zeros(0, 3)).shape == (0,)


def test_one_hot_categorical_log_prob_of_a_bool_value():
    p = torch.tensor([[0.2, 0.3, 0.5], [0.5, 0.5, 0.0]])
    v = torch.tensor([[False, False, True], [True, False, False]])
    got = D.OneHotCategorical(ember.tensor(p.numpy())).log_prob(ember.tensor(v.numpy()))
    close(got, TD.OneHotCategorical(p).log_prob(v))


def test_float32_dirichlet_and_beta_with_small_concentrations_reach_the_corners():
    # float32 gammas all underflowed to one tiny value, so every sample was 1 / K
    for cls, args in [("Dirichlet", ([1e-3] * 3,)), ("Beta", (1e-3, 1e-3))]:
        d = getattr(D, cls)(*(ember.tensor(a) for a in args)).sample((4000,))
        t = getattr(TD, cls)(*(torch.tensor(a) for a in args)).sample((4000,))
        if cls == "Dirichlet":
            d, t = d.max(-1)[0], t.max(-1)[0]
        near = abs(float((d > 0.99).float().mean()) - float((t > 0.99).float().mean()))
        assert d.dtype == ember.float32 and near < 0.05


def test_float32_multivariate_normal_log_prob_of_a_float64_value():
    loc, cov = torch.tensor([0.5, -1.0]), torch.tensor([[2.0, 0.3], [0.3, 1.0]])
    v = torch.tensor([[0.1, 0.2], [1.5, -2.0]], dtype=torch.float64)
    want = TD.MultivariateNormal(loc, cov).log_prob(v)
    got = D.MultivariateNormal(ember.tensor(loc.numpy()), ember.tensor(cov.numpy())).log_prob(
        ember.tensor(v.numpy()))
    assert got.dtype == ember.float32
    close(got, want, rtol=1e-5)


def test_utils_has_torchs_euler_constant():
    from torch.distributions.utils import euler_constant

    from ember.distributions.utils import euler_constant as ours
    assert ours == euler_constant


def test_gamma_cdf_for_large_concentrations():
    # gammainc near x = a stopped after 4000 terms: Gamma(1e8, 1e8).cdf(1) gave 0.155 (not 0.5)
    for a in (2e5, 1e6, 1e8):
        x = torch.tensor([1 - 3 / a ** 0.5, 1 - 1e-7, 1.0, 1 + 2 / a ** 0.5, 1.2],
                         dtype=torch.float64)
        t = TD.Gamma(torch.tensor(a, dtype=torch.float64), torch.tensor(a, dtype=torch.float64))
        d = D.Gamma(ember.tensor(a, dtype=ember.float64), ember.tensor(a, dtype=ember.float64))
        close(d.cdf(ember.tensor(x.numpy())), t.cdf(x), rtol=1e-10, atol=1e-300)
        chi = D.Chi2(ember.tensor([2 * a], dtype=ember.float64)).cdf(ember.tensor([2 * a]))
        close(chi, TD.Chi2(torch.tensor([2 * a], dtype=torch.float64)).cdf(
            torch.tensor([2 * a], dtype=torch.float64)), rtol=1e-10)


def test_continuous_bernoulli_next_to_one_half():
    # p / (2p - 1) + 1 / log((1 - p) / p) cancels just outside lims: float32's variance at
    # p = 0.499 was 0.25 (not 1/12) and its mean 0.5; torch's is -1.6 and 0.496
    p = [0.3, 0.49, 0.495, 0.499, 0.5011, 0.502, 0.51]
    want = TD.ContinuousBernoulli(torch.tensor(p).double())  # (float32's p, in float64)
    d = D.ContinuousBernoulli(ember.tensor(p))
    for name in ("mean", "variance", "stddev"):
        got = getattr(d, name)
        assert got.dtype == ember.float32
        close(got, getattr(want, name), rtol=2e-6)
    close(d.entropy(), want.entropy(), atol=5e-7)
    # (outside lims: inside them torch's cdf and icdf are the identity)
    p = [0.3, 0.49, 0.495, 0.498, 0.5011, 0.502, 0.51]
    want = TD.ContinuousBernoulli(torch.tensor(p).double())
    d = D.ContinuousBernoulli(ember.tensor(p))
    u = ember.tensor([0.05, 0.3, 0.5, 0.7, 0.95, 0.999, 0.6])
    close(d.cdf(u), want.cdf(torch.tensor(u.numpy()).double()), rtol=1e-6)
    close(d.icdf(u), want.icdf(torch.tensor(u.numpy()).double()), rtol=1e-6)
    # the slopes in probs: against torch away from 1/2, against the series' slopes next to it
    # (there the exact formulas' slopes cancel: torch's float64 variance slope is 1% off)
    away, near = [0.3, 0.45, 0.49, 0.51, 0.7], [0.4985, 0.4989, 0.5011, 0.5015]
    for dt, tol in ((ember.float64, 1e-8), (ember.float32, 1e-4)):
        probs = ember.tensor(away + near, dtype=dt, requires_grad=True)
        tp = torch.tensor(away, dtype=torch.float64, requires_grad=True)
        x = probs.detach().double().numpy()[len(away):] - 0.5
        series = {"mean": 1 / 3 + 16 * x ** 2 / 15, "variance": -2 * x / 15 + 512 * x ** 3 / 945}
        d, t = D.ContinuousBernoulli(probs), TD.ContinuousBernoulli(tp)
        for name in ("mean", "variance"):
            got = ember.autograd.grad(getattr(d, name).sum(), [probs], retain_graph=True)[0]
            want = torch.autograd.grad(getattr(t, name).sum(), [tp], retain_graph=True)[0]
            close(got[:len(away)], want, rtol=tol)
            close(got[len(away):], series[name], rtol=1e-3)


def test_float32_von_mises_with_a_large_concentration():
    # k cos(x) - log I0(k) and 1 - I1(k) / I0(k) cancelled: at k = 1e4 float32's log_prob was
    # 6e-4 off and its variance 0 (torch's are the same); now as torch's float64
    k = [1e-30, 0.5, 3.0, 30.0, 600.0, 1e4]
    x = [2.0, 0.1, -0.4, 0.05, 0.02, 0.003]
    t = TD.VonMises(torch.zeros(6, dtype=torch.float64), torch.tensor(k, dtype=torch.float64))
    d = D.VonMises(ember.zeros(6), ember.tensor(k))
    close(d.log_prob(ember.tensor(x)), t.log_prob(torch.tensor(x, dtype=torch.float64)),
          atol=2e-6)
    close(d.variance, t.variance, rtol=2e-4)
    # float64 slopes in loc, concentration and the value, as torch's
    loc = ember.zeros(6, dtype=ember.float64, requires_grad=True)
    conc = ember.tensor(k, dtype=ember.float64, requires_grad=True)
    value = ember.tensor(x, dtype=ember.float64, requires_grad=True)
    tl, tk, tx = (torch.tensor(v, dtype=torch.float64, requires_grad=True)
                  for v in ([0.0] * 6, k, x))
    d, t = D.VonMises(loc, conc), TD.VonMises(tl, tk)
    got = ember.autograd.grad((d.log_prob(value) + d.variance).sum(), [loc, conc, value])
    want = torch.autograd.grad((t.log_prob(tx) + t.variance).sum(), [tl, tk, tx])
    for g, w in zip(got, want):
        close(g, w, rtol=1e-7, atol=1e-12)
    # no NaN slopes from the branch not taken (torch: NaN at 1e7 in float32)
    k = ember.tensor([1e-30, 1e7, 1e30], requires_grad=True)
    d = D.VonMises(ember.zeros(3), k)
    (g,) = ember.autograd.grad((d.log_prob(ember.full((3,), 0.01)) + d.variance).sum(), [k])
    assert bool(ember.isfinite(g).all())


def test_probabilities_below_eps_keep_their_own_logits():
    # probs_to_logits clamped every probability into [eps, 1 - eps] (torch's clamp_probs), so
    # float32 Binomial(10, probs=1e-12).log_prob(1) was -13.6 (not -25.3); exact 0 and 1
    # still move to eps and 1 - eps, as torch's
    p = [1e-12, 1e-7, 0.3, 1 - 2 ** -24]
    x = [1.0, 2.0, 3.0, 9.0]
    for dt in ("float32", "float64"):
        probs = ember.tensor(p, dtype=getattr(ember, dt), requires_grad=True)
        tp = torch.tensor(p, dtype=getattr(torch, dt)).double().requires_grad_()
        for name, args in (("Binomial", (10,)), ("NegativeBinomial", (ember.tensor(3.0),)),
                           ("Bernoulli", ()), ("Geometric", ())):
            xs = [min(v, 1.0) for v in x] if name == "Bernoulli" else x
            d = getattr(D, name)(*args, probs=probs)
            targs = [torch.tensor(3.0, dtype=torch.float64)] if args and name != "Binomial" \
                else list(args)
            t = getattr(TD, name)(*targs, probs=tp)
            got = d.log_prob(ember.tensor(xs, dtype=getattr(ember, dt)))
            want = t.log_prob(torch.tensor(xs, dtype=torch.float64))
            close(got, want, rtol=1e-5 if dt == "float32" else 1e-12)
            (g,) = ember.autograd.grad(got.sum(), [probs])
            (w,) = torch.autograd.grad(want.sum(), [tp])
            close(g, w, rtol=1e-5 if dt == "float32" else 1e-9, atol=1e-4)
        c = D.Categorical(probs=ember.tensor([[1e-12, 1.0]], dtype=getattr(ember, dt)))
        close(c.log_prob(ember.tensor([0])), [-27.631021], rtol=1e-6)
        # below float64's eps too (where torch's float64 clamps as well)
        b = D.Binomial(10, probs=ember.tensor([1e-30], dtype=getattr(ember, dt)))
        close(b.log_prob(ember.tensor([1.0], dtype=getattr(ember, dt))),
              [math.log(10) + math.log(1e-30)], rtol=1e-6)
    zero = D.Bernoulli(probs=ember.tensor([0.0, 1.0])).log_prob(ember.tensor([1.0, 0.0]))
    close(zero, TD.Bernoulli(probs=torch.tensor([0.0, 1.0])).log_prob(torch.tensor([1.0, 0.0])))
