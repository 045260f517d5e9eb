"""The cross-family ``kl_divergence`` pairs against torch: values and parameter gradients in
float32 and float64, and the pairs whose divergence is infinite."""

import numpy as np
import pytest
import torch

import ember
import ember.distributions as D

rng = np.random.default_rng(11)


def pos(n=3):
    return rng.uniform(0.5, 3.0, n)


def real(n=3):
    return rng.normal(size=n)


def unit(n=3):
    return rng.uniform(0.05, 0.95, n)


_loc = real()
_low = rng.uniform(0.05, 0.4, 3)
INSIDE_UNIT = [_low, _low + rng.uniform(0.1, 0.5, 3)]  # 0 < low < high < 1
COVERS_UNIT = [-rng.uniform(0.1, 1.0, 3), 1 + rng.uniform(0.1, 1.0, 3)]

# (p class, p params, q class, q params), all with finite divergence
FINITE = [
    ("Uniform", [_loc, _loc + pos()], "Normal", [real(), pos()]),
    ("Laplace", [real(), pos()], "Normal", [real(), pos()]),
    ("Exponential", [pos()], "Normal", [real(), pos()]),
    ("Gamma", [pos(), pos()], "Normal", [real(), pos()]),
    ("Beta", [pos(), pos()], "Normal", [real(), pos()]),
    ("Normal", [real(), pos()], "Laplace", [real(), pos()]),
    ("Gamma", [pos(), pos()], "Exponential", [pos()]),
    ("Beta", [pos(), pos()], "Exponential", [pos()]),
    ("Uniform", [pos(), pos() + 3], "Exponential", [pos()]),
    ("Exponential", [pos()], "Gamma", [pos(), pos()]),
    ("Beta", [pos(), pos()], "Gamma", [pos(), pos()]),
    ("Uniform", [pos(), pos() + 3], "Gamma", [pos(), pos()]),
    ("Uniform", INSIDE_UNIT, "Beta", [pos(), pos()]),
    ("Beta", [pos(), pos()], "Uniform", COVERS_UNIT),
    ("Bernoulli", [rng.uniform(0.05, 0.95, 3)], "Poisson", [pos()]),
    ("Cauchy", [real(), pos()], "Cauchy", [real(), pos()]),
    ("Gumbel", [real(), pos()], "Gumbel", [real(), pos()]),
    ("HalfNormal", [pos()], "HalfNormal", [pos()]),
    ("Pareto", [pos(), pos() + 2], "Pareto", [0.1 * pos(), pos()]),
    ("ContinuousBernoulli", [[0.2, 0.5, 0.7]], "ContinuousBernoulli", [unit()]),
    ("Beta", [pos(), pos()], "ContinuousBernoulli", [unit()]),
    ("ContinuousBernoulli", [unit()], "Exponential", [pos()]),
    ("ContinuousBernoulli", [unit()], "Normal", [real(), pos()]),
    ("ContinuousBernoulli", [unit()], "Uniform", COVERS_UNIT),
    ("Uniform", INSIDE_UNIT, "ContinuousBernoulli", [unit()]),
    ("Exponential", [pos()], "Gumbel", [real(), pos()]),
    ("Gamma", [pos(), pos()], "Gumbel", [real(), pos()]),
    ("Normal", [real(), pos()], "Gumbel", [real(), pos()]),
    ("Uniform", [_loc, _loc + pos()], "Gumbel", [real(), pos()]),
    ("Gumbel", [real(), pos()], "Normal", [real(), pos()]),
    ("Pareto", [pos(), pos() + 2], "Exponential", [pos()]),
    ("Pareto", [pos(), pos() + 2], "Gamma", [pos(), pos()]),
    ("Pareto", [pos(), pos() + 2], "Normal", [real(), pos()]),
    ("Uniform", [pos() + 3, pos() + 7], "Pareto", [pos(), pos()]),
]


def _build(lib, name, params, dtype):
    tensors = [lib.tensor(np.asarray(v), dtype=dtype, requires_grad=True) for v in params]
    return getattr(lib.distributions, name)(*tensors), tensors


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize(("p_name", "p_args", "q_name", "q_args"), FINITE,
                         ids=[f"{c[0]}-{c[2]}" for c in FINITE])
def test_cross_kl_against_torch(p_name, p_args, q_name, q_args, dtype):
    results = []
    for lib in (ember, torch):
        p, p_leaves = _build(lib, p_name, p_args, getattr(lib, dtype))
        q, q_leaves = _build(lib, q_name, q_args, getattr(lib, dtype))
        kl = lib.distributions.kl_divergence(p, q)
        kl.sum().backward()
        results.append([kl] + [t.grad for t in p_leaves + q_leaves])
    rtol = 1e-4 if dtype == "float32" else 1e-9
    for got, want in zip(*results):
        assert str(got.dtype).rsplit(".", 1)[-1] == dtype
        np.testing.assert_allclose(got.detach().numpy(), want.detach().numpy(), rtol=rtol,
                                   atol=rtol)


INFINITE = [
    ("Normal", [real(), pos()], ["Uniform", "Exponential", "Gamma", "Beta"]),
    ("Laplace", [real(), pos()], ["Uniform", "Exponential", "Gamma", "Beta"]),
    ("Exponential", [pos()], ["Uniform", "Beta"]),
    ("Gamma", [pos(), pos()], ["Uniform", "Beta"]),
    ("Poisson", [pos()], ["Bernoulli", "Binomial"]),
    ("Normal", [real(), pos()], ["ContinuousBernoulli", "Pareto"]),
    ("Laplace", [real(), pos()], ["ContinuousBernoulli", "Pareto"]),
    ("Exponential", [pos()], ["ContinuousBernoulli", "Pareto"]),
    ("Gamma", [pos(), pos()], ["ContinuousBernoulli", "Pareto"]),
    ("Gumbel", [real(), pos()], ["Beta", "ContinuousBernoulli", "Exponential", "Gamma",
                                 "Pareto", "Uniform"]),
    ("Pareto", [pos(), pos()], ["Beta", "ContinuousBernoulli", "Uniform"]),
    ("Beta", [pos(), pos()], ["Pareto"]),
    ("ContinuousBernoulli", [unit()], ["Pareto"]),
]
Q_ARGS = {"Uniform": [[0.0], [1.0]], "Exponential": [[1.0]], "Gamma": [[2.0], [1.0]],
          "Beta": [[2.0], [3.0]], "Bernoulli": [[0.3]], "Binomial": [[4.0], [0.3]],
          "ContinuousBernoulli": [[0.3]], "Pareto": [[1.0], [2.0]]}


@pytest.mark.parametrize(("p_name", "p_args", "q_names"), INFINITE,
                         ids=[c[0] for c in INFINITE])
def test_infinite_kl_matches_torch(p_name, p_args, q_names):
    for q_name in q_names:
        p, _ = _build(ember, p_name, p_args, ember.float32)
        q = getattr(D, q_name)(*[ember.tensor(v) for v in Q_ARGS[q_name]])
        kl = D.kl_divergence(p, q)
        assert kl.shape == (3,) and not kl.requires_grad
        assert np.isposinf(kl.numpy()).all()
        tp, _ = _build(torch, p_name, p_args, torch.float32)
        tq = getattr(torch.distributions, q_name)(*[torch.tensor(v) for v in Q_ARGS[q_name]])
        assert np.isposinf(torch.distributions.kl_divergence(tp, tq).detach().numpy()).all()


@pytest.mark.parametrize(("p", "q", "tp", "tq"), [
    (D.Uniform(-0.5, 1.0), D.Exponential(1.0), "Uniform(-0.5, 1.0)", "Exponential(1.0)"),
    (D.Uniform(-0.5, 1.0), D.Gamma(2.0, 1.0), "Uniform(-0.5, 1.0)", "Gamma(2.0, 1.0)"),
    (D.Uniform(0.5, 1.5), D.Beta(2.0, 1.0), "Uniform(0.5, 1.5)", "Beta(2.0, 1.0)"),
    (D.Beta(2.0, 1.0), D.Uniform(0.2, 3.0), "Beta(2.0, 1.0)", "Uniform(0.2, 3.0)"),
])
def test_support_mismatch_is_infinite(p, q, tp, tq):
    td = torch.distributions
    want = td.kl_divergence(eval("td." + tp), eval("td." + tq))  # noqa: S307
    assert D.kl_divergence(p, q).item() == want.item() == float("inf")


@pytest.mark.parametrize(("p", "q", "tp", "tq"), [
    (D.Pareto(ember.tensor([1.0, 2.0]), 3.0), D.Pareto(1.5, 2.0),
     "Pareto(torch.tensor([1.0, 2.0]), 3.0)", "Pareto(1.5, 2.0)"),
    (D.Pareto(1.0, ember.tensor([0.5, 1.0, 3.0])), D.Exponential(1.0),
     "Pareto(1.0, torch.tensor([0.5, 1.0, 3.0]))", "Exponential(1.0)"),
    (D.Pareto(1.0, ember.tensor([0.5, 1.0, 3.0])), D.Gamma(2.0, 1.0),
     "Pareto(1.0, torch.tensor([0.5, 1.0, 3.0]))", "Gamma(2.0, 1.0)"),
    (D.Pareto(1.0, ember.tensor([1.5, 2.0, 3.0])), D.Normal(0.0, 1.0),
     "Pareto(1.0, torch.tensor([1.5, 2.0, 3.0]))", "Normal(0.0, 1.0)"),
    (D.Uniform(ember.tensor([0.5, 2.0]), 4.0), D.Pareto(1.0, 2.0),
     "Uniform(torch.tensor([0.5, 2.0]), 4.0)", "Pareto(1.0, 2.0)"),
    (D.ContinuousBernoulli(0.3), D.Uniform(ember.tensor([-0.5, 0.1]), 2.0),
     "ContinuousBernoulli(0.3)", "Uniform(torch.tensor([-0.5, 0.1]), 2.0)"),
    (D.Uniform(ember.tensor([-0.5, 0.1]), 0.9), D.ContinuousBernoulli(0.3),
     "Uniform(torch.tensor([-0.5, 0.1]), 0.9)", "ContinuousBernoulli(0.3)"),
])
def test_partly_infinite_kl_matches_torch(p, q, tp, tq):
    """Pareto's heavy tails (alpha at most 1, or 2 against a Normal) and supports that do not
    nest give inf, elementwise."""
    td = torch.distributions  # noqa: F841 - used by eval
    want = td.kl_divergence(eval("td." + tp), eval("td." + tq))  # noqa: S307
    np.testing.assert_allclose(D.kl_divergence(p, q).numpy(), want.numpy(), rtol=1e-5)


def test_continuous_bernoulli_uniform_kl_on_the_unit_interval():
    """The supports coincide, so the divergence is finite; PyTorch returns inf here."""
    p, q = D.ContinuousBernoulli(ember.tensor(0.3)), D.Uniform(0.0, 1.0)
    np.testing.assert_allclose(D.kl_divergence(p, q).item(), -p.entropy().item(), rtol=1e-6)
    np.testing.assert_allclose(D.kl_divergence(q, p).item(),
                               -D.ContinuousBernoulli(0.3).log_prob(
                                   ember.linspace(0.0, 1.0, 200001)).mean().item(),
                               rtol=1e-4)
