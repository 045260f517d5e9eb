"""igamma / igammac (values over a wide range against PyTorch and mpmath, gradients in x) and
the count samplers poisson / binomial (statistics, seeding, errors, vmap)."""

import mpmath
import numpy as np
import pytest
import torch

import ember
from tests.ops.optable import OpCase, S, arg, assert_same, op_tests, raises_like_torch

_A = dict(low=0.3, high=4.0, grad=False)
CASES = [
    OpCase(name, getattr(ember, name), getattr(torch, name),
           [S(arg(3, 4, **_A), arg(3, 4, low=0.1, high=6.0)),
            S(arg(3, 1, **_A), arg(4, low=0.1, high=6.0)),
            S(arg(**_A), arg(0, 2, low=0.1, high=6.0)),
            S(arg(2, 3, **_A), arg(2, 3, low=0.1, high=6.0, noncontig=True))])
    for name in ("igamma", "igammac")
]

test_forward, test_backward, test_gradcheck, test_gradgradcheck, test_jvp = op_tests(CASES)


@pytest.mark.parametrize("name", ["igamma", "igammac"])
def test_wide_range_matches_torch_and_mpmath(name):
    a, x = np.meshgrid(np.logspace(-2, 3.5, 40), np.logspace(-3, 3.7, 45))
    mine = getattr(ember, name)(ember.from_numpy(a), ember.from_numpy(x)).numpy()
    ref = getattr(torch, name)(torch.from_numpy(a), torch.from_numpy(x)).numpy()
    np.testing.assert_allclose(mine, ref, rtol=1e-7, atol=1e-300)
    upper = name == "igammac"
    for ai, xi in [(101.97, 71.63), (22.7, 29.3), (0.05, 2e-3), (1500.0, 1450.0), (3.0, 60.0)]:
        exact = mpmath.gammainc(ai, xi, mpmath.inf) if upper else mpmath.gammainc(ai, 0, xi)
        exact /= mpmath.gamma(ai)
        got = getattr(ember, name)(ember.tensor(ai, dtype=ember.float64),
                                   ember.tensor(xi, dtype=ember.float64)).item()
        assert got == pytest.approx(float(exact), rel=1e-11)


def test_edges_and_errors():
    a = [0.0, -1.0, 1.0, 1.0, 0.0, float("inf"), 2.0, float("nan"), 1.0, float("inf")]
    x = [1.0, 1.0, -1.0, 0.0, 0.0, 1.0, float("inf"), 1.0, float("nan"), float("inf")]
    for name in ("igamma", "igammac"):
        assert_same(getattr(ember, name)(ember.tensor(a), ember.tensor(x)),
                    getattr(torch, name)(torch.tensor(a), torch.tensor(x)))
    raises_like_torch(lambda lib: lib.igamma(lib.tensor([1, 2]), lib.tensor([1, 2])),
                      ember.DTypeError, "floating")
    raises_like_torch(lambda lib: lib.igamma(lib.tensor([1.0]), 2.0), TypeError, "two tensors")
    a = ember.tensor([1.0], requires_grad=True)
    with pytest.raises(ember.GradError, match=r"not implemented.*other \(x\) is implemented$"):
        ember.igamma(a, ember.tensor([1.0])).backward()
    for op in (ember.igamma, ember.igammac):  # forward mode too: no silent zero tangent in a
        with pytest.raises(ember.GradError, match="with respect to input .the shape a"):
            ember.func.jvp(lambda v, op=op: op(v, ember.tensor([1.0])), (a.detach(),),
                           (ember.ones_like(a),))
    for name in ("igamma_", "igammac_"):
        mine, ref = ember.tensor([1.0, 3.0]), torch.tensor([1.0, 3.0])
        assert getattr(mine, name)(ember.tensor([1.0, 1.0])) is mine
        getattr(ref, name)(torch.tensor([1.0, 1.0]))
        assert_same(mine, ref, rtol=1e-6)


# -- sampling -------------------------------------------------------------------------------------
def test_poisson_statistics_and_seed():
    rate = ember.tensor([0.0, 0.5, 3.0, 40.0], dtype=ember.float64).expand(20000, 4)
    ember.manual_seed(3)
    s = ember.poisson(rate)
    ember.manual_seed(3)
    assert bool((ember.poisson(rate) == s).all())
    assert s.dtype is ember.float64 and not s.requires_grad
    mean, var = s.mean(0).numpy(), s.var(0).numpy()
    np.testing.assert_allclose(mean, [0, 0.5, 3, 40], atol=4 * np.sqrt(40 / 20000) + 0.02)
    np.testing.assert_allclose(var, [0, 0.5, 3, 40], rtol=0.06, atol=0.02)
    assert bool((s == s.round()).all())


def test_binomial_statistics_and_rules():
    count = ember.tensor([10.0, 10.0, 0.0, -3.0, 7.0])
    prob = ember.tensor([0.3, 1.0, 0.5, 0.5, 1.5])
    g = ember.Generator().manual_seed(1)
    s = ember.binomial(count.expand(20000, 5), prob, generator=g)
    np.testing.assert_allclose(s.mean(0).numpy(), [3, 10, 0, 0, 7], atol=0.05)
    assert abs(s[:, 0].var().item() - 2.1) < 0.1
    t = torch.binomial(torch.tensor([10.0, 0.0, -3.0, 7.0]), torch.tensor([1.0, 0.5, 0.5, 1.5]))
    assert_same(ember.binomial(ember.tensor([10.0, 0.0, -3.0, 7.0]),
                               ember.tensor([1.0, 0.5, 0.5, 1.5])), t)


def test_sampling_errors_and_vmap():
    raises_like_torch(lambda lib: lib.poisson(lib.tensor([-1.0])), ember.errors.OpError,
                      "non-negative")
    raises_like_torch(lambda lib: lib.binomial(lib.tensor([5]), lib.tensor([0.5])),
                      ember.DTypeError, "floating")
    raises_like_torch(lambda lib: lib.binomial(lib.tensor([5.0], dtype=lib.float64),
                                               lib.tensor([0.5])), ember.DTypeError, "one dtype")
    rates = ember.full((3, 1000), 2.0)
    out = ember.vmap(ember.poisson, randomness="different")(rates)
    assert out.shape == (3, 1000) and abs(out.mean().item() - 2.0) < 0.15
    with pytest.raises(ember.errors.OpError, match="randomness"):
        ember.vmap(ember.poisson)(rates)
    with pytest.raises(ember.errors.OpError, match="poisson: rates up to"):
        ember.poisson(ember.tensor([1.0, float("inf")]))


def test_sampling_edges_match_torch():
    assert_same(ember.poisson(ember.tensor(0.0)), torch.poisson(torch.tensor(0.0)))  # 0-d
    nan = float("nan")
    assert_same(ember.binomial(ember.tensor([5.0, 5.0]), ember.tensor([nan, 1.0])),
                torch.binomial(torch.tensor([5.0, 5.0]), torch.tensor([nan, 1.0])))
    for lib in (ember, torch):  # poisson's gradient is zero, and reaches the rate
        rate = lib.tensor([1.0, 2.0], requires_grad=True)
        lib.poisson(rate).sum().backward()
        assert rate.grad.tolist() == [0.0, 0.0]
