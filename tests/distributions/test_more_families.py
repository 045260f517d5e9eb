"""MixtureSameFamily, the straight-through and relaxed families, Multinomial, NegativeBinomial,
Wishart, LKJCholesky and the low-rank normal's KL pairs: what the shared table does not cover
(gradients of log_prob and entropy against torch, edge cases, validation errors)."""

import numpy as np
import pytest
import torch

import ember
import ember.distributions as D
from ember.autograd.gradcheck import gradcheck

from .cases import CASES, E, T, build, close, torch_class, values

rng = np.random.default_rng(5)
TD = torch.distributions

NEW = ["NegativeBinomialProbs", "NegativeBinomialLogits", "MultinomialProbs",
       "MultinomialLogits", "OneHotCategoricalST", "LowRankMVN", "RelaxedBernoulli",
       "LogitRelaxedBernoulli", "RelaxedOneHotCategorical", "ExpRelaxedCategorical",
       "WishartCov", "WishartScaleTril", "LKJCholesky"]


def _torch_leaves(name):
    cls, params, _ = CASES[name]
    leaves = {k: T(v).requires_grad_(k != "total_count") for k, v in params.items()
              if isinstance(v, np.ndarray)}
    plain = {k: v for k, v in params.items() if not isinstance(v, np.ndarray)}
    return torch_class(cls)(**leaves, **plain), leaves


@pytest.mark.parametrize("name", NEW)
def test_log_prob_and_entropy_gradients_match_torch(name):
    d, _, params = build(name, requires_grad=True)
    t, leaves = _torch_leaves(name)
    v = values(name)
    outputs = [(d.log_prob(E(v)).sum(), t.log_prob(T(v)).sum())]
    try:
        outputs.append((None, t.entropy().sum()))
    except NotImplementedError:
        pass
    else:
        outputs[-1] = (d.entropy().sum(), outputs[-1][1])
    names = [k for k, p in params.items() if isinstance(p, ember.Tensor) and p.requires_grad]
    for got, want in outputs:
        close(got, want)
        egrads = ember.autograd.grad(got, [params[k] for k in names], retain_graph=True,
                                     allow_unused=True)
        tgrads = torch.autograd.grad(want, [leaves[k] for k in names], retain_graph=True,
                                     allow_unused=True)
        for k, a, b in zip(names, egrads, tgrads):
            if a is None or b is None:  # e.g. the entropy does not depend on loc
                assert a is None and b is None, k
                continue
            if k == "scale_tril":  # only the lower triangle is read (torch's gradient leaks
                a, b = a.tril(), b.tril()  # into the upper one)
            close(a, b, rtol=1e-6, atol=1e-8)


MIXTURE = [np.array([[0.3, -0.2, 1.0], [0.0, 0.5, -1.0]]), rng.normal(size=(2, 3)),
           rng.uniform(0.5, 2.0, (2, 3)), rng.normal(size=(2, 3, 4)),
           rng.uniform(0.5, 2, (2, 3, 4))]


def _mixtures(lib, conv):
    logits, loc, scale, vec_loc, vec_scale = (conv(a) for a in MIXTURE)
    lib_d = lib.distributions
    return [
        lib_d.MixtureSameFamily(lib_d.Categorical(logits=logits), lib_d.Normal(loc, scale)),
        lib_d.MixtureSameFamily(lib_d.Categorical(logits=logits),
                                lib_d.Independent(lib_d.Normal(vec_loc, vec_scale), 1)),
        lib_d.MixtureSameFamily(lib_d.Categorical(logits=logits[0]), lib_d.Normal(loc, scale)),
    ]


def test_mixture_same_family_against_torch():
    mine, theirs = _mixtures(ember, E), _mixtures(torch, T)
    for d, t in zip(mine, theirs):
        assert d.batch_shape == tuple(t.batch_shape) and d.event_shape == tuple(t.event_shape)
        v = rng.normal(size=(5,) + d.batch_shape + d.event_shape)
        close(d.log_prob(E(v)), t.log_prob(T(v)))
        close(d.mean, t.mean)
        close(d.variance, t.variance)
        # torch cannot sample the third (a mixture batch shorter than the components')
        assert d.sample((7,)).shape == (7,) + d.batch_shape + d.event_shape
        assert not d.has_rsample
        de, te = d.expand((4,) + d.batch_shape), t.expand((4,) + t.batch_shape)
        close(de.log_prob(E(v[:1])), te.log_prob(T(v[:1])))
        assert de.sample().shape == de.batch_shape + de.event_shape
        assert repr(d.support).startswith("MixtureSameFamilyConstraint(")
    v = rng.normal(size=(5, 2))
    close(mine[0].cdf(E(v)), theirs[0].cdf(T(v)))


def test_mixture_same_family_gradcheck_and_moments():
    x = E(rng.normal(size=(4, 2)))

    def log_prob(logits, loc, scale):
        components = D.Independent(D.Normal(loc, scale), 1)
        return D.MixtureSameFamily(D.Categorical(logits=logits), components).log_prob(x)

    args = (E(rng.normal(size=3)), E(rng.normal(size=(3, 2))), E(rng.uniform(0.5, 2, (3, 2))))
    assert gradcheck(log_prob, tuple(a.requires_grad_(True) for a in args))
    ember.manual_seed(0)
    d = _mixtures(ember, E)[1]
    n = 50_000
    s = d.sample((n,)).numpy()
    np.testing.assert_array_less(np.abs(s.mean(0) - d.mean.numpy()),
                                 6 * np.sqrt(d.variance.numpy() / n))
    np.testing.assert_allclose(s.var(0), d.variance.numpy(), rtol=0.05)


@pytest.mark.parametrize(("make", "words"), [
    (lambda: D.MixtureSameFamily(D.Normal(0.0, 1.0), D.Normal(ember.zeros(2), 1.0)),
     ["mixture_distribution", "Categorical", "Normal"]),
    (lambda: D.MixtureSameFamily(D.Categorical(logits=ember.zeros(3)),
                                 D.Normal(ember.zeros(2), 1.0)), ["3", "2", "components"]),
    (lambda: D.MixtureSameFamily(D.Categorical(logits=ember.zeros(4, 2)),
                                 D.Normal(ember.zeros(3, 2), 1.0)), ["Size([4])", "Size([3])"]),
    (lambda: D.Multinomial(2.0, probs=ember.ones(3)), ["Multinomial", "total_count"]),
    (lambda: D.Wishart(ember.tensor(0.5), covariance_matrix=ember.eye(2)), ["df", "1"]),
    (lambda: D.Wishart(3.0), ["Wishart", "exactly one"]),
    (lambda: D.LKJCholesky(1), ["LKJCholesky", "dim=1"]),
    (lambda: D.LowRankMultivariateNormal(ember.zeros(3), ember.ones(2, 1), ember.ones(3)),
     ["cov_factor", "(2, 1)"]),
    (lambda: D.LowRankMultivariateNormal(ember.zeros(3), ember.ones(3, 1), -ember.ones(3)),
     ["cov_diag", "GreaterThan"]),
    (lambda: D.NegativeBinomial(2.0, probs=ember.tensor(1.0)), ["NegativeBinomial", "probs"]),
    (lambda: D.NegativeBinomial(-1.0, probs=ember.tensor(0.5)), ["total_count"]),
    (lambda: D.RelaxedOneHotCategorical(ember.tensor(1.0), probs=ember.tensor([1.0, -1.0, 0.5])),
     ["probs"]),
    (lambda: D.LKJCholesky(3, ember.tensor(-1.0)), ["LKJCholesky", "concentration"]),
])
def test_construction_errors(make, words):
    with pytest.raises((ValueError, NotImplementedError, TypeError)) as err:
        make()
    for w in words:
        assert w in str(err.value)


def test_wishart_low_df_warns_and_moments_of_rsample():
    with pytest.warns(UserWarning, match="singular"):
        D.Wishart(ember.tensor(1.5), covariance_matrix=ember.eye(2))
    cov = E(np.array([[2.0, 0.3], [0.3, 1.0]]))
    df = ember.tensor(5.0, dtype=ember.float64, requires_grad=True)
    d = D.Wishart(df, precision_matrix=ember.linalg.inv(cov))
    t = TD.Wishart(torch.tensor(5.0, dtype=torch.float64), precision_matrix=torch.linalg.inv(T(
        cov.numpy())))
    close(d.covariance_matrix, t.covariance_matrix)
    ember.manual_seed(1)
    x = d.rsample((20_000,))
    x.mean(0)[0, 0].backward()  # E[X_00] = df * cov_00, so d/d df = cov_00
    assert abs(df.grad.item() - 2.0) < 0.1
    assert bool(d.support.check(x.detach()).all())


def test_wishart_redraws_singular_samples():
    ember.manual_seed(6)
    with pytest.warns(UserWarning):
        d = D.Wishart(ember.tensor(2.05), covariance_matrix=ember.eye(3) * 1e-3)
        x = d.rsample((300,))
    assert bool(d.support.check(x).all())


def test_lkj_cholesky_sample_is_a_correlation_factor():
    ember.manual_seed(2)
    d = D.LKJCholesky(4, ember.tensor([0.5, 3.0]))
    x = d.sample((100,))
    assert x.shape == (100, 2, 4, 4) and bool(d.support.check(x).all())
    corr = (x @ x.transpose(-2, -1)).numpy()
    np.testing.assert_allclose(np.diagonal(corr, 0, -2, -1), 1.0, atol=1e-5)
    assert d.expand((3, 2)).sample().shape == (3, 2, 4, 4)


@pytest.mark.parametrize("concentration", [0.5, 1.0, 3.0])
def test_lkj_cholesky_samples_have_the_lkj_marginal_in_every_entry(concentration):
    """Each off-diagonal correlation of LKJ(dim, eta) is 2 Beta(b, b) - 1, b = eta - 1 + dim/2,
    so of variance 1 / (2b + 1) in every entry (torch's sampler widens the rows below the
    second: at dim 4, eta 1, variance 0.25 in entry (0, 2) for 0.2)."""
    ember.manual_seed(5)
    dim, n = 5, 20000
    x = D.LKJCholesky(dim, ember.tensor(concentration, dtype=ember.float64)).sample((n,))
    corr = (x @ x.transpose(-2, -1)).numpy()
    b = concentration - 1 + dim / 2
    var = 1 / (2 * b + 1)
    se = var * np.sqrt(2 / n) * 1.5  # a Beta's fourth moment is below the normal's
    rows, cols = np.tril_indices(dim, -1)
    got = corr[:, rows, cols].var(0)
    np.testing.assert_allclose(got, var, atol=5 * se)
    np.testing.assert_allclose(corr[:, rows, cols].mean(0), 0.0, atol=5 * np.sqrt(var / n))


def test_straight_through_gradient_is_that_of_probs():
    logits = E(rng.normal(size=(2, 3)))
    w = rng.normal(size=(5, 2, 3))
    logits.requires_grad_(True)
    ember.manual_seed(3)
    sample = D.OneHotCategoricalStraightThrough(logits=logits).rsample((5,))
    (sample * E(w)).sum().backward()
    tl = T(logits.detach().numpy()).requires_grad_(True)
    (TD.OneHotCategoricalStraightThrough(logits=tl).probs * T(w)).sum().backward()
    close(logits.grad, tl.grad)
    assert bool(D.OneHotCategorical(logits=logits).support.check(sample.detach()).all())


def test_count_edge_cases_match_torch():
    zero = D.NegativeBinomial(ember.tensor([0.0, 2.0]), probs=ember.tensor([0.3, 0.0]))
    tzero = TD.NegativeBinomial(torch.tensor([0.0, 2.0]), probs=torch.tensor([0.3, 0.0]))
    v = ember.tensor([0.0, 0.0])
    close(zero.log_prob(v), tzero.log_prob(torch.tensor([0.0, 0.0])))
    assert zero.sample((3,)).sum().item() == 0
    probs = ember.tensor([0.5, 0.0, 0.5])
    counts = ember.tensor([2.0, 0.0, 1.0])
    close(D.Multinomial(3, probs=probs).log_prob(counts),
          TD.Multinomial(3, probs=torch.tensor([0.5, 0.0, 0.5])).log_prob(
              torch.tensor([2.0, 0.0, 1.0])), rtol=1e-5)
    ember.manual_seed(4)
    draws = D.Multinomial(7, logits=ember.zeros(2, 3)).sample((4,))
    assert draws.shape == (4, 2, 3) and bool((draws.sum(-1) == 7).all())


L1 = np.linalg.cholesky(np.array([[2.0, 0.3, 0.1], [0.3, 1.0, -0.2], [0.1, -0.2, 1.5]]))


def _gaussians(lib, conv, kind, seed):
    r = np.random.default_rng(seed)
    loc = conv(r.normal(size=(2, 3))).requires_grad_(True)
    if kind == "lowrank":  # torch's lowrank || full needs cov_factor batched like cov_diag
        w = conv(r.normal(size=(2, 3, 2))).requires_grad_(True)
        diag = conv(r.uniform(0.5, 2.0, (2, 3))).requires_grad_(True)
        return lib.distributions.LowRankMultivariateNormal(loc, w, diag), [loc, w, diag]
    tril = conv(L1).requires_grad_(True)
    return lib.distributions.MultivariateNormal(loc, scale_tril=tril), [loc, tril]


@pytest.mark.parametrize(("p", "q"), [("lowrank", "lowrank"), ("full", "lowrank"),
                                      ("lowrank", "full")])
def test_lowrank_kl_against_torch(p, q):
    results = []
    for lib, conv in ((ember, E), (torch, T)):
        dp, lp = _gaussians(lib, conv, p, 0)
        dq, lq = _gaussians(lib, conv, q, 1)
        kl = lib.distributions.kl_divergence(dp, dq)
        results.append([kl] + list(lib.autograd.grad(kl.sum(), lp + lq)))
    for got, want in zip(*results):
        close(got, want, rtol=1e-8, atol=1e-10)
    with pytest.raises(ValueError, match="event shapes"):
        D.kl_divergence(_gaussians(ember, E, p, 0)[0],
                        D.LowRankMultivariateNormal(ember.zeros(2), ember.ones(2, 1),
                                                    ember.ones(2)))


@pytest.mark.parametrize(("d", "value", "words"), [
    (D.Multinomial(3, probs=ember.ones(2)), ember.tensor([-1.0, 2.0]), ["Multinomial", "support"]),
    (D.LKJCholesky(2), ember.eye(2) * 2, ["LKJCholesky", "CorrCholesky"]),
    (D.Wishart(3.0, covariance_matrix=ember.eye(2)), -ember.eye(2), ["Wishart", "PositiveDef"]),
    (D.NegativeBinomial(2.0, logits=ember.tensor(0.0)), ember.tensor(0.5), ["NegativeBinomial"]),
    (D.MixtureSameFamily(D.Categorical(logits=ember.zeros(2)), D.Gamma(ember.ones(2), 1.0)),
     ember.tensor(-1.0), ["MixtureSameFamily", "MixtureSameFamilyConstraint"]),
])
def test_values_outside_the_support(d, value, words):
    with pytest.raises(ValueError) as err:
        d.log_prob(value)
    for w in words:
        assert w in str(err.value)


@pytest.mark.parametrize("make", [
    lambda **kw: D.Multinomial(2, **kw),
    lambda **kw: D.RelaxedBernoulli(ember.tensor(0.5), **kw),
    lambda **kw: D.LogitRelaxedBernoulli(ember.tensor(0.5), **kw),
    lambda **kw: D.ExpRelaxedCategorical(ember.tensor(0.5), **kw),
    lambda **kw: D.RelaxedOneHotCategorical(ember.tensor(0.5), **kw),
])
def test_validate_args_true_checks_parameters_with_the_global_switch_off(make):
    """An explicit validate_args=True checks probs even where the default is off (as torch)."""
    D.set_default_validate_args(False)
    try:
        make(probs=ember.tensor([0.5, 0.5]))
        with pytest.raises(ValueError, match="probs"):
            make(probs=ember.tensor([-0.5, 1.5]), validate_args=True)
    finally:
        D.set_default_validate_args(True)


def test_mixture_moments_with_a_partly_broadcast_mixture_batch():
    """Mixture batch (1, 2) against components' batch (4, 1, 2): the weights broadcast from the
    right (torch pads them in the middle and returns a (4, 2, 2) mean for a (4, 1, 2) batch)."""
    logits, loc = rng.normal(size=(1, 2, 3)), rng.normal(size=(4, 1, 2, 3))
    scale = rng.uniform(0.5, 2, (4, 1, 2, 3))
    d = D.MixtureSameFamily(D.Categorical(logits=E(logits)), D.Normal(E(loc), E(scale)))
    w = np.exp(logits) / np.exp(logits).sum(-1, keepdims=True)
    mean = (w * loc).sum(-1)
    assert d.batch_shape == (4, 1, 2)
    close(d.mean, mean)
    close(d.variance, (w * (scale ** 2 + (loc - mean[..., None]) ** 2)).sum(-1))


def test_straight_through_repr_and_zero_count_multinomial():
    d = D.OneHotCategoricalStraightThrough(probs=ember.tensor([0.2, 0.8]))
    assert repr(d).startswith("OneHotCategoricalStraightThrough(")
    zero = D.Multinomial(0, probs=ember.tensor([[0.2, 0.8]]))  # torch's multinomial raises here
    assert zero.sample((3,)).shape == (3, 1, 2) and zero.sample().sum().item() == 0
    assert D.Categorical(probs=ember.tensor([0.2, 0.8])).sample((0, 2)).shape == (0, 2)


@pytest.mark.parametrize(("mixture_batch", "component_batch"), [((3,), (1,)), ((3, 1), (2,))])
def test_mixture_batch_broadcasts_over_the_components(mixture_batch, component_batch):
    """The batch shape is the broadcast of both (torch keeps the components' and then returns
    log_prob of another shape and cannot sample)."""
    logits = E(rng.normal(size=mixture_batch + (4,)))
    d = D.MixtureSameFamily(D.Categorical(logits=logits),
                            D.Normal(E(rng.normal(size=component_batch + (4,))), 1.0))
    batch = np.broadcast_shapes(mixture_batch, component_batch)
    assert d.batch_shape == batch
    assert d.log_prob(ember.zeros(batch)).shape == batch and d.mean.shape == batch
    assert d.sample((2,)).shape == (2,) + batch
