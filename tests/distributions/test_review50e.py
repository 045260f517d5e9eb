"""Fixes of the review50e findings: slopes at the edges of the lower-tail cdfs, Kumaraswamy's
precision and dtype, bad transforms."""

import math

import numpy as np
import pytest
import torch

import ember
import ember.distributions as D
from ember.distributions.utils import one_minus_exp

from .cases import close


@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_cauchy_cdf_slopes_everywhere_including_just_below_loc(dtype):
    # atan(-1/z) below loc: its chain made 1/(1 + 1/z^2) * 1/z^2 = 0 * inf = NaN for tiny
    # negative z (-1e-200 in float64, -1e-30 in float32); each slope against its closed form
    tiny = -1e-200 if dtype == "float64" else -1e-30
    zs = [-1e10, -50.0, -1.5, -1.0, -0.999, -0.5, -1e-8, tiny, 0.0, -0.0, 1e-8, 0.5, 3.0, 1e8]
    loc, scale = 0.0, 2.0  # (loc 0: loc + scale * tiny does not round to loc)
    dt = getattr(ember, dtype)
    p = [ember.tensor(v, dtype=dt).requires_grad_() for v in (loc, scale)]
    x = ember.tensor([loc + scale * z for z in zs], dtype=dt).requires_grad_()
    cdf = D.Cauchy(*p).cdf(x)
    gl, gs, gx = ember.autograd.grad(cdf.sum(), p + [x])
    z = (x.detach().numpy().astype(np.float64) - float(p[0])) / scale
    density = 1 / (math.pi * scale * (1 + z * z))
    rtol = 1e-5 if dtype == "float32" else 1e-12
    close(gx, density, rtol=rtol)
    close(gl, -density.sum(), rtol=rtol)
    close(gs, (-z * density).sum(), rtol=rtol, atol=1e-12)
    close(cdf, 0.5 + np.arctan(z) / math.pi, rtol=rtol)


def _kumaraswamy(dtype="float64", **kwargs):
    params = [ember.tensor(v, dtype=getattr(ember, dtype)).requires_grad_() for v in (2.0, 3.0)]
    return params, D.Kumaraswamy(*params, **kwargs)


@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_kumaraswamy_icdf_at_one_has_torchs_slopes(dtype):
    # log1p(-1) / b = -inf: one_minus_exp's chain gave 0 * inf = NaN for b and q (torch: 0, inf)
    params, d = _kumaraswamy(dtype)
    q = ember.tensor(1.0, dtype=params[0].dtype).requires_grad_()
    value = d.icdf(q)
    assert float(value) == 1.0
    assert [float(g) for g in ember.autograd.grad(value, params + [q])] == [0.0, 0.0, math.inf]


# 1 - (1 - x^2)^3 and (1 - (1 - q)^(1/3))^(1/2), computed once with mpmath at 50 digits
KUMARASWAMY_CDF = [(1e-8, 2.9999999999999997e-16), (1e-6, 2.999999999997e-12),
                   (0.3, 0.246429), (0.999, 0.999999992011994)]
KUMARASWAMY_ICDF = [(2e-8, 8.1649658364938133e-5), (1e-12, 5.7735026918972199e-7),
                    (0.5, 0.45420201894740655), (0.999999, 0.99498743710661995)]


def test_kumaraswamy_cdf_and_icdf_keep_their_precision():
    # through the three transforms both cancelled: cdf(1e-8) 11% off (torch's too)
    _, d = _kumaraswamy()
    for x, want in KUMARASWAMY_CDF:
        assert float(d.cdf(ember.tensor(x, dtype=ember.float64))) == pytest.approx(want, rel=1e-13)
    for q, want in KUMARASWAMY_ICDF:
        assert float(d.icdf(ember.tensor(q, dtype=ember.float64))) == pytest.approx(want, rel=1e-13)
    # and the slopes where nothing cancels, against torch
    t = [torch.tensor(v, dtype=torch.float64, requires_grad=True) for v in (2.0, 3.0)]
    params, d = _kumaraswamy()
    for fn in ("cdf", "icdf"):
        got = getattr(d, fn)(ember.tensor(0.3, dtype=ember.float64))
        ref = getattr(torch.distributions.Kumaraswamy(*t), fn)(
            torch.tensor(0.3, dtype=torch.float64))
        for a, b in zip(ember.autograd.grad(got, params), torch.autograd.grad(ref, t)):
            close(a, b, rtol=1e-12)


def test_kumaraswamy_cdf_outside_the_support_without_validation():
    # 0 below 0 and 1 above 1, as a clamped Uniform's cdf (torch: NaN, or 0.578 at -0.5)
    _, d = _kumaraswamy(validate_args=False)
    got = d.cdf(ember.tensor([-0.5, 0.0, 1.0, 1.5], dtype=ember.float64))
    assert got.tolist() == [0.0, 0.0, 1.0, 1.0]


def test_kumaraswamy_cdf_promotes_the_value_as_torch():
    # the value was cast to the parameters' dtype: float32 params, float64 value -> float32
    _, d = _kumaraswamy("float32")
    value = d.cdf(ember.tensor(0.3, dtype=ember.float64))
    t = torch.distributions.Kumaraswamy(torch.tensor(2.0), torch.tensor(3.0))
    assert value.dtype == ember.float64
    assert str(t.cdf(torch.tensor(0.3, dtype=torch.float64)).dtype) == "torch.float64"
    assert float(value) == pytest.approx(0.246429, rel=1e-7)


@pytest.mark.parametrize("transforms", [None, 3, object()])
def test_transformed_distribution_refuses_a_non_iterable_clearly(transforms):
    # list(None) raised a bare TypeError "'NoneType' object is not iterable" (torch ValueError)
    with pytest.raises(ember.errors.ArgumentError, match="TransformedDistribution.*Transform"):
        D.TransformedDistribution(D.Normal(0.0, 1.0), transforms)


@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_one_minus_exp_values_and_slopes(dtype):
    dt = getattr(ember, dtype)
    s = ember.tensor([0.0, -0.0, -1e-30, -1e-8, -0.5, -math.log(2.0), -1.0, -20.0, -80.0,
                      -math.inf], dtype=dt).requires_grad_()
    got = one_minus_exp(s)
    (g,) = ember.autograd.grad(got.sum(), [s])
    ref = s.detach().numpy().astype(np.float64)
    rtol = 2e-7 if dtype == "float32" else 1e-15
    close(got, -np.expm1(ref), rtol=rtol)
    close(g, -np.exp(ref), rtol=rtol)  # (1 - exp(s)'s slope was 0 at -20 in float32)
    assert math.copysign(1.0, float(got[0])) == 1.0  # +0, not -expm1(0) = -0
    assert math.copysign(1.0, float(got[1])) == 1.0
