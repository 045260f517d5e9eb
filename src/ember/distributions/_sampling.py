"""Samplers the core does not have, written with Ember ops: standard gamma (Marsaglia and
Tsang's squeeze method, boosted below concentration 1), Poisson (Knuth's product method
for small rates, Hormann's PTRS transformed rejection above) and binomial (the order-statistic
recursion of Devroye, with Bernoulli counts once few trials are left).

Each works on a flat float64 copy and returns values without gradients, in the input's dtype
and shape. Rejection loops redraw only the still-rejected elements.
"""

from __future__ import annotations

import ember
from ember.tensor import Tensor

__all__ = ["binomial", "poisson", "standard_gamma"]

_SMALL_RATE = 10.0  # below it Knuth's method (cost ~ rate) beats PTRS' setup
_FEW_TRIALS = 16  # binomial counts with at most this many trials draw one uniform per trial


def _flat64(x: Tensor) -> Tensor:
    return x.detach().to(ember.float64).reshape(-1)


def _accept_loop(n: int, propose: callable) -> Tensor:
    """Runs ``propose(indices) -> (accepted mask, values)`` on the pending indices until
    every element of a length-``n`` result is accepted."""
    out = ember.zeros(n, dtype=ember.float64)
    pending = ember.arange(n)
    while pending.numel():
        ok, values = propose(pending)
        out[pending[ok]] = values[ok]
        pending = pending[~ok]
    return out


def standard_gamma(concentration: Tensor) -> Tensor:
    """Samples of Gamma(concentration, 1), one per element, without gradients."""
    with ember.no_grad():
        a = _flat64(concentration)
        boost = a < 1
        d = ember.where(boost, a + 1, a) - 1 / 3
        c = 1 / ember.sqrt(9 * d)

        def propose(idx: Tensor) -> tuple[Tensor, Tensor]:
            dk, ck = d[idx], c[idx]
            x = ember.randn(idx.numel(), dtype=ember.float64)
            v = (1 + ck * x) ** 3
            log_u = ember.log(ember.rand(idx.numel(), dtype=ember.float64))
            ok = (v > 0) & (log_u < 0.5 * x * x + dk - dk * v + dk * ember.log(v.clamp(min=1e-300)))
            return ok, dk * v

        log_z = ember.log(_accept_loop(a.numel(), propose))
        # Gamma(a) = Gamma(a + 1) * U ** (1 / a); in logs, so tiny ``a`` cannot overflow 1 / a
        u = ember.rand(a.numel(), dtype=ember.float64)
        log_z = log_z + ember.where(boost, ember.log(u) / a, ember.zeros_like(a))
        z = ember.exp(log_z).to(concentration.dtype)
        return z.clamp(min=ember.finfo(concentration.dtype).tiny).reshape(concentration.shape)


def _poisson_small(lam: Tensor) -> Tensor:
    """Knuth: the count of uniforms whose running product stays above ``exp(-lam)``."""
    limit = ember.exp(-lam)
    prod = ember.rand(lam.numel(), dtype=ember.float64)
    count = ember.zeros_like(lam)
    active = prod > limit
    while bool(active.any()):
        count = count + active.to(ember.float64)
        prod = ember.where(active, prod * ember.rand(lam.numel(), dtype=ember.float64), prod)
        active = prod > limit
    return count


def _poisson_ptrs(lam: Tensor) -> Tensor:
    """Hormann (1993), 'The transformed rejection method for generating Poisson random
    variables', algorithm PTRS; valid for rates of 10 and more."""
    slam, loglam = ember.sqrt(lam), ember.log(lam)
    b = 0.931 + 2.53 * slam
    a = -0.059 + 0.02483 * b
    inv_alpha = 1.1239 + 1.1328 / (b - 3.4)
    v_r = 0.9277 - 3.6224 / (b - 2)

    def propose(idx: Tensor) -> tuple[Tensor, Tensor]:
        n = idx.numel()
        u = ember.rand(n, dtype=ember.float64) - 0.5
        v = ember.rand(n, dtype=ember.float64)
        us = 0.5 - u.abs()
        ak, bk, lk = a[idx], b[idx], lam[idx]
        k = ((2 * ak / us + bk) * u + lk + 0.43).floor()
        quick = (us >= 0.07) & (v <= v_r[idx])
        bad = (k < 0) | ((us < 0.013) & (v > us))
        log_ratio = (ember.log(v) + ember.log(inv_alpha[idx]) - ember.log(ak / (us * us) + bk))
        exact = log_ratio <= -lk + k * loglam[idx] - ember.lgamma(k.clamp(min=0) + 1)
        return quick | (~bad & exact), k

    return _accept_loop(lam.numel(), propose)


def poisson(rate: Tensor) -> Tensor:
    """Samples of Poisson(rate), one per element, without gradients."""
    with ember.no_grad():
        lam = _flat64(rate)
        out = ember.zeros_like(lam)
        small = (lam > 0) & (lam < _SMALL_RATE)
        large = lam >= _SMALL_RATE
        if bool(small.any()):
            out[small] = _poisson_small(lam[small])
        if bool(large.any()):
            out[large] = _poisson_ptrs(lam[large])
        return out.to(rate.dtype).reshape(rate.shape)


def binomial(total_count: Tensor, probs: Tensor) -> Tensor:
    """Samples of Binomial(total_count, probs), one per element, without gradients.

    While many trials remain, the ``a``-th smallest of ``n`` uniforms (``a = n // 2 + 1``) is
    drawn as Beta(a, n + 1 - a): the successes are then either among the ``a - 1`` uniforms
    below it (success probability ``p / X``) or ``a`` plus those among the ``n - a`` above it
    (probability ``(p - X) / (1 - X)``), which halves ``n`` per step.
    """
    with ember.no_grad():
        n, p = _flat64(total_count), _flat64(probs).clamp(min=0, max=1)
        count = ember.zeros_like(n)
        many = n > _FEW_TRIALS
        while bool(many.any()):
            nk, pk = n[many], p[many]
            a = (nk / 2).floor() + 1
            g1, g2 = standard_gamma(a), standard_gamma(nk + 1 - a)
            x = g1 / (g1 + g2)
            below = x >= pk
            count[many] = count[many] + ember.where(below, ember.zeros_like(a), a)
            n[many] = ember.where(below, a - 1, nk - a)
            p[many] = ember.where(below, pk / x, (pk - x) / (1 - x)).clamp(min=0, max=1)
            many = n > _FEW_TRIALS
        trial = ember.arange(_FEW_TRIALS, dtype=ember.float64)
        hits = ember.rand((n.numel(), _FEW_TRIALS), dtype=ember.float64) < p.unsqueeze(-1)
        count = count + (hits & (trial < n.unsqueeze(-1))).to(ember.float64).sum(-1)
        return count.to(probs.dtype).reshape(probs.shape)
