"""kl_divergence against torch for the registered pairs; transforms and
TransformedDistribution against torch."""

import numpy as np
import pytest
import torch
import torch.distributions.transforms as TT

import ember
import ember.distributions as D
import ember.distributions.transforms as ET

from .cases import E, T, close, pos, unit

rng = np.random.default_rng(7)


L1 = np.linalg.cholesky(np.array([[2.0, 0.3], [0.3, 1.0]]))
L2 = np.linalg.cholesky(np.array([[1.0, -0.2], [-0.2, 0.5]]))
PAIRS = [
    ("Normal", [rng.normal(size=3), pos(3)], [rng.normal(size=3), pos(3)]),
    ("Laplace", [rng.normal(size=3), pos(3)], [rng.normal(size=3), pos(3)]),
    ("Exponential", [pos(3)], [pos(3)]),
    ("Gamma", [pos(3), pos(3)], [pos(3), pos(3)]),
    ("Beta", [pos(3), pos(3)], [pos(3), pos(3)]),
    ("Dirichlet", [pos(2, 4)], [pos(2, 4)]),
    ("Poisson", [pos(3)], [pos(3)]),
    ("Bernoulli", [unit(3)], [unit(3)]),
    ("Geometric", [unit(3)], [unit(3)]),
    ("Categorical", [pos(3, 4)], [pos(3, 4)]),
    ("OneHotCategorical", [pos(3, 4)], [pos(3, 4)]),
    ("Binomial", [np.full(3, 6.0), unit(3)], [np.full(3, 6.0), unit(3)]),
    ("Uniform", [np.zeros(3), np.ones(3)], [-pos(3), 1 + pos(3)]),
    ("LogNormal", [rng.normal(size=3), pos(3)], [rng.normal(size=3), pos(3)]),
    ("MultivariateNormal", [rng.normal(size=(3, 2)), L1], [rng.normal(size=2), L2]),
    ("InverseGamma", [pos(3), pos(3)], [pos(3), pos(3)]),  # through the base Gammas
    ("HalfCauchy", [pos(3)], [pos(3)]),
    ("LogisticNormal", [rng.normal(size=3), pos(3)], [rng.normal(size=3), pos(3)]),
]


@pytest.mark.parametrize(("name", "p", "q"), PAIRS, ids=[p[0] for p in PAIRS])
def test_kl_against_torch(name, p, q):
    def make(lib, conv, args):
        cls = getattr(lib, name)
        args = [conv(a) for a in args]
        if name == "MultivariateNormal":
            return cls(args[0], scale_tril=args[1])
        return cls(*args)

    got = D.kl_divergence(make(D, E, p), make(D, E, q))
    want = torch.distributions.kl_divergence(make(torch.distributions, T, p),
                                             make(torch.distributions, T, q))
    close(got, want)


def test_kl_special_cases():
    close(D.kl_divergence(D.Uniform(0.0, 2.0), D.Normal(0.5, 1.5)),
          torch.distributions.kl_divergence(torch.distributions.Uniform(0.0, 2.0),
                                            torch.distributions.Normal(0.5, 1.5)), rtol=1e-5)
    assert D.kl_divergence(D.Uniform(0.0, 2.0), D.Uniform(0.5, 3.0)).item() == float("inf")
    base_p = D.Normal(ember.zeros(2, 3), ember.ones(2, 3))
    base_q = D.Normal(ember.ones(2, 3), 2 * ember.ones(2, 3))
    kl = D.kl_divergence(D.Independent(base_p, 1), D.Independent(base_q, 1))
    close(kl, D.kl_divergence(base_p, base_q).sum(-1))
    with pytest.raises(NotImplementedError, match=r"Normal \|\| Poisson.*register_kl"):
        D.kl_divergence(D.Normal(0.0, 1.0), D.Poisson(1.0))


def test_register_kl_most_specific_wins():
    class MyNormal(D.Normal):
        pass

    assert D.kl_divergence(MyNormal(0.0, 1.0), D.Normal(1.0, 1.0)).item() == pytest.approx(0.5)

    @D.register_kl(MyNormal, D.Normal)
    def _mine(p, q):
        return ember.tensor(42.0)

    assert D.kl_divergence(MyNormal(0.0, 1.0), D.Normal(1.0, 1.0)).item() == 42.0
    assert D.kl_divergence(D.Normal(0.0, 1.0), D.Normal(1.0, 1.0)).item() == pytest.approx(0.5)
    with pytest.raises(TypeError):
        D.register_kl(int, D.Normal)


@pytest.mark.parametrize("i", range(4))
def test_transforms_against_torch(i):
    loc, scale = rng.normal(size=3), -pos(3)
    ours = [ET.AffineTransform(E(loc), E(scale)), ET.ExpTransform(), ET.SigmoidTransform(),
            ET.TanhTransform()][i]
    theirs = [TT.AffineTransform(T(loc), T(scale)), TT.ExpTransform(), TT.SigmoidTransform(),
              TT.TanhTransform()][i]
    x = rng.normal(size=(4, 3))
    y = ours(E(x))
    close(y, theirs(T(x)))
    close(ours.inv(y), x, rtol=1e-6)
    close(ours.log_abs_det_jacobian(E(x), y), theirs.log_abs_det_jacobian(T(x), theirs(T(x))))
    close(ours.inv.log_abs_det_jacobian(y, E(x)), -ours.log_abs_det_jacobian(E(x), y))


def test_compose_and_transformed_distribution():
    loc, scale = rng.normal(size=3), pos(3)
    base_e, base_t = D.Normal(E(loc), E(scale)), torch.distributions.Normal(T(loc), T(scale))
    ours = D.TransformedDistribution(base_e, [ET.AffineTransform(1.0, -2.0),
                                              ET.SigmoidTransform()])
    theirs = torch.distributions.TransformedDistribution(
        base_t, [TT.AffineTransform(1.0, -2.0), TT.SigmoidTransform()])
    v = unit(5, 3)
    close(ours.log_prob(E(v)), theirs.log_prob(T(v)))
    close(ours.cdf(E(v)), theirs.cdf(T(v)))
    close(ours.icdf(E(v)), theirs.icdf(T(v)))
    assert ours.batch_shape == (3,) and ours.event_shape == ()
    assert ours.sample((2,)).shape == (2, 3) and ours.has_rsample
    assert ours.expand((4, 3)).log_prob(E(v[:1])).shape == (4, 3)
    compose = ET.ComposeTransform([ET.AffineTransform(0.0, 2.0), ET.ExpTransform()])
    x = E(rng.normal(size=3))
    close(compose.log_abs_det_jacobian(x, compose(x)), np.log(2.0) + 2 * x.numpy())
    close(compose.inv(compose(x)), x)


def test_vector_transform_on_scalar_base_reinterprets_batch():
    d = D.TransformedDistribution(D.Normal(ember.zeros(2, 3), 1.0),
                                  ET.AffineTransform(0.0, ember.ones(3) * 2, event_dim=1))
    t = torch.distributions.TransformedDistribution(
        torch.distributions.Normal(torch.zeros(2, 3), 1.0),
        TT.AffineTransform(0.0, torch.ones(3) * 2, event_dim=1))
    assert d.batch_shape == tuple(t.batch_shape) and d.event_shape == tuple(t.event_shape)
    v = rng.normal(size=(2, 3))
    close(d.log_prob(E(v).float()), t.log_prob(T(v).float()), rtol=1e-5)


def test_squashed_gaussian_uses_cache():
    """A tanh-squashed policy: log_prob of its own samples needs the cached pre-image."""
    mu = ember.zeros(3, dtype=ember.float64, requires_grad=True)
    d = D.TransformedDistribution(D.Normal(mu, 5.0), [ET.TanhTransform(cache_size=1)])
    ember.manual_seed(0)
    a = d.rsample()
    lp = d.log_prob(a)
    assert bool(ember.isfinite(lp).all())
    lp.sum().backward()
    assert mu.grad is not None and bool(ember.isfinite(mu.grad).all())


def test_kl_binomial_unequal_counts():
    """As PyTorch: infinite where p has more trials than q, no closed form for fewer."""
    p = D.Binomial(ember.tensor([6.0, 5.0]), probs=ember.tensor([0.2, 0.3]))
    q = D.Binomial(ember.tensor([5.0, 5.0]), probs=ember.tensor([0.3, 0.3]))
    kl = D.kl_divergence(p, q)
    assert kl[0].item() == float("inf") and kl[1].item() == pytest.approx(0.0, abs=1e-6)
    with pytest.raises(NotImplementedError, match="total_count"):
        D.kl_divergence(q, p)


def test_sigmoid_keeps_tiny_outputs():
    x = ember.tensor([-40.0, 40.0])
    close(ET.SigmoidTransform()(x), TT.SigmoidTransform()(T(x.numpy())))


def test_with_cache_of_inverse_and_composed_transforms():
    x = ember.tensor([20.0, 0.5])  # tanh(20) rounds to 1: only the cache can invert it
    compose = ET.ComposeTransform([ET.AffineTransform(0.0, 2.0), ET.TanhTransform()])
    cached = compose.with_cache(1)
    assert cached.inv(cached(x)) is x
    atanh = ET.TanhTransform().inv.with_cache(1)
    y = ember.tensor([0.5, 0.2])
    assert atanh.inv(atanh(y)) is y


def test_transform_parameters_broadcast_the_base():
    """An affine map with a bigger batch than the base's expands the base, as PyTorch."""
    def make(lib, conv):
        return lib.TransformedDistribution(lib.Normal(conv(np.zeros(3)), 1.0),
                                           lib.transforms.AffineTransform(conv(np.ones((2, 1))),
                                                                          2.0))

    d, t = make(D, E), make(torch.distributions, T)
    assert d.batch_shape == tuple(t.batch_shape) == (2, 3)
    assert d.sample((4,)).shape == d.rsample((4,)).shape == (4, 2, 3)
    assert d.base_dist.batch_shape == tuple(t.base_dist.batch_shape)
    v = rng.normal(size=(4, 2, 3))
    close(d.log_prob(E(v)), t.log_prob(T(v)))
