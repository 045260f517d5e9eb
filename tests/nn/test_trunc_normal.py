"""nn.init.trunc_normal_: the truncated normal's exact bounds, moments and CDF (against the
closed forms and torch), on intervals near the centre and far in a tail, in both dtypes."""

import math

import numpy as np
import pytest
import torch

import ember
from ember import nn


def _phi(x):
    return math.exp(-x * x / 2) / math.sqrt(2 * math.pi)


def _cdf(x):
    return (1 + math.erf(x / math.sqrt(2))) / 2


def _truncated_moments(mean, std, a, b):
    """Mean and standard deviation of N(mean, std²) truncated to [a, b] (closed form)."""
    al, be = (a - mean) / std, (b - mean) / std
    z = _cdf(be) - _cdf(al)
    m = (_phi(al) - _phi(be)) / z
    var = 1 + (al * _phi(al) - be * _phi(be)) / z - m * m
    return mean + std * m, std * math.sqrt(var)


CASES = [(0.0, 0.02, -2.0, 2.0), (0.5, 1.0, -1.0, 1.5), (0.0, 1.0, 1.0, 3.0),
         (0.0, 1.0, 3.0, 4.0), (1.0, 2.0, -7.0, -5.0)]


@pytest.mark.parametrize("dtype", [ember.float32, ember.float64])
@pytest.mark.parametrize("mean, std, a, b", CASES)
def test_trunc_normal_bounds_moments_and_cdf(mean, std, a, b, dtype):
    n = 200_000
    w = nn.init.trunc_normal_(ember.empty(n, dtype=dtype), mean, std, a, b,
                              generator=ember.Generator().manual_seed(3))
    assert w.dtype == dtype
    x = w.numpy().astype(np.float64)
    assert x.min() >= a and x.max() <= b
    mu, sd = _truncated_moments(mean, std, a, b)
    assert abs(x.mean() - mu) < 5 * sd / math.sqrt(n)
    assert abs(x.std() / sd - 1) < 0.01
    t = torch.nn.init.trunc_normal_(torch.empty(n, dtype=torch.float64), mean, std, a, b,
                                    generator=torch.Generator().manual_seed(3))
    assert abs(t.mean().item() - x.mean()) < 8 * sd / math.sqrt(n)
    # Kolmogorov-Smirnov distance to the exact CDF: ~0.9/sqrt(n) typical, 1.95/sqrt(n) at 0.1%
    lo, hi = _cdf((a - mean) / std), _cdf((b - mean) / std)
    grid = np.quantile(x, np.linspace(0.005, 0.995, 199))
    exact = np.array([(_cdf((g - mean) / std) - lo) / (hi - lo) for g in grid])
    assert np.abs(exact - np.linspace(0.005, 0.995, 199)).max() < 2.5 / math.sqrt(n)


def test_trunc_normal_generator_reproducible_and_empty():
    def draw(seed):
        return nn.init.trunc_normal_(ember.empty(3, 500), std=0.02,
                                     generator=ember.Generator().manual_seed(seed)).numpy()

    np.testing.assert_array_equal(draw(7), draw(7))
    assert not np.array_equal(draw(7), draw(8))
    assert nn.init.trunc_normal_(ember.empty(0, 4)).shape == (0, 4)


def test_trunc_normal_refuses_an_empty_interval():
    """torch raises (from its uniform_) where a > b; the result was silently all b."""
    with pytest.raises(ValueError, match=r"trunc_normal_: the interval \[a, b\] = \[1.0, -1.0\]"):
        nn.init.trunc_normal_(ember.empty(3), a=1.0, b=-1.0)
    assert (nn.init.trunc_normal_(ember.empty(3), a=0.5, b=0.5) == 0.5).all()


@pytest.mark.parametrize("mean, std, a, b", [(0.0, 1.0, 10.0, 11.0), (0.0, 0.02, 0.2, 0.3),
                                             (0.0, 1.0, -11.0, -10.0), (0.0, 1.0, 6.0, 6.5)])
def test_trunc_normal_far_in_either_tail(mean, std, a, b):
    """Beyond ~8 std in the upper tail the inverse CDF rounded to 1 and every value came out
    exactly ``a`` (torch samples the interval); the mean matches the exact truncated mean."""
    n = 100_000
    x = nn.init.trunc_normal_(ember.empty(n, dtype=ember.float64), mean, std, a, b,
                              generator=ember.Generator().manual_seed(1)).numpy()
    assert x.min() >= a and x.max() <= b
    # the exact mean by the mirror image in the lower tail, where erfc keeps its precision
    lo, hi = sorted(((a - mean) / std, (b - mean) / std), key=abs, reverse=True)
    sign = 1.0 if lo < 0 else -1.0  # lo: the bound farther from the mean
    al, be = -abs(lo), -abs(hi)
    z = math.erfc(-be / math.sqrt(2)) / 2 - math.erfc(-al / math.sqrt(2)) / 2
    m = (_phi(al) - _phi(be)) / z
    exact = mean + sign * std * m
    assert abs(x.mean() - exact) < 0.02 * (b - a)
    assert len(np.unique(x)) > n // 2


@pytest.mark.parametrize("a, b, c", [(39.0, 40.0, 39.0), (50.0, 1e9, 50.0), (-1e9, -60.0, -60.0)])
def test_trunc_normal_where_the_cdf_underflows(a, b, c):
    """Past ~36 std the CDF is 0 in float64: every value was the far bound ``b`` (1e9)."""
    x = nn.init.trunc_normal_(ember.empty(50_000, dtype=ember.float64), 0.0, 1.0, a, b,
                              generator=ember.Generator().manual_seed(2)).numpy()
    assert x.min() >= a and x.max() <= b
    tail_mean = abs(c) + 1 / abs(c) - 2 / abs(c) ** 3  # Mills ratio, asymptotically
    assert abs(abs(x.mean()) - tail_mean) < 2e-3 and len(np.unique(x)) == x.size


def test_trunc_normal_on_a_narrow_interval_where_the_cdf_underflows():
    # [50, 50 + 1e-6]: the exponential proposal fell past b all but once in ~2e4 draws (the
    # loop ran for minutes); a uniform proposal there accepts nearly every draw
    a, b = 50.0, 50.0 + 1e-6
    x = nn.init.trunc_normal_(ember.empty(20_000, dtype=ember.float64), 0.0, 1.0, a, b,
                              generator=ember.Generator().manual_seed(3)).numpy()
    assert x.min() >= a and x.max() <= b
    # the density falls by exp(-50 (x - 50)): 5e-5 over the interval, so the mean is its middle
    assert abs(x.mean() - (a + b) / 2) < 0.02 * (b - a)


@pytest.mark.parametrize("std", [math.inf, -math.inf, 1e308, 1e12])
def test_trunc_normal_with_a_huge_std_is_uniform_on_the_interval(std):
    # before: std=±inf filled NaN and 1e308 all zeros (torch: values in [a, b])
    a, b, n = -1.0, 3.0, 50_000
    x = nn.init.trunc_normal_(ember.empty(n, dtype=ember.float64), 0.5, std, a, b,
                              generator=ember.Generator().manual_seed(4)).numpy()
    t = torch.nn.init.trunc_normal_(torch.empty(5, dtype=torch.float64), 0.5, std, a, b)
    assert ((t >= a) & (t <= b)).all()
    assert x.min() >= a and x.max() <= b and len(np.unique(x)) == n
    assert abs(x.mean() - 1.0) < 0.03 and abs(x.var() - 16 / 12) < 0.03
    assert abs((x < 0.0).mean() - 0.25) < 0.01


@pytest.mark.parametrize("kw", [dict(std=math.nan), dict(mean=math.nan), dict(mean=math.inf),
                                dict(mean=-math.inf), dict(std=math.inf, b=math.inf),
                                dict(a=-math.inf, b=-math.inf), dict(a=math.inf, b=math.inf)])
def test_trunc_normal_refuses_what_is_no_distribution(kw):
    # before: NaN filled NaN, an infinite mean or an interval [inf, inf] never returned
    with pytest.raises(ember.errors.ArgumentError, match="trunc_normal_: .*(no distribution|"
                                                         "holds no number)"):
        nn.init.trunc_normal_(ember.empty(3), **kw)
