"""``ember.special.gammainc`` / ``gammaincc`` (the ``igamma`` / ``igammac`` ops under
torch.special's names) and their consumers ``Gamma.cdf`` and ``Chi2``, against torch."""

import numpy as np
import pytest
import torch

import ember
import ember.distributions as D

rng = np.random.default_rng(3)
A = rng.uniform(0.3, 8.0, 6)
X = rng.uniform(0.1, 12.0, 6)


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("name", ["gammainc", "gammaincc"])
def test_gammainc_value_and_grad(name, dtype):
    a_e = ember.tensor(A, dtype=getattr(ember, dtype))
    x_e = ember.tensor(X, dtype=getattr(ember, dtype), requires_grad=True)
    a_t = torch.tensor(A, dtype=getattr(torch, dtype))
    x_t = torch.tensor(X, dtype=getattr(torch, dtype), requires_grad=True)
    got, want = getattr(ember.special, name)(a_e, x_e), getattr(torch.special, name)(a_t, x_t)
    got.sum().backward()
    want.sum().backward()
    rtol = 1e-5 if dtype == "float32" else 1e-12
    assert got.dtype == getattr(ember, dtype)
    np.testing.assert_allclose(got.detach().numpy(), want.detach().numpy(), rtol=rtol)
    np.testing.assert_allclose(x_e.grad.numpy(), x_t.grad.numpy(), rtol=rtol)


def test_gammainc_names_and_errors():
    assert ember.special.gammainc is ember.igamma and ember.special.gammaincc is ember.igammac
    with pytest.raises(TypeError, match="two tensors"):
        ember.special.gammainc(ember.tensor([1.0]), 2.0)


@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_gamma_cdf_and_chi2_against_torch(dtype):
    conc, rate, df = A[:3], X[:3] / 4, A[3:]
    value = rng.uniform(0.1, 5.0, (2, 3))
    results = []
    for lib in (ember, torch):
        dt = getattr(lib, dtype)
        r = lib.tensor(rate, dtype=dt, requires_grad=True)
        v = lib.tensor(value, dtype=dt, requires_grad=True)
        gamma = lib.distributions.Gamma(lib.tensor(conc, dtype=dt), r)
        chi2 = lib.distributions.Chi2(lib.tensor(df, dtype=dt))
        cdf = gamma.cdf(v)
        cdf.sum().backward()
        results.append([cdf, r.grad, v.grad, chi2.cdf(v), chi2.df, chi2.mean, chi2.variance,
                        chi2.log_prob(v), chi2.entropy(), chi2.expand((2, 3)).df])
    rtol = 1e-5 if dtype == "float32" else 1e-12
    for got, want in zip(*results):
        np.testing.assert_allclose(got.detach().numpy(), want.detach().numpy(), rtol=rtol)


def test_chi2_checks_and_concentration_grad():
    assert isinstance(D.Chi2(3.0), D.Gamma) and D.Chi2(3.0).rate.item() == 0.5
    with pytest.raises(ValueError, match="parameter df"):
        D.Chi2(ember.tensor([-1.0]))
    with pytest.raises(ValueError, match="Gamma"):
        D.Gamma(2.0, 1.0).cdf(ember.tensor(-1.0))
    a = ember.tensor(2.0, requires_grad=True)
    with pytest.raises(ember.errors.GradError, match="not implemented"):
        D.Gamma(a, 1.0).cdf(ember.tensor(1.0)).backward()
