"""Random sampling: reproducibility, generators, distributions."""

import numpy as np
import pytest

import ember


def test_manual_seed_makes_runs_repeatable():
    ember.manual_seed(123)
    a = [ember.rand(3).numpy(), ember.randn(2, 2).numpy(), ember.randint(0, 9, (4,)).numpy()]
    ember.manual_seed(123)
    b = [ember.rand(3).numpy(), ember.randn(2, 2).numpy(), ember.randint(0, 9, (4,)).numpy()]
    for x, y in zip(a, b):
        np.testing.assert_array_equal(x, y)


def test_generators_are_independent_and_restorable():
    g = ember.Generator().manual_seed(5)
    state = g.get_state()
    first = ember.randn(4, generator=g).numpy()
    ember.randn(10)  # the default generator does not disturb g
    g.set_state(state)
    np.testing.assert_array_equal(ember.randn(4, generator=g).numpy(), first)
    assert g.initial_seed() == 5


def test_distributions_have_the_right_moments():
    g = ember.Generator().manual_seed(0)
    u = ember.rand(100_000, generator=g).numpy()
    n = ember.randn(100_000, generator=g).numpy()
    assert u.min() >= 0 and u.max() < 1 and abs(u.mean() - 0.5) < 0.01
    assert abs(n.mean()) < 0.02 and abs(n.std() - 1) < 0.02
    b = ember.bernoulli(ember.full((100_000,), 0.3), generator=g).numpy()
    assert abs(b.mean() - 0.3) < 0.01
    m = ember.normal(2.0, 3.0, (100_000,), generator=g).numpy()
    assert abs(m.mean() - 2) < 0.05 and abs(m.std() - 3) < 0.05
    assert sorted(ember.randperm(50, generator=g).tolist()) == list(range(50))
    assert ember.rand(2, dtype=ember.float64).dtype is ember.float64
    assert ember.randint(3, (5,)).dtype is ember.int64


def test_multinomial_frequencies_and_no_replacement():
    g = ember.Generator().manual_seed(1)
    probs = ember.tensor([0.1, 0.0, 0.6, 0.3])
    draws = ember.multinomial(probs, 20_000, replacement=True, generator=g).numpy()
    freq = np.bincount(draws, minlength=4) / draws.size
    np.testing.assert_allclose(freq, [0.1, 0.0, 0.6, 0.3], atol=0.015)
    rows = ember.multinomial(ember.ones(5, 6), 6, generator=g).numpy()
    assert all(sorted(r) == list(range(6)) for r in rows)
    with pytest.raises(ValueError, match="without replacement"):
        ember.multinomial(probs, 5)


def test_normal_with_tensor_mean_is_differentiable():
    mean = ember.zeros(3, requires_grad=True)
    out = ember.normal(mean, 1.0)
    out.backward(ember.ones(3))
    np.testing.assert_allclose(mean.grad.numpy(), np.ones(3))
    assert not ember.rand(3).requires_grad and ember.rand(3, requires_grad=True).requires_grad
