"""Every distribution under the function transforms: its draws batch under
``ember.func.vmap(randomness="different")`` (one independent draw per row) and a compiled
training step that draws with ``rsample`` and scores with ``log_prob`` repeats the eager step
under the same seed."""

import numpy as np
import pytest

import ember
import ember.distributions as D

from .cases import CASES, E

# (left out: MultivariateNormal, whose sampler factorizes a matrix, and the families with an
# int parameter, Multinomial's total_count and LKJCholesky's dim, which vmap cannot batch)
BATCHED = sorted(name for name, (_, params, _) in CASES.items() if not name.startswith("MVN")
                 and not any(isinstance(v, int) for v in params.values()))


def _params(name, rows=None):
    cls, params, _ = CASES[name]
    tensors = {}
    for k, v in params.items():
        v = np.asarray(v, dtype=np.float64)
        tensors[k] = E(np.stack([v] * rows) if rows else v)
    return cls, tensors


@pytest.mark.parametrize("name", BATCHED)
def test_samples_batch_under_vmap(name):
    cls, batched = _params(name, rows=3)
    names = list(batched)

    def draw(*params):
        return getattr(D, cls)(**dict(zip(names, params))).sample((16,))

    _, single = _params(name)
    ember.manual_seed(0)
    out = ember.func.vmap(draw, randomness="different")(*batched.values())
    assert out.shape == (3,) + draw(*single.values()).shape
    assert not np.array_equal(out[0].numpy(), out[1].numpy())


RSAMPLED = ["Cauchy", "HalfCauchy", "HalfNormal", "StudentT", "Gumbel", "Weibull", "Pareto",
            "InverseGamma", "Kumaraswamy", "FisherSnedecor", "ContinuousBernoulliProbs",
            "LogisticNormal", "Exponential"]


@pytest.mark.parametrize("name", RSAMPLED)
def test_compiled_rsample_step_repeats_the_eager_step(name):
    cls, _ = _params(name)

    def step(*params):
        d = getattr(D, cls)(**dict(zip(names, params)))
        x = d.rsample((4,))
        loss = x.sum() - d.log_prob(x).mean()
        loss.backward()
        with ember.no_grad():
            for p in params:
                p -= 1e-3 * p.grad
                p.grad = None
        return loss

    runs = []
    for fn in (step, ember.jit.compile(step)):
        _, params = _params(name)
        names = list(params)
        params = [p.requires_grad_() for p in params.values()]
        ember.manual_seed(0)
        losses = [fn(*params).item() for _ in range(3)]
        runs.append((losses, [p.detach().numpy() for p in params]))
    np.testing.assert_allclose(runs[0][0], runs[1][0], rtol=1e-9)
    for eager, compiled in zip(runs[0][1], runs[1][1]):
        np.testing.assert_allclose(eager, compiled, rtol=1e-9)
