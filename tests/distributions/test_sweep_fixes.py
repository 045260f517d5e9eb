"""Divergences from torch.distributions found by the differential sweep, each checked against
torch: tiny-probability entropies, value conversion, dtypes and empty samples."""

import torch

import ember
import ember.distributions as D

from .cases import close

TD = torch.distributions


def test_geometric_and_bernoulli_entropy_for_tiny_probs():
    # logsigmoid kept log1p(exp(x)) below x = -20 (softplus's threshold): entropy / p was off by 1
    p = [1e-12, 1e-9, 1e-6, 0.3]
    for dt in (torch.float64, torch.float32):
        for name in ("Geometric", "Bernoulli"):
            d = getattr(D, name)(probs=ember.tensor(p, dtype=getattr(ember, str(dt)[6:])))
            t = getattr(TD, name)(probs=torch.tensor(p, dtype=dt))
            close(d.entropy(), t.entropy(), rtol=1e-5)
    x = torch.tensor([-40.0, -27.6, -20.5, 0.0, 25.0], dtype=torch.float64)
    close(ember.nn.functional.logsigmoid(ember.tensor(x.numpy())),
          torch.nn.functional.logsigmoid(x), rtol=1e-12)
