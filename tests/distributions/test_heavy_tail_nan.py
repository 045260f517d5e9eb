"""A NaN parameter (validate_args=False, as a diverging fit makes) gives NaN heavy-tail
moments, whichever parameter it is in: the one that decides the regime or another one the
moment reads (rm60a item 4: those gave inf or 0 in the heavy regime)."""

import math

import pytest
import torch

import ember
import ember.distributions as D

from .cases import E

NAN = math.nan

# (family, parameters, moment); each gave inf (mode: 0) before; the regime is the heavy one.
OTHER_PARAMETER_NAN = [
    ("Pareto", (NAN, 0.5), "mean"),
    ("Pareto", (NAN, 0.5), "variance"),
    ("Pareto", (NAN, 1.5), "variance"),
    ("InverseGamma", (0.5, NAN), "mean"),
    ("InverseGamma", (1.5, NAN), "variance"),
    ("GeneralizedPareto", (NAN, 1.0, 1.5), "mean"),
    ("GeneralizedPareto", (0.0, NAN, 1.5), "mean"),
    ("GeneralizedPareto", (0.0, NAN, 0.7), "variance"),
    ("FisherSnedecor", (1.0, NAN), "mode"),
    ("FisherSnedecor", (NAN, 3.0), "variance"),
    ("StudentT", (1.5, 0.0, NAN), "variance"),
    ("Weibull", (NAN, 0.5), "mode"),
]

# torch refuses NaN in FisherSnedecor and StudentT (its inner Gamma/Chi2 validate), and says
# inf for InverseGamma's and StudentT's (docs/distributions.md).
TORCH_NAN_TOO = {"Pareto", "GeneralizedPareto", "Weibull"}


@pytest.mark.parametrize("name, args, moment", OTHER_PARAMETER_NAN,
                         ids=[f"{n}{a}.{m}" for n, a, m in OTHER_PARAMETER_NAN])
@pytest.mark.parametrize("dtype", [ember.float32, ember.float64], ids=str)
def test_a_nan_in_a_parameter_not_deciding_the_regime_gives_nan(name, args, moment, dtype):
    d = getattr(D, name)(*[E([a]).to(dtype) for a in args], validate_args=False)
    got = getattr(d, moment)
    assert got.dtype == dtype and bool(ember.isnan(got).all()), got
    if name in TORCH_NAN_TOO:
        ref = getattr(torch.distributions, name)(*[torch.tensor([a]) for a in args],
                                                 validate_args=False)
        assert torch.isnan(getattr(ref, moment)).all()


def test_a_nan_elsewhere_leaves_other_entries_and_their_gradients_alone():
    """The NaN stays in its own entry; the others (heavy and light) keep their values and
    slopes (the NaN's entry's slope in the other parameter is zero)."""
    scale = E([NAN, 2.0, 2.0]).requires_grad_()
    alpha = E([0.5, 0.5, 3.0]).requires_grad_()
    mean = D.Pareto(scale, alpha, validate_args=False).mean
    assert math.isnan(mean[0].item()) and mean[1].item() == math.inf and mean[2].item() == 3.0
    mean[2].backward()
    assert scale.grad.tolist() == [0.0, 0.0, 1.5] and alpha.grad.tolist() == [0.0, 0.0, -0.5]


def test_a_nan_in_the_parameter_deciding_the_regime_gives_nan():
    """With validate_args=False a NaN parameter (a diverging fit) gave inf (mode: 0) as if the
    tail were heavy; now NaN, as torch's Pareto, GeneralizedPareto and Weibull.mode (torch's
    InverseGamma says inf, its FisherSnedecor and StudentT refuse NaN)."""
    nan, one = E([NAN]), E([1.0])
    cases = [(D.GeneralizedPareto(0.0, one, nan, validate_args=False), ("mean", "variance")),
             (D.FisherSnedecor(nan, nan, validate_args=False), ("mean", "variance", "mode")),
             (D.FisherSnedecor(nan, E([6.0]), validate_args=False), ("mode", "variance")),
             (D.FisherSnedecor(E([3.0]), nan, validate_args=False), ("mean", "variance", "mode")),
             (D.Pareto(one, nan, validate_args=False), ("mean", "variance")),
             (D.InverseGamma(nan, one, validate_args=False), ("mean", "variance")),
             (D.StudentT(nan, validate_args=False), ("mean", "variance")),
             (D.Weibull(one, nan, validate_args=False), ("mode",))]
    for d, props in cases:
        for prop in props:
            assert bool(ember.isnan(getattr(d, prop)).all()), (type(d).__name__, prop)
    torch_nan = torch.tensor([NAN], dtype=torch.float64)
    for name, args in [("GeneralizedPareto", (0.0, 1.0, torch_nan)), ("Pareto", (1.0, torch_nan))]:
        ref = getattr(torch.distributions, name)(*args, validate_args=False)
        assert torch.isnan(ref.mean).all() and torch.isnan(ref.variance).all()


def test_a_nan_parameter_leaves_moments_that_do_not_read_it_alone():
    """FisherSnedecor's mean reads df2 only, StudentT's variance not loc, GeneralizedPareto's
    variance not loc: as torch's formulas."""
    nan = E([NAN])
    assert D.FisherSnedecor(nan, E([6.0]), validate_args=False).mean.item() == 1.5
    assert D.StudentT(E([3.0]), nan, validate_args=False).variance.item() == 3.0
    gp = D.GeneralizedPareto(nan, E([1.0]), E([0.2]), validate_args=False).variance
    ref = torch.distributions.GeneralizedPareto(NAN, 1.0, torch.tensor([0.2]),
                                                validate_args=False).variance
    assert gp.item() == pytest.approx(ref.item())
