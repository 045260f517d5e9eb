"""ember.quasirandom.SobolEngine against torch.quasirandom.SobolEngine: unscrambled and seeded
scrambled draws bit for bit; scrambled draws also by their properties."""

import doctest
from importlib import resources
from pathlib import Path

import numpy as np
import pytest
import torch
from torch.quasirandom import SobolEngine as TorchSobol

import ember
import ember.quasirandom.direction_numbers
import ember.quasirandom.sobol_engine
from ember.quasirandom import SobolEngine
from ember.quasirandom.direction_numbers import MAXDIM, TABLE, direction_numbers


def same_bits(a: np.ndarray, b: np.ndarray) -> bool:
    return a.dtype == b.dtype and a.shape == b.shape and bool(
        (a.view(np.uint8) == b.view(np.uint8)).all())


def test_every_direction_number_matches_torch():
    state = torch.zeros(MAXDIM, 30, dtype=torch.long)
    torch._sobol_engine_initialize_state_(state, MAXDIM)
    np.testing.assert_array_equal(direction_numbers(MAXDIM).T, state.numpy())


@pytest.mark.parametrize("dimension", [1, 2, 5, 40, 1111])
@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_draws_match_torch_bit_for_bit(dimension, dtype):
    ours, theirs = SobolEngine(dimension), TorchSobol(dimension)
    for n in [1, 7, 0, 100, 3000]:
        got = ours.draw(n, dtype=getattr(ember, dtype)).numpy()
        assert same_bits(got, theirs.draw(n, dtype=getattr(torch, dtype)).numpy()), n
    assert ours.num_generated == theirs.num_generated == 3108


def test_first_point_is_zero_and_default_dtype():
    points = SobolEngine(3).draw(4)
    assert points.dtype == ember.float32 and points.shape == (4, 3)
    assert (points[0] == 0).all()
    saved = ember.get_default_dtype()
    ember.set_default_dtype(ember.float64)
    try:
        assert SobolEngine(3).draw(2).dtype == ember.float64
    finally:
        ember.set_default_dtype(saved)


def test_the_last_dimension_matches_torch():
    got = SobolEngine(MAXDIM).fast_forward(1000).draw(24, dtype=ember.float64).numpy()
    want = TorchSobol(MAXDIM).fast_forward(1000).draw(24, dtype=torch.float64).numpy()
    assert same_bits(got, want)


@pytest.mark.parametrize("skip", [1, 5, 64, 1000])
def test_fast_forward_matches_torch_at_start_and_midway(skip):
    ours, theirs = SobolEngine(7).fast_forward(skip), TorchSobol(7).fast_forward(skip)
    assert same_bits(ours.draw(50).numpy(), theirs.draw(50).numpy())
    ours.fast_forward(skip + 3), theirs.fast_forward(skip + 3)
    assert ours.num_generated == theirs.num_generated
    assert same_bits(ours.draw(50).numpy(), theirs.draw(50).numpy())
    assert ours.fast_forward(0) is ours


def test_reset_and_draw_base2_match_torch():
    ours, theirs = SobolEngine(4), TorchSobol(4)
    ours.draw(5), theirs.draw(5)
    assert ours.reset() is ours and ours.num_generated == 0
    theirs.reset()
    for m in [0, 0, 1, 2, 3]:
        assert same_bits(ours.draw_base2(m).numpy(), theirs.draw_base2(m).numpy())
    with pytest.raises(ValueError) as ours_error:
        ours.draw_base2(3)
    with pytest.raises(ValueError) as torch_error:
        theirs.draw_base2(3)
    assert str(ours_error.value) == str(torch_error.value)
    with pytest.raises(ValueError, match="m must be at least 0"):
        ours.draw_base2(-1)


def test_out_is_resized_and_keeps_its_dtype():
    out = ember.empty(7, dtype=ember.float64)
    result = SobolEngine(2).draw(3, out=out)
    want = TorchSobol(2).draw(3, out=torch.empty(7, dtype=torch.float64))
    assert result is out and same_bits(out.numpy(), want.numpy())


def test_attributes_and_repr_match_torch():
    for kwargs in [{}, {"scramble": True}, {"scramble": True, "seed": 3}, {"seed": 1}]:
        ours, theirs = SobolEngine(3, **kwargs), TorchSobol(3, **kwargs)
        assert repr(ours) == repr(theirs)
        for name in ["dimension", "scramble", "seed", "num_generated", "MAXBIT", "MAXDIM"]:
            assert getattr(ours, name) == getattr(theirs, name), name


@pytest.mark.parametrize("dimension", [0, -3, MAXDIM + 1])
def test_bad_dimension_fails_as_torch(dimension):
    with pytest.raises(ValueError) as torch_error:
        TorchSobol(dimension)
    with pytest.raises(ValueError) as ours_error:
        SobolEngine(dimension)
    assert str(ours_error.value) == str(torch_error.value)


def test_bad_arguments_fail_clearly():
    with pytest.raises(TypeError):
        SobolEngine(2.5)
    with pytest.raises(ember.errors.DTypeError, match="SobolEngine.draw: dtype must be float32"):
        SobolEngine(2).draw(3, dtype=ember.int64)
    with pytest.raises(TypeError):
        SobolEngine(2).draw(2.0)
    for seed in [1.5, "3", True]:  # torch's Generator refuses these too, rather than truncating
        with pytest.raises(TypeError, match="SobolEngine: seed must be an integer"):
            SobolEngine(2, scramble=True, seed=seed)
    for seed in [2 ** 64, -2 ** 63 - 1]:  # torch: "Overflow when unpacking long long"
        with pytest.raises(ValueError, match=r"SobolEngine: seed must be in \[-2\*\*63, 2\*\*64\)"):
            SobolEngine(2, scramble=True, seed=seed)
    with pytest.raises(ValueError, match="n must be at least 0"):
        SobolEngine(2).draw(-1)
    with pytest.raises(ValueError, match="n must be at least 0"):
        SobolEngine(2).fast_forward(-1)
    with pytest.raises(ValueError, match="2\\*\\*30 points"):
        SobolEngine(2).fast_forward(2 ** 30).draw()


@pytest.mark.parametrize("start, n", [(0, 1), (5, 3000), (123456789, 1000), (2 ** 30 - 37, 37)])
def test_any_point_xors_the_direction_numbers_of_its_gray_code(start, n):
    """Also near the sequence's end, where torch's step-by-step fast_forward is too slow."""
    got = SobolEngine(70).fast_forward(start).draw(n, dtype=ember.float64).numpy()
    index = np.arange(start, start + n)
    bits = ((index ^ (index >> 1))[:, None] >> np.arange(30)) & 1
    want = np.bitwise_xor.reduce(bits[:, :, None] * direction_numbers(70), axis=1)
    assert same_bits(got, want / 2 ** 30)


def elementary_interval_counts(points: np.ndarray, bits_per_axis: tuple[int, ...]) -> np.ndarray:
    """How many points fall in each box ``prod [k_i / 2**b_i, (k_i + 1) / 2**b_i)``."""
    cells = np.zeros(len(points), dtype=np.int64)
    for axis, bits in enumerate(bits_per_axis):
        cells = (cells << bits) | np.floor(points[:, axis] * 2 ** bits).astype(np.int64)
    return np.bincount(cells, minlength=2 ** sum(bits_per_axis))


@pytest.mark.parametrize("scramble", [False, True])
def test_a_power_of_two_draw_fills_every_elementary_interval_once(scramble):
    m = 8
    points = SobolEngine(6, scramble=scramble, seed=7).draw_base2(m, dtype=ember.float64).numpy()
    assert ((points >= 0) & (points < 1)).all()
    for axis in range(6):  # each coordinate is a (0, m, 1)-net
        assert (elementary_interval_counts(points[:, [axis]], (m,)) == 1).all()
    for low in range(m + 1):  # the first two coordinates are a (0, m, 2)-net
        assert (elementary_interval_counts(points[:, :2], (low, m - low)) == 1).all()
    # the next 2**m points are a net again
    engine = SobolEngine(6, scramble=scramble, seed=7).fast_forward(2 ** m)
    more = engine.draw_base2(m, dtype=ember.float64).numpy()
    assert (elementary_interval_counts(more[:, :2], (m // 2, m - m // 2)) == 1).all()


def test_scrambling_is_reproducible_by_seed_and_differs_by_seed():
    first = SobolEngine(5, scramble=True, seed=11).draw(64).numpy()
    assert same_bits(first, SobolEngine(5, scramble=True, seed=11).draw(64).numpy())
    assert not np.array_equal(first, SobolEngine(5, scramble=True, seed=12).draw(64).numpy())
    assert not np.array_equal(first, SobolEngine(5).draw(64).numpy())
    assert (first[0] != 0).all()  # the digital shift moves the first point off the origin
    ember.manual_seed(0)
    unseeded = SobolEngine(5, scramble=True).draw(64).numpy()
    ember.manual_seed(0)
    assert same_bits(unseeded, SobolEngine(5, scramble=True).draw(64).numpy())


@pytest.mark.parametrize("dimension", [1, 3, 1500])
@pytest.mark.parametrize("seed", [0, 7, -1, 2 ** 40 + 3])
def test_seeded_scrambling_matches_torch_bit_for_bit(dimension, seed):
    ours = SobolEngine(dimension, scramble=True, seed=seed)
    theirs = TorchSobol(dimension, scramble=True, seed=seed)
    for n, dtype in [(1, "float32"), (200, "float32"), (37, "float64")]:
        got = ours.draw(n, dtype=getattr(ember, dtype)).numpy()
        assert same_bits(got, theirs.draw(n, dtype=getattr(torch, dtype)).numpy()), (n, dtype)
    ours.reset().fast_forward(1000), theirs.reset().fast_forward(1000)
    assert same_bits(ours.draw(9).numpy(), theirs.draw(9).numpy())


def test_a_scrambled_first_point_in_float64_is_exact():
    # torch keeps the first point as the default dtype (float32) made at construction and
    # casts it, so its float64 first point loses the low bits of the 30-bit shift
    got = SobolEngine(4, scramble=True, seed=3).draw(2, dtype=ember.float64).numpy()
    want = TorchSobol(4, scramble=True, seed=3).draw(2, dtype=torch.float64).numpy()
    assert same_bits(got[1:], want[1:])
    shift = (got[0] * 2 ** 30).astype(np.int64)
    assert same_bits(got[0], shift / 2 ** 30)
    assert same_bits(want[0], (shift / 2 ** 30).astype(np.float32).astype(np.float64))
    assert not same_bits(got[0], want[0])


def test_scrambled_draws_continue_and_reset_like_unscrambled_ones():
    engine = SobolEngine(3, scramble=True, seed=2)
    whole = engine.draw(40).numpy()
    engine.reset()
    pieces = np.concatenate([engine.draw(1).numpy(), engine.fast_forward(9).draw(30).numpy()])
    assert same_bits(pieces[:1], whole[:1]) and same_bits(pieces[1:], whole[10:])


def test_the_table_ships_as_package_data():
    assert resources.files("ember.quasirandom").joinpath(TABLE).is_file()
    pyproject = (Path(__file__).parents[1] / "pyproject.toml").read_text()
    assert f'"ember.quasirandom" = ["{TABLE}"]' in pyproject


@pytest.mark.parametrize("module", [ember.quasirandom, ember.quasirandom.sobol_engine,
                                    ember.quasirandom.direction_numbers])
def test_docstring_examples_run(module):
    result = doctest.testmod(module, extraglobs={"ember": ember},
                             optionflags=doctest.NORMALIZE_WHITESPACE)
    assert result.attempted and not result.failed


def test_counts_of_numpy_and_tensor_integers_are_plain_ints():
    """A NumPy uint8 count must not make ``num_generated`` a uint8 that wraps at 256."""
    engine, want = SobolEngine(3), SobolEngine(3).draw(500).numpy()
    got = [engine.draw(np.uint8(200)).numpy(), engine.draw(torch.tensor(200)).numpy()]
    engine.fast_forward(np.int64(50))
    got.append(engine.draw(np.uint8(50)).numpy())
    assert type(engine.num_generated) is int and engine.num_generated == 500
    assert same_bits(np.concatenate(got), np.concatenate([want[:400], want[450:]]))
    assert SobolEngine(3).draw_base2(np.uint8(9)).shape == (512, 3)  # not 2**9 in uint8: 0


def test_a_compiled_function_refuses_to_freeze_draws():
    """Traced once, a draw would be a constant: every call the same points, the count stuck."""
    engine = SobolEngine(2)
    for use in [lambda: engine.draw(2), lambda: engine.fast_forward(1), engine.reset]:
        compiled = ember.jit.compile(lambda x, use=use: x + 0 * len(str(use())))
        with pytest.raises(ember.errors.OpError, match="inside a compiled function"):
            compiled(ember.zeros(2))
    assert engine.num_generated == 0 and engine.draw(2).tolist() == [[0.0, 0.0], [0.5, 0.5]]


@pytest.mark.parametrize("scramble", [False, True])
def test_sobol_state_attributes_match_torch(scramble):
    """sobolstate, shift and quasi were missing (AttributeError)."""
    ours = ember.quasirandom.SobolEngine(4, scramble=scramble, seed=7)
    theirs = torch.quasirandom.SobolEngine(4, scramble=scramble, seed=7)
    for n in (0, 1, 2, 6):
        if n:  # (torch's draw(0) raises)
            ours.draw(n)
            theirs.draw(n)
        for name in ("sobolstate", "shift", "quasi"):
            np.testing.assert_array_equal(getattr(ours, name).numpy(),
                                          getattr(theirs, name).numpy())
            assert getattr(ours, name).dtype is ember.int64
