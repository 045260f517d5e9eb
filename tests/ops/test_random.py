"""Random sampling: reproducibility, generators, distributions."""

import numpy as np
import pytest
import torch

import ember
from ember.errors import OpError


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
    with pytest.raises(RuntimeError, match="without replacement"):  # (torch's class)
        ember.multinomial(probs, 5)
    with pytest.raises(RuntimeError):
        torch.multinomial(torch.tensor(probs.tolist()), 5)


@pytest.mark.parametrize("tensor_mean, tensor_std", [(True, False), (False, True), (True, True)])
def test_normal_with_tensor_arguments_has_zero_gradient_as_torch(tensor_mean, tensor_std):
    """PyTorch records normal(mean, std) with a zero gradient to both (derivatives.yaml), so
    score-function code taking log_prob of the sample gets the same gradients in both."""
    grads = []
    for lib in (ember, torch):
        mean = lib.zeros(3, dtype=lib.float64, requires_grad=True) if tensor_mean else 0.0
        std = lib.ones(3, dtype=lib.float64, requires_grad=True) if tensor_std else 1.0
        out = lib.normal(mean, std)
        assert out.requires_grad and out.shape == (3,)
        leaves = [t for t in (mean, std) if isinstance(t, lib.Tensor)]
        grads.append([g.numpy() for g in lib.autograd.grad(out.sum(), leaves)])
    for mine, theirs in zip(*grads):
        np.testing.assert_array_equal(mine, theirs)
    assert not ember.rand(3).requires_grad and ember.rand(3, requires_grad=True).requires_grad


@pytest.mark.parametrize("call, match", [
    (lambda m: m.multinomial(m.tensor([0.0, 0.0]), 1), "row 0 .* sums to 0"),
    (lambda m: m.multinomial(m.tensor([[1.0, 0.0], [0.0, 0.0]]), 1, True), "row 1 .* sums to 0"),
    (lambda m: m.multinomial(m.tensor([-1.0, 2.0]), 1), "finite and non-negative"),
    (lambda m: m.multinomial(m.tensor([float("nan"), 2.0]), 1, True), "finite and non-negative"),
    (lambda m: m.multinomial(m.tensor([float("inf"), 2.0]), 1), "finite and non-negative"),
    (lambda m: m.multinomial(m.tensor([1.0, 2.0]), 0), "num_samples must be positive"),
    (lambda m: m.bernoulli(m.tensor([0.5, 1.5])), r"probabilities must lie in \[0, 1\]"),
    (lambda m: m.bernoulli(m.tensor([-0.1])), r"probabilities must lie in \[0, 1\]"),
    (lambda m: m.bernoulli(m.tensor([float("nan")])), r"probabilities must lie in \[0, 1\]"),
    (lambda m: m.tensor([0.5]).bernoulli_(1.5), r"p must lie in \[0, 1\], got 1.5"),
    (lambda m: m.normal(0.0, -1.0, (2,)), "std must be >= 0, got -1.0"),
    (lambda m: m.normal(0.0, float("nan"), (2,)), "std must be >= 0, got nan"),
    (lambda m: m.normal(m.zeros(2), -1.0), "std must be >= 0, got -1.0"),
    (lambda m: m.normal(m.zeros(2), m.tensor([-1.0, 1.0])), r"got -1.0 in a \(2,\) float32"),
    (lambda m: m.normal(0.0, m.tensor([float("nan")])), "std must be >= 0, got nan"),
])
def test_invalid_distributions_are_errors_like_torch(call, match):
    with pytest.raises(RuntimeError):
        call(torch)
    with pytest.raises(OpError, match=match):
        call(ember)


@pytest.mark.parametrize("call", [lambda: ember.rand(2, dtype=ember.int64),
                                  lambda: ember.randn(2, dtype=ember.int32),
                                  lambda: ember.normal(ember.tensor([0, 1]), 1.0),
                                  lambda: ember.normal(0.0, 1.0, (2,), dtype=ember.bool)])
def test_floating_samplers_name_themselves_on_integer_dtypes(call):
    with pytest.raises(ember.DTypeError, match=r"^(rand|randn|normal): expected a floating"
                                               r" dtype, got \w+\. Hint"):
        call()


def test_multinomial_needs_floating_probabilities():
    with pytest.raises(ember.DTypeError, match="multinomial: probabilities must be floating"):
        ember.multinomial(ember.tensor([1, 2]), 1)


def test_compiled_sampling_checks_each_calls_values():
    # the checks run where the op runs, so a compiled function makes them on every call
    bern = ember.jit.compile(lambda p: ember.bernoulli(p) * 2)
    assert bern(ember.tensor([0.0, 1.0])).tolist() == [0.0, 2.0]
    with pytest.raises(OpError, match="bernoulli: probabilities"):
        bern(ember.tensor([0.0, 2.0]))
    draw = ember.jit.compile(lambda s: ember.normal(ember.zeros(2), s) + 1)
    assert draw(ember.zeros(2)).tolist() == [1.0, 1.0]
    with pytest.raises(OpError, match="normal: std must be >= 0"):
        draw(ember.tensor([1.0, -1.0]))


@pytest.mark.parametrize("dtype", ["float16", "bfloat16"])
def test_half_precision_rand_stays_below_one_like_torch(dtype):
    x = ember.rand(200_000, dtype=getattr(ember, dtype), generator=ember.Generator().manual_seed(0))
    assert x.max().item() < 1.0 and x.min().item() >= 0.0
    assert abs(x.float().mean().item() - 0.5) < 0.01


def test_seeds_take_torchs_range_and_remap_negative_ones():
    for seed in (-3, -(2 ** 63), 2 ** 64 - 1, 0):
        want = torch.Generator().manual_seed(seed).initial_seed()
        assert ember.Generator().manual_seed(seed).initial_seed() == want
    a = ember.rand(3, generator=ember.Generator().manual_seed(-3))
    b = ember.rand(3, generator=ember.Generator().manual_seed(2 ** 64 - 3))
    assert a.tolist() == b.tolist()  # the same stream, as in PyTorch
    for seed in (-(2 ** 63) - 1, 2 ** 64):
        with pytest.raises(ValueError, match=r"manual_seed: the seed must be in \[-2\*\*63"):
            ember.manual_seed(seed)


def test_states_are_uint8_tensors_as_in_torch_and_old_dicts_still_restore():
    g = ember.Generator().manual_seed(2 ** 64 - 1)  # the largest seed survives the bytes
    state = g.get_state()
    assert state.dtype == ember.uint8 and state.shape == (45,)
    assert torch.get_rng_state().dtype == torch.uint8  # the type torch users handle
    first = ember.randn(3, generator=g).numpy()
    ember.Generator().set_state(state)  # restoring elsewhere leaves g alone
    np.testing.assert_array_equal(ember.randn(3, generator=g.set_state(state)).numpy(), first)
    assert g.initial_seed() == 2 ** 64 - 1
    legacy = {"seed": 5, "bit_generator": np.random.PCG64(5).state}  # what Ember used to save
    np.testing.assert_array_equal(ember.rand(4, generator=ember.Generator().set_state(legacy)),
                                  ember.rand(4, generator=ember.Generator().manual_seed(5)))
    with pytest.raises(OpError, match=r"45 bytes.*\(3,\) float32"):
        ember.set_rng_state(ember.zeros(3))


def test_copy_of_a_generator_draws_on_its_own_like_torch():
    import copy

    for lib in (torch, ember):
        g = lib.Generator()
        g.manual_seed(3)
        for copier in (copy.copy, copy.deepcopy):
            made = copier(g)
            assert made is not g
            assert lib.rand(3, generator=g).tolist() == lib.rand(3, generator=made).tolist()
