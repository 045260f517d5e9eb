"""Random ops against PyTorch: cases the sweep60k differential sweep found diverging."""

import math

import pytest
import torch

import ember
from ember.errors import ArgumentError, DTypeError


@pytest.mark.parametrize("dtype, n", [("float16", 2050), ("float32", 2 ** 24 + 2)])
def test_randperm_past_the_float_exact_integers_raises_like_torch(dtype, n):
    with pytest.raises(RuntimeError, match="n cannot be greater than"):
        torch.randperm(n, dtype=getattr(torch, dtype))
    with pytest.raises(ArgumentError, match=f"randperm: n cannot be greater than .* {dtype}"):
        ember.randperm(n, dtype=getattr(ember, dtype))
    last = ember.randperm(2049, dtype=ember.float16).to(ember.int64)  # 0 … 2048 are exact
    assert sorted(last.tolist()) == list(range(2049))


@pytest.mark.parametrize("dtype", ["bool", "complex64"])
def test_randperm_refuses_bool_and_complex_like_torch(dtype):
    with pytest.raises(NotImplementedError):
        torch.randperm(2, dtype=getattr(torch, dtype))
    with pytest.raises(DTypeError, match=f"randperm: not implemented for {dtype}"):
        ember.randperm(2, dtype=getattr(ember, dtype))


@pytest.mark.parametrize("bounds", [(), (5,), (-3, 2)])
def test_random_fill_refuses_complex_like_torch(bounds):
    with pytest.raises((RuntimeError, NotImplementedError)):
        torch.zeros(3, dtype=torch.complex64).random_(*bounds)
    with pytest.raises(DTypeError, match="random_: integers cannot be drawn into a complex64"):
        ember.zeros(3, dtype=ember.complex64).random_(*bounds)


@pytest.mark.parametrize("draw", [
    lambda m, g: m.rand(3, generator=g), lambda m, g: m.randint(3, (2,), generator=g),
    lambda m, g: m.multinomial(m.ones(3), 2, generator=g),
    lambda m, g: m.zeros(3).normal_(generator=g)])
def test_a_generator_of_the_wrong_type_is_named_in_a_type_error(draw):
    with pytest.raises(TypeError):
        draw(torch, 5)
    with pytest.raises(TypeError, match="generator must be an ember.Generator or None, got "
                                        "builtins.int"):
        draw(ember, 5)


def test_randint_like_takes_high_as_a_keyword_like_torch():
    t = torch.randint_like(torch.zeros(500), high=3)
    e = ember.randint_like(ember.zeros(500), high=3)
    assert e.dtype == ember.float32 and t.dtype == torch.float32
    assert set(e.tolist()) == set(t.tolist()) == {0.0, 1.0, 2.0}
    assert set(ember.randint_like(ember.zeros(500), 2, high=4).tolist()) == {2.0, 3.0}
    with pytest.raises(TypeError):
        torch.randint_like(torch.zeros(3))
    with pytest.raises(TypeError, match="randint_like.* missing its upper bound"):
        ember.randint_like(ember.zeros(3))


@pytest.mark.parametrize("fill, dtype", [
    (lambda t: t.geometric_(0.5), "bool"), (lambda t: t.geometric_(0.5), "complex64"),
    (lambda t: t.bernoulli_(0.5), "complex64"),
    (lambda t: t.bernoulli_(t.real.new_full((3,), 0.5)), "complex64")])
def test_geometric_and_bernoulli_fills_refuse_what_torch_refuses(fill, dtype):
    with pytest.raises(NotImplementedError):
        fill(torch.zeros(3, dtype=getattr(torch, dtype)))
    with pytest.raises(DTypeError, match="not implemented for"):
        fill(ember.zeros(3, dtype=getattr(ember, dtype)))


@pytest.mark.parametrize("mean_dtype, std_dtype, grad", [
    ("float16", "float32", False), ("bfloat16", "float64", False),
    ("float32", "float64", False), ("float16", "bfloat16", False),
    ("complex64", "float64", False), ("float32", "float64", True), ("float16", "float32", True)])
def test_normal_of_tensors_keeps_the_mean_dtype_like_torch(mean_dtype, std_dtype, grad):
    t = torch.normal(torch.zeros(4, dtype=getattr(torch, mean_dtype), requires_grad=grad),
                     torch.ones(4, dtype=getattr(torch, std_dtype), requires_grad=grad))
    e = ember.normal(ember.zeros(4, dtype=getattr(ember, mean_dtype), requires_grad=grad),
                     ember.ones(4, dtype=getattr(ember, std_dtype), requires_grad=grad))
    assert str(t.dtype) == f"torch.{mean_dtype}" and e.dtype == getattr(ember, mean_dtype)


@pytest.mark.parametrize("dtype, low, high", [
    ("float16", 1000, 1001), ("float16", 5, 6), ("bfloat16", 5, 6), ("float32", 1000, 1001)])
def test_uniform_fill_never_reaches_to_and_covers_the_grid_evenly_like_torch(dtype, low, high):
    g = ember.Generator().manual_seed(0)
    e = ember.zeros(100000, dtype=getattr(ember, dtype)).uniform_(low, high, generator=g)
    t = torch.zeros(100000, dtype=getattr(torch, dtype)).uniform_(low, high)
    assert float(e.max()) < high and float(t.max()) < high
    assert float(e.min()) >= low
    if (dtype, low) == ("float16", 1000):  # the grid is {1000, 1000.5}: half each, as torch
        assert abs(float((e == 1000.5).double().mean()) - 0.5) < 0.02
        assert set(t.unique().tolist()) == set(e.unique().tolist()) == {1000.0, 1000.5}


def test_uniform_fill_rounds_its_bounds_to_the_dtype_first_like_torch():
    e = ember.zeros(1000, dtype=ember.bfloat16).uniform_(-1003, -999)
    t = torch.zeros(1000, dtype=torch.bfloat16).uniform_(-1003, -999)
    assert set(e.tolist()) == set(t.tolist()) == {-1004.0}


@pytest.mark.parametrize("seed", [1.5, "3", True])
def test_generator_manual_seed_refuses_a_non_integer_like_torch(seed):
    with pytest.raises(RuntimeError, match="manual_seed expected a long"):
        torch.Generator().manual_seed(seed)
    with pytest.raises(TypeError, match="manual_seed expected an integer seed"):
        ember.Generator().manual_seed(seed)


def test_the_global_manual_seed_converts_with_int_like_torch():
    assert torch.manual_seed(1.5).initial_seed() == ember.manual_seed(1.5).initial_seed() == 1
    assert ember.manual_seed(ember.tensor(3)).initial_seed() == 3
    assert ember.Generator().manual_seed(ember.tensor(7).numpy()[()]).initial_seed() == 7


def test_random_thread_safe_generator_is_none_outside_thread_workers_like_torch():
    assert torch.random.thread_safe_generator() is None
    assert ember.random.thread_safe_generator() is None


@pytest.mark.parametrize("call, error", [
    (lambda g: g.get_offset(), RuntimeError), (lambda g: g.set_offset(3), RuntimeError),
    (lambda g: g.graphsafe_get_state(), NotImplementedError),
    (lambda g: g.graphsafe_set_state(g), NotImplementedError)])
def test_generator_offset_and_graphsafe_methods_raise_as_torch_cpu(call, error):
    with pytest.raises(error):
        call(torch.Generator())
    with pytest.raises(error):
        call(ember.Generator())


def test_fork_rng_takes_torchs_private_keywords_and_positions():
    ember.manual_seed(0)
    with ember.random.fork_rng(None, True, "mine", "devs", "cuda"):
        inside = ember.rand(2)
    with torch.random.fork_rng(None, False, "mine", "devs", "cuda"):  # (device_type 5th)
        pass
    assert bool((ember.rand(2) == inside).all())


@pytest.mark.parametrize("name", ["get_offset", "set_offset", "graphsafe_get_state",
                                  "graphsafe_set_state"])
def test_generator_methods_that_always_raise_are_annotated_noreturn(name):
    import typing
    assert typing.get_type_hints(getattr(ember.Generator, name))["return"] is typing.NoReturn


def test_float32_rand_never_returns_one_like_torch():
    # (its float64 draws rounded to float32 reached 1.0 about once in 3e7; seed 24 has one)
    x = ember.rand(10 ** 6, generator=ember.Generator().manual_seed(24))
    assert float(x.max()) < 1.0 and float(torch.rand(10 ** 6).max()) < 1.0


@pytest.mark.parametrize("dtype, low, high", [
    ("float32", -0.125, 0.125), ("float32", 1000, 1001), ("float64", -1, 1),
    ("float64", 1000, 1001), ("float16", 1000, 1001), ("float16", -1003, -999),
    ("bfloat16", -1, 1), ("bfloat16", -1003, -999), ("float16", 0, 1e-3)])
def test_uniform_fill_is_the_scaled_draws_kept_below_to(dtype, low, high):
    # uniform_ draws in one op; its values are exactly those of the ops it fuses: float32/64
    # rand * (to - from) + from, a draw at `to` moved below it; 16-bit floats: float64 draws
    # rounded down onto the grid
    from ember.ops.discrete import nextafter
    dt = getattr(ember, dtype)
    e = ember.zeros(50000, dtype=dt).uniform_(low, high, generator=ember.Generator().manual_seed(3))
    g = ember.Generator().manual_seed(3)
    lo, hi = (float(ember.tensor(v, dtype=dt)) for v in (low, high))
    if dt.itemsize == 2:
        d = ember.rand(50000, dtype=ember.float64, generator=g) * (hi - lo) + lo
        r = d.to(dt)
        r = ember.where(r.to(ember.float64) > d,
                        nextafter(r, ember.full((), -math.inf, dtype=dt)), r)
    else:
        below = float(nextafter(ember.tensor(hi, dtype=dt), ember.tensor(-math.inf, dtype=dt)))
        r = (ember.rand(50000, dtype=dt, generator=g) * (hi - lo) + lo).clamp(max=below)
    assert e.numpy().tobytes() == r.numpy().tobytes()


@pytest.mark.parametrize("args, kwargs", [
    ((), {"low": 2}), ((2,), {"low": 1}), ((2, 5), {"high": 6}), ((1, 2, 3), {})])
def test_randint_like_refuses_bounds_torch_has_no_overload_for(args, kwargs):
    with pytest.raises(TypeError):
        torch.randint_like(torch.zeros(3), *args, **kwargs)
    with pytest.raises(TypeError, match="randint_like"):
        ember.randint_like(ember.zeros(3), *args, **kwargs)


@pytest.mark.parametrize("args, kwargs", [
    ((5,), {}), ((2, 5), {}), ((), {"high": 5}), ((), {"low": 2, "high": 5}), ((2,), {"high": 5})])
def test_randint_like_reads_its_bounds_like_torch(args, kwargs):
    t = torch.randint_like(torch.zeros(4000), *args, **kwargs)
    e = ember.randint_like(ember.zeros(4000), *args, **kwargs)
    assert (int(e.min()), int(e.max())) == (int(t.min()), int(t.max()))
