"""_sample_von_mises: samples against torch's VonMises, seeding, dtypes, errors, vmap and
ember.jit (a random op of the graph, drawn afresh on every call)."""

import numpy as np
import pytest
import torch

import ember
from ember.errors import DTypeError, OpError


def _two_sample_ks(a, b):
    a, b = np.sort(a), np.sort(b)
    grid = np.concatenate([a, b])
    gap = np.searchsorted(a, grid, "right") / len(a) - np.searchsorted(b, grid, "right") / len(b)
    return np.abs(gap).max()


@pytest.mark.parametrize(("loc", "kappa"), [(0.5, 0.05), (-2.5, 2.0), (3.0, 60.0)])
def test_samples_follow_torchs_distribution(loc, kappa):
    n = 20_000
    ember.manual_seed(0)
    torch.manual_seed(0)
    mine = ember._sample_von_mises(ember.full((n,), loc, dtype=ember.float64),
                                   ember.full((n,), kappa, dtype=ember.float64)).numpy()
    ref = torch.distributions.VonMises(torch.tensor(loc, dtype=torch.float64),
                                       torch.tensor(kappa, dtype=torch.float64)).sample((n,))
    assert (mine >= -np.pi).all() and (mine <= np.pi).all()
    assert _two_sample_ks(mine, ref.numpy()) < 0.025  # ~1e-5 chance for equal distributions


def test_seeds_dtypes_shapes_and_errors():
    for dtype in (ember.float32, ember.float64):
        z = ember._sample_von_mises(ember.zeros(2, 1, dtype=dtype), ember.ones(3, dtype=dtype))
        assert z.dtype is dtype and z.shape == (2, 3)
    ember.manual_seed(3)
    first = ember._sample_von_mises(ember.zeros(5), ember.ones(5))
    g = ember.Generator().manual_seed(3)
    np.testing.assert_array_equal(
        ember._sample_von_mises(ember.zeros(5), ember.ones(5), generator=g).numpy(),
        first.numpy())
    with pytest.raises(OpError, match="_sample_von_mises: expected finite, non-negative"):
        ember._sample_von_mises(ember.zeros(2), ember.tensor([1.0, -1.0]))
    with pytest.raises(DTypeError, match="floating-point"):
        ember._sample_von_mises(ember.zeros(2), ember.tensor([1, 2]))
    with pytest.raises(DTypeError, match="one dtype"):
        ember._sample_von_mises(ember.zeros(2), ember.ones(2).double())


def test_vmap_and_jit_draw_afresh():
    rows = ember.vmap(ember._sample_von_mises, randomness="different")(
        ember.zeros(3, 2000), ember.full((3, 2000), 4.0))
    assert rows.shape == (3, 2000) and not np.array_equal(rows[0].numpy(), rows[1].numpy())
    with pytest.raises(OpError, match="randomness"):
        ember.vmap(ember._sample_von_mises)(ember.zeros(2, 3), ember.ones(2, 3))

    @ember.jit.compile
    def draw(loc, kappa):
        return ember.distributions.VonMises(loc, kappa).sample((4000,))

    loc, kappa = ember.tensor([1.0, -1.0]), ember.tensor([8.0, 8.0])
    a, b = draw(loc, kappa), draw(loc, kappa)
    assert a.shape == (4000, 2) and not np.array_equal(a.numpy(), b.numpy())
    np.testing.assert_allclose(np.angle(np.exp(1j * a.numpy()).mean(0)), [1.0, -1.0], atol=0.05)
