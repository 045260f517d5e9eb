"""ExponentialFamily: membership as torch's, the Bregman entropy and KL against the closed
forms and torch's, and their gradients."""

import numpy as np
import pytest
import torch
import torch.distributions as TD

import ember
import ember.distributions as ED
from ember.autograd.gradcheck import gradcheck

R = np.random.default_rng(0)
POS = R.uniform(0.5, 2.0, size=(2, 3)).tolist()
POS2 = R.uniform(0.5, 2.0, size=(2, 3)).tolist()
PROB = R.uniform(0.1, 0.9, size=(2, 3)).tolist()
A = (R.standard_normal((2, 3, 3)) * 0.3 + 2 * np.eye(3)).tolist()

# (name, constructor args as nested lists); Chi2 via Gamma's parameters
FAMILIES = [("Bernoulli", (PROB,)), ("Normal", (PROB, POS)), ("Exponential", (POS,)),
            ("Gamma", (POS, POS2)), ("Chi2", (POS,)), ("Beta", (POS, POS2)),
            ("Dirichlet", (POS,)), ("ContinuousBernoulli", (PROB,)), ("Poisson", (POS,)),
            ("Wishart", ([4.0, 5.0], A))]


def _make(lib, name, args, dtype):
    mod = ED if lib is ember else TD
    tensors = [lib.tensor(a, dtype=dtype) if isinstance(a, list) else a for a in args]
    if name == "Wishart":
        m = tensors[1]
        return mod.Wishart(df=tensors[0], covariance_matrix=m @ m.mT)
    return getattr(mod, name)(*tensors)


def test_members_are_torchs():
    torch_members = {c.__name__ for c in TD.ExponentialFamily.__subclasses__()} | {"Chi2"}
    for name in dir(ED):
        cls = getattr(ED, name)
        if isinstance(cls, type) and issubclass(cls, ED.Distribution) and hasattr(TD, name):
            assert issubclass(cls, ED.ExponentialFamily) == \
                issubclass(getattr(TD, name), TD.ExponentialFamily), name
    assert torch_members <= {n for n in dir(ED) if isinstance(getattr(ED, n), type)
                             and issubclass(getattr(ED, n), ED.ExponentialFamily)}


@pytest.mark.parametrize("name,args", FAMILIES, ids=[f[0] for f in FAMILIES])
def test_bregman_entropy_matches_torch(name, args):
    mine = _make(ember, name, args, ember.float64)
    ref = _make(torch, name, args, torch.float64)
    if name in ("Poisson", "Beta", "Dirichlet"):  # no carrier measure, in torch neither
        with pytest.raises(NotImplementedError):
            TD.ExponentialFamily.entropy(ref)
        with pytest.raises(NotImplementedError, match="not implement entropy: its _mean_carrier"):
            ED.ExponentialFamily.entropy(mine)
        return
    got = ED.ExponentialFamily.entropy(mine).detach().numpy()
    np.testing.assert_allclose(got, TD.ExponentialFamily.entropy(ref).detach().numpy(),
                               rtol=1e-9, atol=1e-10)
    np.testing.assert_allclose(got, mine.entropy().numpy(), rtol=1e-9, atol=1e-10)


@pytest.mark.parametrize("name,args", FAMILIES[:-1], ids=[f[0] for f in FAMILIES[:-1]])
def test_bregman_kl_matches_torch(name, args):
    other = tuple(POS2 if a is POS else POS if a is POS2 else
                  (1 - np.asarray(a)).tolist() if a is PROB else a for a in args)
    p, q = _make(ember, name, args, ember.float64), _make(ember, name, other, ember.float64)
    tp, tq = _make(torch, name, args, torch.float64), _make(torch, name, other, torch.float64)
    want = TD.kl._kl_expfamily_expfamily(tp, tq).detach().numpy()
    np.testing.assert_allclose(p._bregman_kl(q).detach().numpy(), want, rtol=1e-8, atol=1e-10)
    np.testing.assert_allclose(ED.kl_divergence(p, q).detach().numpy(), want, rtol=1e-8, atol=1e-10)


def test_bregman_kl_passes_gradients_to_both_sides():
    """torch differentiates a detached copy of θ_p (no gradient reaches p's parameters); here
    both sides match the gradients of torch's closed-form Poisson KL."""
    rate_p = ember.tensor([0.5, 2.0], dtype=ember.float64, requires_grad=True)
    rate_q = ember.tensor([1.5, 0.4], dtype=ember.float64, requires_grad=True)
    assert gradcheck(lambda a, b: ED.Poisson(a)._bregman_kl(ED.Poisson(b)), (rate_p, rate_q))
    kl = ED.Poisson(rate_p)._bregman_kl(ED.Poisson(rate_q)).sum()
    g_p, g_q = ember.autograd.grad(kl, [rate_p, rate_q])
    t_p = torch.tensor([0.5, 2.0], dtype=torch.float64, requires_grad=True)
    t_q = torch.tensor([1.5, 0.4], dtype=torch.float64, requires_grad=True)
    tg_p, tg_q = torch.autograd.grad(TD.kl_divergence(TD.Poisson(t_p), TD.Poisson(t_q)).sum(),
                                     [t_p, t_q])
    np.testing.assert_allclose(g_p.numpy(), tg_p.numpy(), rtol=1e-10)
    np.testing.assert_allclose(g_q.numpy(), tg_q.numpy(), rtol=1e-10)


def test_bregman_entropy_passes_gradients_as_the_closed_form():
    scale = ember.tensor([0.5, 2.0], dtype=ember.float64, requires_grad=True)
    got = ember.autograd.grad(ED.ExponentialFamily.entropy(ED.Normal(0.0, scale)).sum(), [scale])
    want = ember.autograd.grad(ED.Normal(0.0, scale).entropy().sum(), [scale])
    np.testing.assert_allclose(got[0].numpy(), want[0].numpy(), rtol=1e-10)


def _wishart(df, cov):
    return ED.Wishart(df, covariance_matrix=cov)


def test_wishart_kl_passes_gradients_to_p():
    """kl_divergence(Wishart, Wishart) takes the Bregman path (torch's gives p's df and
    covariance no gradient)."""
    cov_q = ember.tensor([[2.0, 0.3], [0.3, 1.0]], dtype=ember.float64)
    df_p = ember.tensor([3.0, 5.5], dtype=ember.float64, requires_grad=True)
    df_q = ember.tensor(4.0, dtype=ember.float64, requires_grad=True)
    assert gradcheck(lambda a, b: ED.kl_divergence(_wishart(a, ember.eye(2, dtype=ember.float64)),
                                                   _wishart(b, cov_q)), (df_p, df_q))
    root = ember.tensor([[1.2, 0.0], [0.4, 0.8]], dtype=ember.float64, requires_grad=True)
    assert gradcheck(lambda r: ED.kl_divergence(_wishart(df_p.detach(), r @ r.mT),
                                                _wishart(df_q.detach(), cov_q)), (root,))


def test_bregman_results_carry_no_graph_without_a_parameter_that_needs_one():
    p = _wishart(ember.tensor(3.0, dtype=ember.float64), ember.eye(2, dtype=ember.float64))
    q = _wishart(ember.tensor(4.0, dtype=ember.float64), 2 * ember.eye(2, dtype=ember.float64))
    kl = ED.kl_divergence(p, q)
    assert not kl.requires_grad and not ED.ExponentialFamily.entropy(p).requires_grad
    want = TD.kl_divergence(
        TD.Wishart(torch.tensor(3.0, dtype=torch.float64), torch.eye(2, dtype=torch.float64)),
        TD.Wishart(torch.tensor(4.0, dtype=torch.float64), 2 * torch.eye(2, dtype=torch.float64)))
    np.testing.assert_allclose(kl.numpy(), want.detach().numpy(), rtol=1e-10)
    df = ember.tensor(3.0, dtype=ember.float64, requires_grad=True)
    with ember.no_grad():  # torch's raises here (its grad finds no graph)
        inside = ED.kl_divergence(_wishart(df, ember.eye(2, dtype=ember.float64)), q)
    assert not inside.requires_grad
    np.testing.assert_allclose(inside.numpy(), kl.numpy(), rtol=1e-12)


def test_cross_family_kl_refused():
    with pytest.raises(NotImplementedError, match="different exponential families"):
        ED.kl_divergence(ED.Poisson(ember.tensor(1.0)), ED.Exponential(ember.tensor(1.0)))


def test_func_grad_of_a_bregman_result_carries_no_graph():
    """The constant θ's tracked copy was a new leaf that an outer func.grad took as an input
    of its own: its gradient kept a graph (``.numpy()`` raised)."""
    f64, ones = ember.float64, ember.ones(2, dtype=ember.float64)
    loc = ember.tensor([0.3, -1.0], dtype=f64)
    rate = ember.tensor([0.5, 2.0], dtype=f64)
    cases = [  # (function, input, gradient wanted)
        (lambda m: ED.ExponentialFamily.entropy(ED.Normal(m, ones)).sum() + m.sum(), loc, ones),
        (lambda m: ED.Normal(m, ones)._bregman_kl(ED.Normal(0 * ones, ones)).sum(), loc, loc),
        (lambda r: ED.Poisson(rate)._bregman_kl(ED.Poisson(r)).sum(), 2 * rate, 0.5 * ones)]
    for fn, x, want in cases:
        g = ember.func.grad(fn)(x)
        assert not g.requires_grad and g.grad_fn is None
        np.testing.assert_allclose(g.numpy(), want.numpy(), rtol=1e-12)
    q = _wishart(ember.tensor(4.0, dtype=f64), 2 * ember.eye(2, dtype=f64))
    dfs = ember.tensor([3.0, 5.5], dtype=f64)
    g = ember.func.vmap(ember.func.grad(
        lambda d: ED.kl_divergence(_wishart(d, ember.eye(2, dtype=f64)), q)))(dfs)
    assert not g.requires_grad
    eps = 1e-6
    fd = [(ED.kl_divergence(_wishart(ember.tensor(d + eps, dtype=f64), ember.eye(2, dtype=f64)), q)
           - ED.kl_divergence(_wishart(ember.tensor(d - eps, dtype=f64), ember.eye(2, dtype=f64)),
                              q)).item() / (2 * eps) for d in (3.0, 5.5)]
    np.testing.assert_allclose(g.numpy(), fd, rtol=1e-6)


def test_bregman_results_under_inference_mode():
    """As under no_grad (torch's raise in both); before, the inference tensors could not be
    tracked and autograd.grad raised about no_grad."""
    f64 = ember.float64
    scale = ember.tensor([0.5, 2.0], dtype=f64)
    want_kl = ED.kl_divergence(_wishart(ember.tensor(3.0, dtype=f64), ember.eye(2, dtype=f64)),
                               _wishart(ember.tensor(4.0, dtype=f64), 2 * ember.eye(2, dtype=f64)))
    with ember.inference_mode():
        kl = ED.kl_divergence(_wishart(ember.tensor(3.0, dtype=f64), ember.eye(2, dtype=f64)),
                              _wishart(ember.tensor(4.0, dtype=f64), 2 * ember.eye(2, dtype=f64)))
        entropy = ED.ExponentialFamily.entropy(ED.Normal(0.0, scale))
    assert not kl.requires_grad and not entropy.requires_grad
    np.testing.assert_allclose(kl.numpy(), want_kl.numpy(), rtol=1e-12)
    np.testing.assert_allclose(entropy.numpy(), ED.Normal(0.0, scale).entropy().numpy(),
                               rtol=1e-12)
