"""Differences the sweep50dist sweep found against torch.distributions 2.13."""

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
