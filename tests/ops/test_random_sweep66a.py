"""Random fills and samplers against PyTorch 2.13 (sweep66a): parameter checks and edge cases."""

import math

import numpy as np
import pytest
import torch

import ember
from ember.errors import ArgumentError, ArgumentTypeError


@pytest.mark.parametrize("fill, args", [("exponential_", (math.nan,)),
                                        ("cauchy_", (0.0, math.nan)),
                                        ("log_normal_", (0.0, math.nan))])
def test_a_nan_scale_is_refused_like_torch(fill, args):
    with pytest.raises(RuntimeError, match="expects"):
        getattr(torch.zeros(2), fill)(*args)
    with pytest.raises(ArgumentError, match=f"{fill} expects .* > 0.0, but found .*=nan"):
        getattr(ember.zeros(2), fill)(*args)  # (it filled NaNs)


@pytest.mark.parametrize("fill, args", [("exponential_", ("a",)), ("cauchy_", ("a",)),
                                        ("log_normal_", (0.0, "a")), ("geometric_", (0.5j,)),
                                        ("uniform_", ("a",)), ("uniform_", (0.0, "b"))])
def test_a_parameter_that_is_no_number_is_a_type_error_naming_the_fill(fill, args):
    with pytest.raises(TypeError):
        getattr(torch.zeros(2), fill)(*args)
    with pytest.raises(ArgumentTypeError, match=f"{fill}: .* must be a number"):
        getattr(ember.zeros(2), fill)(*args)


@pytest.mark.parametrize("fill, args", [("exponential_", (ember.tensor(2.0),)),
                                        ("geometric_", (ember.tensor(0.5),)),
                                        ("cauchy_", (1, 2)), ("log_normal_", (0, 1)),
                                        ("uniform_", (-2 ** 70, 2 ** 70))])
def test_fill_parameters_still_take_ints_and_one_element_tensors(fill, args):
    out = getattr(ember.zeros(3, dtype=ember.float64), fill)(*args)
    assert out.shape == (3,) and bool(out.isfinite().all())


class _TopDraws:
    """A NumPy-generator stand-in whose uniform draws are all the largest below 1."""

    def random(self, shape):
        return np.full(shape, 1 - 2 ** -53)


def test_multinomial_with_replacement_never_draws_a_trailing_zero_weight_category():
    g = ember.Generator()
    g._rng = _TopDraws()  # (0.1 summed ten times is 1 - 2**-53: the top draw passed it)
    probs = ember.tensor([[0.1] * 10 + [0.0, 0.0], [0.5, 0.5, 0.0, 0.0, 0.0, 0.0] * 2],
                         dtype=ember.float64)
    assert ember.multinomial(probs, 3, True, generator=g).tolist() == [[9] * 3, [7] * 3]
    t = torch.multinomial(torch.tensor(probs.numpy()), 10000, True)
    assert set(t.unique().tolist()) <= set(range(10)) | {6, 7}  # (torch: never a zero one)


@pytest.mark.parametrize("args", [(ember.tensor([0.0, 100.0, 200.0]),),
                                  (0.0, ember.tensor([1.0, 2.0, 3.0]))])
def test_normal_fill_takes_numbers_not_a_tensor_of_means_like_torch(args):
    with pytest.raises(TypeError, match="must be float"):
        torch.zeros(3).normal_(*(torch.tensor(a.numpy()) if isinstance(a, ember.Tensor) else a
                                 for a in args))
    with pytest.raises(TypeError, match="must be float, not a Tensor of shape"):
        ember.zeros(3).normal_(*args)  # (a tensor of means was broadcast, one per element)
    with pytest.raises(TypeError, match="must be float, not a Tensor of shape"):
        ember.nn.init.normal_(ember.zeros(3), *args)


def test_normal_fill_takes_a_one_element_tensor_as_its_number():
    out = ember.zeros(1000, dtype=ember.float64).normal_(ember.tensor(5.0), ember.tensor(0.5))
    assert abs(float(out.mean()) - 5.0) < 0.1 and abs(float(out.std()) - 0.5) < 0.05


@pytest.mark.parametrize("fill, args", [("normal_", (-60000.0, 60000.0)),
                                        ("log_normal_", (-70000.0, 70000.0))])
def test_half_fills_round_the_whole_sample_once_like_torch(fill, args):
    """In float16, std * z overflowed where mean + std * z does not: normal_(-6e4, 6e4) gave
    +inf for z > 1.09 (14% +inf, torch 2%)."""
    n = 200_000
    ours = getattr(ember.empty(n, dtype=ember.float16), fill)(*args).float().numpy()
    theirs = getattr(torch.empty(n, dtype=torch.float16), fill)(*args).float().numpy()
    for inf in (np.inf, -np.inf, 0):
        assert abs((ours == inf).mean() - (theirs == inf).mean()) < 0.01


def test_normal_fill_is_mean_plus_std_times_randn_to_rounding():
    ember.manual_seed(3)
    filled = ember.empty(1000, dtype=ember.float64).normal_(2.0, 3.0)
    ember.manual_seed(3)
    assert np.allclose(filled.numpy(), ember.randn(1000, dtype=ember.float64).numpy() * 3 + 2,
                       rtol=0, atol=1e-12)


def test_a_new_generator_starts_from_torchs_default_seed_and_repeats():
    assert ember.Generator().initial_seed() == torch.Generator().initial_seed() == 67280421310721
    first = ember.rand(3, generator=ember.Generator())
    assert bool((ember.rand(3, generator=ember.Generator()) == first).all())
    again = ember.Generator().manual_seed(67280421310721)
    assert bool((ember.rand(3, generator=again) == first).all())
    # the default generator starts from entropy, as torch's (no manual_seed: runs differ)
    assert ember.default_generator.initial_seed() != 67280421310721


@pytest.mark.parametrize("fill", ["normal_", "uniform_", "exponential_", "bernoulli_"])
def test_a_fill_on_the_meta_device_draws_nothing_like_torch(fill):
    """normal_ and uniform_ drew a CPU tensor of the meta tensor's size first (36 s and 1.6 GB
    for 20000 x 20000) and moved the default generator, which torch's leave alone."""
    for lib in (torch, ember):
        lib.manual_seed(0)
        before = lib.get_rng_state()
        out = getattr(lib.empty(10 ** 6, 10 ** 6, device="meta"), fill)()
        assert out.device.type == "meta"
        assert bool((lib.get_rng_state() == before).all())


class _Draws:
    """A NumPy-generator stand-in whose uniform draws are all ``value``."""

    def __init__(self, value):
        self.value = value

    def random(self, shape):
        return np.full(shape, self.value)


@pytest.mark.parametrize("dtype", [ember.bfloat16, ember.float16])
def test_a_constant_probability_is_not_rounded_to_a_half_dtype(dtype, monkeypatch):
    """As torch reads p as a double: rounded to bfloat16, a keep probability of 0.9 was 0.8984,
    so bf16 dropout dropped 10.16% (torch 10.00%) and bernoulli_(0.3) drew 0.3008."""
    g = ember.Generator()
    g._rng = _Draws(0.89995)  # (between 0.9 rounded to bfloat16 or float16, and 0.9)
    assert ember.bernoulli(ember.zeros(4, dtype=dtype), 0.9, generator=g).tolist() == [1] * 4
    assert ember.zeros(4, dtype=dtype).bernoulli_(0.9, generator=g).tolist() == [1] * 4
    kept = ember.nn.functional.dropout(ember.ones(4, dtype=dtype), 0.1, generator=g)
    assert kept.dtype is dtype and bool((kept > 1).all())
    assert bool((ember.nn.functional.dropout2d(ember.ones(1, 4, 2, 2, dtype=dtype), 0.1,
                                                generator=g) > 1).all())
    monkeypatch.setattr(ember.default_generator, "_rng", _Draws(0.89995))
    out, mask = ember.native_dropout(ember.ones(4, dtype=dtype), 0.1, True)
    assert out.dtype is dtype and mask.tolist() == [True] * 4


def test_multinomial_with_no_categories_like_torch():
    """A NumPy reshape error ('cannot reshape array of size 0') before."""
    assert tuple(torch.multinomial(torch.ones(0, 0), 1, True).shape) == (0, 1)
    assert tuple(ember.multinomial(ember.ones(0, 0), 1, True).shape) == (0, 1)
    for shape in ((2, 0), (0,)):
        with pytest.raises(RuntimeError):
            torch.multinomial(torch.ones(shape), 1, True)
        with pytest.raises(ember.errors.OpError, match="sums to 0"):
            ember.multinomial(ember.ones(shape), 1, True)


@pytest.mark.parametrize("args", [(-65505, 0), (0, 65506)])
def test_integer_draws_past_float16s_range_are_refused_like_torch(args):
    """The bound was compared with NumPy's float16 max, to which 65505 rounds: it passed."""
    with pytest.raises(RuntimeError, match="out of bounds"):
        torch.zeros(3, dtype=torch.float16).random_(*args)
    with pytest.raises(ArgumentError, match="out of bounds for float16"):
        ember.zeros(3, dtype=ember.float16).random_(*args)
    with pytest.raises(ArgumentError, match="out of bounds for float16"):
        ember.randint(*args, (3,), dtype=ember.float16)


@pytest.mark.parametrize("args, kwargs", [((5, 10), {}), ((10,), {}), ((), {"high": 10})])
def test_randint_requires_a_size_like_torch(args, kwargs):
    with pytest.raises(TypeError):
        torch.randint(*args, **kwargs)
    with pytest.raises(TypeError, match="randint\\(\\) missing its size"):
        ember.randint(*args, **kwargs)  # (randint(5, 10) drew a 0-d tensor)
    assert ember.randint(*args, **kwargs, size=()).shape == ()


def test_normal_of_tensors_draws_in_outs_dtype_like_torch():
    """A complex out drew real noise (imaginary part 0) where torch draws complex noise, and
    dtype= was ignored (float64 asked, float32 drawn)."""
    n = 100_000
    out = ember.empty(n, dtype=ember.complex64)
    ember.normal(ember.zeros(n), ember.ones(n), out=out)
    assert abs(float(out.imag.var()) - 0.5) < 0.02 and abs(float(out.real.var()) - 0.5) < 0.02
    assert ember.normal(ember.zeros(3), 1.0, dtype=ember.float64).dtype is ember.float64
    with pytest.raises(TypeError, match="requires_grad= goes with number mean and std"):
        ember.normal(ember.zeros(3), ember.ones(3), requires_grad=True)  # (it was ignored)
    with pytest.raises(TypeError):
        torch.normal(torch.zeros(3), torch.ones(3), requires_grad=True)


def test_rrelu_slopes_in_bfloat16_cover_the_range_like_torch():
    """Drawn on bfloat16's grid and scaled there, the slopes took 157 values, their top 0.2988
    below upper (torch: 206 values up to 0.30078, upper rounded)."""
    x = -ember.ones(200_000, dtype=ember.bfloat16)
    slopes = -ember.nn.functional.rrelu(x, 0.1, 0.3, training=True).float().numpy()
    theirs = -torch.nn.functional.rrelu(-torch.ones(200_000, dtype=torch.bfloat16), 0.1, 0.3,
                                        training=True).float().numpy()
    assert slopes.max() == theirs.max() and len(np.unique(slopes)) == len(np.unique(theirs))


@pytest.mark.parametrize("k", [1, 3, 7, 8])
def test_multinomial_without_replacement_takes_the_largest_keys_in_order(k):
    """The partial selection (a partition, then a sort of k) matches a full sort's first k."""
    from ember.ops.random import _top_keys

    keys = np.random.default_rng(k).gumbel(size=(50, 8))
    keys[:, 2] = -np.inf  # (a zero weight: last)
    full = np.argsort(-keys, axis=1, kind="stable")[:, :k]
    np.testing.assert_array_equal(_top_keys(keys, k), full)
    drawn = ember.multinomial(ember.rand(50, 8) + 0.1, k)
    assert all(len(set(row)) == k for row in drawn.tolist())
