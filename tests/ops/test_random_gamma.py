"""_standard_gamma (samples against PyTorch's, seeding, dtypes, errors, vmap) and its implicit
reparameterization gradient _standard_gamma_grad (against finite differences of the CDF and
against torch._standard_gamma_grad)."""

import numpy as np
import pytest
import torch

import ember
from ember.errors import DTypeError, GradError, OpError


def _cdf_derivative(a: torch.Tensor, z: torch.Tensor) -> torch.Tensor:
    """dz/da = -(dP/da) / pdf at fixed P(a, z), with dP/da by central differences."""
    h = 1e-6
    dp_da = (torch.special.gammainc(a + h, z) - torch.special.gammainc(a - h, z)) / (2 * h)
    return -dp_da / torch.distributions.Gamma(a, 1.0).log_prob(z).exp()


def test_standard_gamma_grad_matches_finite_differences_and_torch():
    a = torch.tensor([0.05, 0.5, 1.0, 3.0, 30.0, 300.0, 2.0], dtype=torch.float64)
    z = torch.tensor([0.001, 0.3, 2.0, 5.0, 25.0, 330.0, 8.0], dtype=torch.float64)
    got = ember._standard_gamma_grad(ember.tensor(a.numpy()), ember.tensor(z.numpy())).numpy()
    np.testing.assert_allclose(got, _cdf_derivative(a, z).numpy(), rtol=1e-5)
    np.testing.assert_allclose(got, torch._standard_gamma_grad(a, z).numpy(), rtol=1e-3)
    one = ember._standard_gamma_grad(ember.tensor([2.0]), ember.tensor([[1.0], [3.0]]))
    assert one.shape == (2, 1)  # broadcast


def test_backward_and_jvp_of_a_sample_are_its_implicit_derivative():
    ember.manual_seed(0)
    a = ember.tensor([0.2, 1.0, 4.0, 50.0], dtype=ember.float64, requires_grad=True)
    z = ember._standard_gamma(a)
    z.sum().backward()
    a_t, z_t = torch.from_numpy(a.detach().numpy()), torch.from_numpy(z.detach().numpy())
    np.testing.assert_allclose(a.grad.numpy(), _cdf_derivative(a_t, z_t).numpy(), rtol=1e-5)
    ember.manual_seed(0)
    z2, tangent = ember.func.jvp(ember._standard_gamma, (a.detach(),), (ember.ones(4).double(),))
    np.testing.assert_array_equal(z2.numpy(), z.detach().numpy())  # the seed fixes the draw
    np.testing.assert_allclose(tangent.numpy(), a.grad.numpy(), rtol=1e-12)


def test_second_derivative_is_refused_as_in_torch():
    a = ember.tensor([2.0], dtype=ember.float64, requires_grad=True)
    (g,) = ember.autograd.grad(ember._standard_gamma(a).sum(), a, create_graph=True)
    with pytest.raises(GradError, match="_standard_gamma_grad: it has no derivative"):
        g.sum().backward()
    with pytest.raises(GradError, match="no derivative"):  # forward over reverse
        ember.func.jvp(lambda a: ember.func.grad(lambda a: ember._standard_gamma(a).sum())(a),
                       (a.detach(),), (ember.ones(1).double(),))


@pytest.mark.parametrize("a", [0.1, 1.0, 9.0])
def test_samples_follow_torchs_distribution(a):
    """Two-sample Kolmogorov–Smirnov distance to torch._standard_gamma's draws."""
    n = 20_000
    ember.manual_seed(1)
    torch.manual_seed(1)
    mine = np.sort(ember._standard_gamma(ember.full((n,), a)).numpy())
    ref = np.sort(torch._standard_gamma(torch.full((n,), a)).numpy())
    grid = np.concatenate([mine, ref])
    distance = np.abs(np.searchsorted(mine, grid, "right") - np.searchsorted(ref, grid, "right"))
    assert distance.max() / n < 0.03  # ~1e-6 chance of failing for equal distributions


def test_seeds_dtypes_and_underflow():
    for dtype in (ember.float16, ember.bfloat16, ember.float32, ember.float64):
        z = ember._standard_gamma(ember.full((2, 3), 0.5, dtype=dtype))
        assert z.dtype is dtype and z.shape == (2, 3)
    tiny = ember._standard_gamma(ember.full((1000,), 1e-3))
    assert tiny.min().item() > 0  # draws below float32's range stay positive, as in torch
    ember.manual_seed(3)
    first = ember._standard_gamma(ember.ones(5))
    ember.manual_seed(3)
    np.testing.assert_array_equal(ember._standard_gamma(ember.ones(5)).numpy(), first.numpy())
    g = ember.Generator().manual_seed(3)
    np.testing.assert_array_equal(ember._standard_gamma(ember.ones(5), generator=g).numpy(),
                                  first.numpy())


def test_bad_input_names_the_op():
    with pytest.raises(OpError, match="_standard_gamma: expected non-negative concentrations"):
        ember._standard_gamma(ember.tensor([1.0, float("nan")]))
    with pytest.raises(OpError, match="minimum of -1.0"):
        ember._standard_gamma(ember.tensor([-1.0]))
    with pytest.raises(DTypeError, match="_standard_gamma: expected a floating-point"):
        ember._standard_gamma(ember.tensor([1, 2]))
    with pytest.raises(DTypeError, match="one dtype"):
        ember._standard_gamma_grad(ember.ones(2), ember.ones(2).double())


def test_vmap_draws_each_row_afresh():
    rows = ember.vmap(ember._standard_gamma, randomness="different")(ember.full((3, 4000), 2.0))
    assert rows.shape == (3, 4000) and abs(rows.mean().item() - 2.0) < 0.1
    assert not np.array_equal(rows[0].numpy(), rows[1].numpy())
    with pytest.raises(OpError, match="randomness"):
        ember.vmap(ember._standard_gamma)(ember.ones(2, 3))
