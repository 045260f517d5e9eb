"""Fixes from the sweep65b sweep of ember.distributions against torch.distributions."""

import math

import numpy as np
import pytest
import torch

import ember
import ember.distributions as D

TD = torch.distributions


@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_kumaraswamy_cdf_of_nan_is_nan_as_torch(dtype):
    # the cdf clamps to [0, 1] and then sent every value not below 1 to 1: NaN included
    a, b = np.array([0.5, 2.0, 2.0], dtype=dtype), np.array([0.5, 3.0, 3.0], dtype=dtype)
    x = np.array([math.nan, 1.0, 0.3], dtype=dtype)
    ours = D.Kumaraswamy(ember.tensor(a), ember.tensor(b), validate_args=False).cdf(ember.tensor(x))
    theirs = TD.Kumaraswamy(torch.tensor(a), torch.tensor(b), validate_args=False).cdf(
        torch.tensor(x))
    np.testing.assert_allclose(ours.numpy(), theirs.numpy(), rtol=1e-5, equal_nan=True)
    assert math.isnan(ours.numpy()[0])


# standardized quantiles in float64 from closed forms that keep the tails (q and 1 - q exact)
_Q = np.array([1e-300, 1e-50, 1e-20, 1e-10, 1e-3, 0.1, 0.3, 0.5, 0.7, 0.9, 1 - 1e-10, 1 - 1e-15])
_TAIL = {
    "Normal": lambda q: torch.special.ndtri(torch.tensor(q)).numpy(),
    "Laplace": lambda q: np.where(q < 0.5, np.log(2 * q), -np.log(2 * (1 - q))),
    "Cauchy": lambda q: np.where(q < 0.5, -1 / np.tan(np.pi * q), 1 / np.tan(np.pi * (1 - q))),
    "HalfNormal": lambda q: torch.erfinv(torch.tensor(q)).numpy() * np.sqrt(2),
    "HalfCauchy": lambda q: np.where(q < 0.5, np.tan(np.pi * q / 2),
                                     1 / np.tan(np.pi * (1 - q) / 2)),
}


def _pair(name, lib, x):
    cls = getattr(lib.distributions, name)
    scale = x(np.array(2.0))
    return cls(scale) if name.startswith("Half") else cls(x(np.array(0.5)), scale)


@pytest.mark.parametrize("name", sorted(_TAIL))
def test_icdf_keeps_its_tails(name):
    # PyTorch's forms round q away in the tails: Normal/Laplace icdf(1e-20) were -inf,
    # HalfNormal's 0, Cauchy's -6e15 (not -3e19) and 1% off at 1 - 1e-15
    ours = _pair(name, ember, ember.tensor).icdf(ember.tensor(_Q)).numpy()
    shift = 0.0 if name.startswith("Half") else 0.5
    np.testing.assert_allclose(ours, shift + 2.0 * _TAIL[name](_Q), rtol=1e-13)
    middle = (_Q > 1e-6) & (_Q < 1 - 1e-6)  # where PyTorch's forms hold, they agree
    theirs = _pair(name, torch, torch.tensor).icdf(torch.tensor(_Q[middle])).numpy()
    np.testing.assert_allclose(ours[middle], theirs, rtol=1e-12, atol=1e-15)


@pytest.mark.parametrize("name", sorted(_TAIL))
def test_icdf_edges_slopes_and_float32_as_torch(name):
    q = np.array([0.05, 0.3, 0.5, 0.75, 0.95, math.nan], dtype=np.float32)
    ours = _pair(name, ember, lambda a: ember.tensor(a.astype(np.float32)))
    theirs = _pair(name, torch, lambda a: torch.tensor(a.astype(np.float32)))
    got = ours.icdf(ember.tensor(q))
    assert got.dtype == ember.float32
    np.testing.assert_allclose(got.numpy(), theirs.icdf(torch.tensor(q)).numpy(), rtol=1e-5,
                               atol=1e-6, equal_nan=True)
    # the ends: -inf (0 for the folded ones) and inf (PyTorch's float32 Cauchy gives
    # +-4.6e7, with the signs swapped)
    low = 0.0 if name.startswith("Half") else -math.inf
    ends = ours.icdf(ember.tensor(np.array([0.0, 1.0], dtype=np.float32))).numpy()
    assert ends.tolist() == [low, math.inf]
    inner = np.array([1e-3, 0.2, 0.6, 0.99])
    v, tv = ember.tensor(inner, requires_grad=True), torch.tensor(inner, requires_grad=True)
    g, = ember.autograd.grad(_pair(name, ember, ember.tensor).icdf(v).sum(), [v])
    tg, = torch.autograd.grad(_pair(name, torch, torch.tensor).icdf(tv).sum(), [tv])
    np.testing.assert_allclose(g.numpy(), tg.numpy(), rtol=1e-9)


def test_laplace_icdf_slope_at_the_median():
    # scale / min(q, 1 - q) on both sides; PyTorch's sign(q - 1/2) makes it 0 at q = 1/2
    v = ember.tensor(np.array([0.5]), requires_grad=True)
    g, = ember.autograd.grad(D.Laplace(0.5, 2.0).icdf(v).sum(), [v])
    assert g.tolist() == [4.0]


@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_power_transform_jacobian_in_logs(dtype):
    # log|e y / x| underflowed once x ** (e - 1) did: InverseGamma.log_prob(1e30) was -inf
    x = np.array([1e-3, 0.5, 2.0, 100.0], dtype=dtype)
    for e in (2.0, 0.5, -1.0, 1.0, -2.5):
        ours = D.transforms.PowerTransform(ember.tensor(np.array(e, dtype=dtype)))
        theirs = TD.transforms.PowerTransform(torch.tensor(np.array(e, dtype=dtype)))
        got = ours.log_abs_det_jacobian(ember.tensor(x), ours(ember.tensor(x)))
        want = theirs.log_abs_det_jacobian(torch.tensor(x), theirs(torch.tensor(x)))
        assert got.dtype == getattr(ember, dtype)
        np.testing.assert_allclose(got.numpy(), want.numpy(), rtol=1e-5)
    big = 1e30 if dtype == "float32" else 1e200  # 3 log 2 - log 2 - 4 log x - 2 / x
    d = D.InverseGamma(ember.tensor(np.array(3.0, dtype=dtype)),
                       ember.tensor(np.array(2.0, dtype=dtype)))
    np.testing.assert_allclose(d.log_prob(ember.tensor(np.array([big], dtype=dtype))).numpy(),
                               [2 * math.log(2) - 4 * math.log(big)], rtol=1e-6)


@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_weibull_log_prob_in_closed_form(dtype):
    # through the transforms the Exponential draw z^k underflowed: Weibull(1, 50) at 1e-7
    # was -inf (log 50 + 49 log 1e-7 = -785.87), as PyTorch's
    def lp(lib, scale, k, x):
        return lib.distributions.Weibull(lib.tensor(np.array(scale, dtype=dtype)),
                                         lib.tensor(np.array(k, dtype=dtype))).log_prob(
            lib.tensor(np.array(x, dtype=dtype)))
    got = lp(ember, 1.0, 50.0, 1e-7).numpy()
    np.testing.assert_allclose(got, math.log(50) + 49 * math.log(1e-7), rtol=1e-6)
    scale, k = [[0.5], [2.0]], [0.5, 1.0, 2.0, 7.0]
    x = np.array([[[1e-3]], [[0.5]], [[1.0]], [[3.0]]])
    np.testing.assert_allclose(lp(ember, scale, k, x).numpy(), lp(torch, scale, k, x).numpy(),
                               rtol=1e-5)


@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_gumbel_icdf_near_one(dtype):
    # the base Uniform(tiny, 1 - eps)'s icdf rescaled q by 1 - eps: 0.6% off at 1 - 1e-15
    # in float64, 0.8% at 1 - 1e-6 in float32 (PyTorch's too)
    q = np.array([0.0, 0.1, 0.5, 0.9, 1.0, 1.5, math.nan], dtype=dtype)
    loc, scale = np.array([[0.5], [-1.0]], dtype=dtype), np.array(2.0, dtype=dtype)
    got = D.Gumbel(ember.tensor(loc), ember.tensor(scale)).icdf(ember.tensor(q)).numpy()
    want = TD.Gumbel(torch.tensor(loc), torch.tensor(scale)).icdf(torch.tensor(q)).numpy()
    np.testing.assert_allclose(got, want, rtol=2e-6, equal_nan=True)  # the ends as torch's
    near_one = np.array([1 - 1e-6 if dtype == "float32" else 1 - 1e-15], dtype=dtype)
    tail = D.Gumbel(ember.tensor(np.array(0.0, dtype=dtype)),
                    ember.tensor(np.array(1.0, dtype=dtype))).icdf(ember.tensor(near_one))
    exact = -math.log(-math.log(float(near_one[0])))
    np.testing.assert_allclose(tail.numpy(), [exact], rtol=1e-6 if dtype == "float32" else 1e-14)


@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_heavy_tail_log_prob_far_out(dtype):
    # log1p(z^2) overflowed past z = 1e19 in float32 (1e154 in float64): -inf, as PyTorch's
    far = 1e30 if dtype == "float32" else 1e200

    def t(x):
        return ember.tensor(np.array(x, dtype=dtype))
    log_far = math.log(far)
    cases = [(D.Cauchy(t(0.0), t(1.0)), -math.log(math.pi) - 2 * log_far),
             (D.HalfCauchy(t(1.0)), math.log(2 / math.pi) - 2 * log_far),
             (D.StudentT(t(3.0)), math.lgamma(2) - math.lgamma(1.5) - 0.5 * math.log(3 * math.pi)
              - 4 * log_far + 2 * math.log(3))]
    for d, want in cases:
        np.testing.assert_allclose(d.log_prob(t([far])).numpy(), [want], rtol=1e-6)
    # nearer in, as torch's
    v = np.array([[0.0], [1e-3], [0.7], [-30.0], [1e5]], dtype=dtype)
    for name, args in [("Cauchy", ([0.5, -1.0], [2.0, 0.3])),
                       ("StudentT", ([0.5, 3.0], [0.5, -1.0], [2.0, 0.3]))]:
        ours = getattr(D, name)(*[t(a) for a in args]).log_prob(t(v))
        theirs = getattr(TD, name)(*[torch.tensor(np.array(a, dtype=dtype)) for a in args])
        np.testing.assert_allclose(ours.numpy(), theirs.log_prob(torch.tensor(v)).numpy(),
                                   rtol=1e-5)


@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_kumaraswamy_log_prob_in_closed_form(dtype):
    # through the transforms 1 - x^a rounded to 1, the base Uniform's edge: -inf below
    # x = 1e-8 (float64) or 1e-4 (float32) for a = 2, as PyTorch's
    a, b = np.array([[0.5], [1.0], [2.5]], dtype=dtype), np.array([0.5, 1.0, 3.0], dtype=dtype)
    ours = D.Kumaraswamy(ember.tensor(a), ember.tensor(b), validate_args=False)
    theirs = TD.Kumaraswamy(torch.tensor(a), torch.tensor(b), validate_args=False)
    x = np.array([[[0.01]], [[0.3]], [[0.9]]], dtype=dtype)
    np.testing.assert_allclose(ours.log_prob(ember.tensor(x)).numpy(),
                               theirs.log_prob(torch.tensor(x)).numpy(), rtol=1e-5)
    tiny = 1e-30 if dtype == "float32" else 1e-200
    d = D.Kumaraswamy(ember.tensor(np.array(2.0, dtype=dtype)),
                      ember.tensor(np.array(3.0, dtype=dtype)))
    np.testing.assert_allclose(d.log_prob(ember.tensor(np.array([tiny], dtype=dtype))).numpy(),
                               [math.log(6) + math.log(tiny)], rtol=1e-6)
    # outside [0, 1] -inf, NaN stays NaN (PyTorch: NaN, or a number for an even power)
    edge = ours.log_prob(ember.tensor(np.array([[[-0.5]], [[1.5]], [[math.nan]]], dtype=dtype)))
    assert np.isneginf(edge.numpy()[:2]).all() and np.isnan(edge.numpy()[2]).all()


@pytest.mark.parametrize("call", [
    lambda m, dt: m.distributions.HalfNormal(dt(2.0)).icdf(prob=dt([0.3])),
    lambda m, dt: m.distributions.HalfCauchy(dt(2.0)).icdf(prob=dt([0.3])),
    lambda m, dt: m.distributions.MixtureSameFamily(
        m.distributions.Categorical(dt([0.3, 0.7])),
        m.distributions.Normal(dt([0.0, 1.0]), dt([1.0, 2.0]))).log_prob(x=dt([0.5])),
    lambda m, dt: m.distributions.MixtureSameFamily(
        m.distributions.Categorical(dt([0.3, 0.7])),
        m.distributions.Normal(dt([0.0, 1.0]), dt([1.0, 2.0]))).cdf(x=dt([0.5])),
    lambda m, dt: m.distributions.constraints.independent(
        base_constraint=m.distributions.constraints.positive,
        reinterpreted_batch_ndims=1).check(dt([[1.0, -1.0]])),
    lambda m, dt: m.distributions.constraints.multinomial(3).check(x=dt([1.0, 2.0])),
])
def test_argument_names_as_torch(call):
    # keyword calls written for PyTorch raised TypeError (value / base for these names)
    ours = call(ember, lambda v: ember.tensor(v, dtype=ember.float64))
    theirs = call(torch, lambda v: torch.tensor(v, dtype=torch.float64))
    np.testing.assert_allclose(ours.numpy(), theirs.numpy(), rtol=1e-12)


# entropies at c = 1e4 and 1e12 (Gamma(c, 1), Chi2(2c), StudentT(c), Beta(c, c)), from
# mpmath at 60 digits, where c + lgamma(c) + (1 - c) digamma(c) and its kin cancel
_LARGE_ENTROPY = {1e4: [6.024075385026086, 6.717222565586032, 1.419038535704506,
                        -4.225977424873357],
                  1e12: [15.234449091168614, 15.927596271728559, 1.4189385332056728,
                         -13.436292795599769]}


def _entropy_cases(dtype):
    def t(x):
        return ember.tensor(np.array(x, dtype=dtype))
    big = 1e4 if dtype == "float32" else 1e12
    dists = [D.Gamma(t([big]), t([1.0])), D.Chi2(t([2 * big])), D.StudentT(t([big])),
             D.Beta(t([big]), t([big]))]
    return zip(dists, _LARGE_ENTROPY[big])


@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_entropy_at_large_parameters(dtype):
    # PyTorch's forms (ours before): 1e-3 off in float32 at 1e4, 5e-4 (StudentT) and 2.5e-4
    # (Gamma) in float64 at 1e12
    for d, want in _entropy_cases(dtype):
        np.testing.assert_allclose(d.entropy().numpy(), [want],
                                   rtol=2e-6 if dtype == "float32" else 1e-12)


@pytest.mark.parametrize("name", ["Gamma", "InverseGamma", "Beta", "StudentT", "Chi2"])
def test_entropy_as_torch_across_the_switch(name):
    # the series takes over at 16: values and slopes on both sides agree with torch's forms
    c = np.array([1e-3, 0.3, 1.0, 2.5, 15.9, 16.0, 16.1, 40.0])
    second = np.array([2.0, 0.5, 3.0, 1.0, 17.0, 0.2, 9.0, 16.0])

    def build(lib, x, y):
        d = lib.distributions
        return {"Gamma": lambda: d.Gamma(x, y), "InverseGamma": lambda: d.InverseGamma(x, y),
                "Beta": lambda: d.Beta(x, y), "StudentT": lambda: d.StudentT(x, 0.0, y),
                "Chi2": lambda: d.Chi2(x)}[name]()
    x, y = (ember.tensor(a, requires_grad=True) for a in (c, second))
    tx, ty = (torch.tensor(a, requires_grad=True) for a in (c, second))
    ours, theirs = build(ember, x, y).entropy(), build(torch, tx, ty).entropy()
    np.testing.assert_allclose(ours.detach().numpy(), theirs.detach().numpy(), rtol=1e-11,
                               atol=1e-12)
    grads = ember.autograd.grad(ours.sum(), [x, y], allow_unused=True)
    tgrads = torch.autograd.grad(theirs.sum(), [tx, ty], allow_unused=True)
    for g, tg in zip(grads, tgrads):
        if tg is not None:
            np.testing.assert_allclose(g.numpy(), tg.numpy(), rtol=1e-7, atol=1e-12)


def test_dirichlet_entropy_at_large_concentrations():
    c = np.array([[1e12, 1e12, 1e12], [0.5, 2.0, 30.0]])
    got = D.Dirichlet(ember.tensor(c)).entropy().numpy()
    np.testing.assert_allclose(got[0], -27.539674771190032, rtol=1e-12)  # (mpmath)
    theirs = torch.distributions.Dirichlet(torch.tensor(c[1])).entropy().numpy()
    np.testing.assert_allclose(got[1], theirs, rtol=1e-12)
