"""numba's one-pass loops for fused kernels: each exactly rounded step equals its primitive's
NumPy forward bit for bit, for every kind of operand the loop reads, in place and in
channels-last layouts; anything else is left to NumPy."""

import numpy as np
import pytest

import ember
from ember.backend import compiled
from ember.jit.loops import EXACT, MIN_ELEMENTS, loop_source, run_loop
from ember.ops.primitive import PRIMITIVES

pytest.importorskip("numba")

SHAPE = (64, 40, 24)  # 61440 elements: above the loops' cut-off
ARITY = {"neg": 1, "abs": 1, "sqrt": 1, "reciprocal": 1, "rsqrt": 1, "relu": 1, "where": 3,
         "erf": 1, "gelu": 1, "gelu_slope": 1}
FLOAT32_ONLY = {"erf", "gelu", "gelu_slope"}  # eager's own numba functions, float32 only
PARAMS = {"gelu": {"approximate": "none"}}
# the broadcast shapes of a second operand: in the output's memory order, a scalar, constant
# along a row, a row repeated at every row, a block repeated over the leading dimension
SECOND = {"full": SHAPE, "scalar": (), "row": (64, 40, 1), "run": (24,), "block": (40, 24)}


def _values(shape, dtype, seed):
    x = np.random.default_rng(seed).standard_normal(shape).astype(dtype)
    if x.size >= 8:
        x.reshape(-1)[:8] = [np.nan, -0.0, 0.0, np.inf, -np.inf, 1.0, -1.0, 0.0]
    return x


@pytest.fixture(autouse=True)
def _numba_on():
    saved = compiled.numba_enabled()
    compiled.use_numba(True)
    yield
    compiled.use_numba(saved)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("name", sorted(EXACT))
@pytest.mark.parametrize("second", sorted(SECOND))
def test_each_step_equals_numpy_bit_for_bit(name, second, dtype):
    arity = ARITY.get(name, 2)
    if arity == 1 and second != "full":
        pytest.skip("one operand")
    first = _values(SHAPE, dtype, 0)
    other = _values(SECOND[second], dtype, 1)
    args = {1: (first,), 2: (first, other),
            3: (first > 0.5, first, other)}[arity]
    out = np.empty(SHAPE, dtype)
    steps = ((name, tuple(f"a{i}" for i in range(arity))),)
    with np.errstate(all="ignore"):
        want = PRIMITIVES[name].forward(np, *args, **PARAMS.get(name, {}))
        if name in FLOAT32_ONLY and dtype == np.float64:
            assert not run_loop(steps, out, *args)  # eager's float64 is NumPy's fit
            return
        assert run_loop(steps, out, *args)
    assert np.array_equal(out.view(np.uint8), np.ascontiguousarray(want).view(np.uint8))


def test_a_chain_in_place_and_channels_last_equals_numpys_passes():
    x = np.moveaxis(_values((8, 16, 20, 32), np.float32, 2), -1, 1)  # channels-last
    bias = _values((32, 1, 1), np.float32, 3)
    scale = np.float32(0.5).reshape(())
    steps = (("mul", ("a0", "a2")), ("add", ("t0", "a1")), ("relu", ("t1",)))
    with np.errstate(all="ignore"):
        want = np.maximum(x * scale + bias, 0)
    out = np.empty_like(x)  # the same layout; then x itself, overwritten
    assert run_loop(steps, out, x, bias, scale)
    np.testing.assert_array_equal(out, want)
    assert run_loop(steps, x, x, bias, scale)
    np.testing.assert_array_equal(x, want)


@pytest.mark.parametrize("case", ["small", "overlap", "strided", "integer", "numba off"])
def test_what_the_loop_leaves_to_numpy(case):
    steps = (("add", ("a0", "a1")),)
    big = np.ones(4 * MIN_ELEMENTS, np.float32)
    a, b, out = {"small": (np.ones(8, np.float32), np.ones(8, np.float32), np.ones(8, np.float32)),
                 "overlap": (big[:-1], big[:-1], big[1:]),
                 "strided": (big.reshape(-1, 2),  # b: inner stride 2
                             np.lib.stride_tricks.as_strided(big, (2 * MIN_ELEMENTS, 2), (4, 8)),
                             np.empty((2 * MIN_ELEMENTS, 2), np.float32)),
                 "integer": (big.astype(np.int64),) * 2 + (big.astype(np.int64),),
                 "numba off": (big, big, big.copy())}[case]
    if case == "numba off":
        compiled.use_numba(False)
    before = out.copy()
    assert not run_loop(steps, out, a, b)
    np.testing.assert_array_equal(out, before)


def test_a_layout_seen_before_still_checks_which_memory_each_call_shares():
    # the plan is kept per layout; whether an operand is the output, overlaps it or is apart
    # is asked at every call
    steps = (("add", ("a0", "a1")), ("relu", ("t0",)))
    n = 4 * MIN_ELEMENTS
    memory = np.linspace(-1, 1, 2 * n, dtype=np.float32)
    a, b, out = memory[:n].copy(), memory[n:].copy(), np.empty(n, np.float32)
    assert run_loop(steps, out, a, b)  # apart
    np.testing.assert_array_equal(out, np.maximum(a + b, 0))
    want = np.maximum(a + b, 0)
    assert run_loop(steps, a, a, b)  # in place: the same layout, the output itself
    np.testing.assert_array_equal(a, want)
    shifted = memory[1:n + 1]  # the same layout, overlapping the output by all but one
    before = memory.copy()
    assert not run_loop(steps, memory[:n], shifted, b)
    np.testing.assert_array_equal(memory, before)
    row = np.ones((4, n // 4), np.float32)  # a broadcast operand inside the output
    assert run_loop(steps, row, row.copy(), row[0].copy())
    assert not run_loop(steps, row, row.copy(), row[1])


def test_a_mask_seen_through_the_outputs_own_memory_is_not_the_output():
    # a bool view of out's bytes with out's byte strides: its elements are not out's
    out = np.ones(4 * MIN_ELEMENTS, np.float32)
    mask = out.view(np.bool_)[::4]
    x = np.zeros_like(out)
    assert not run_loop((("where", ("a0", "a1", "a2")),), out, mask, x, x)
    np.testing.assert_array_equal(out, 1.0)


def test_the_source_names_each_kind_of_operand():
    source = loop_source((("mul", ("a0", "a1")), ("add", ("t0", "a2")), ("sub", ("t1", "a3"))),
                         ("out", "scalar", "row", "run"))
    assert "x1 = a1[0]" in source and "x2 = a2[a2_rows[r]]" in source
    assert "r3 = a3[a3_rows[r]:a3_rows[r] + cols]" in source and "row[c] = t2" in source
    with pytest.raises(ValueError, match="a4"):
        loop_source((("neg", ("a4",)),), ("full",))


def test_a_compiled_chain_equals_eager_with_and_without_numba(numba_or_numpy):
    rng = np.random.default_rng(4)
    x = ember.tensor(rng.standard_normal((256, 512)).astype(np.float32))
    b = ember.tensor(rng.standard_normal(512).astype(np.float32))
    s = ember.tensor(rng.standard_normal((256, 1)).astype(np.float32))

    def f(x, b, s):
        h = (x * s + b).relu()
        return ember.maximum(h / 3 - x, x.abs().sqrt())

    want = f(x, b, s).numpy()
    fast = ember.jit.compile(f)
    fast(x, b, s)
    got = fast(x, b, s).numpy()
    assert "_loop(" in fast.code
    np.testing.assert_array_equal(got, want)


@pytest.mark.parametrize("steps", [
    (("erf", ("a0",)), ("mul", ("t0", "a1")), ("add", ("t1", "a0"))),
    (("mul", ("a0", "a1")), ("add", ("t0", "a1")), ("gelu", ("t1",))),
    (("gelu_slope", ("a0",)), ("add", ("t0", "a1")))])
def test_steps_around_the_fused_multiply_add_functions_keep_numpys_roundings(steps):
    # erf, gelu and gelu's slope are compiled with multiply-adds allowed and inlined into the
    # loop by LLVM: the loop's own products and sums must not fuse with theirs
    x, y = _values(SHAPE, np.float32, 0), _values(SHAPE, np.float32, 1)
    want = {"a0": x, "a1": y}
    with np.errstate(all="ignore"):
        for k, (name, args) in enumerate(steps):
            want[f"t{k}"] = PRIMITIVES[name].forward(np, *(want[a] for a in args),
                                                     **PARAMS.get(name, {}))
    out = np.empty(SHAPE, np.float32)
    assert run_loop(steps, out, x, y)
    assert np.array_equal(out.view(np.uint8), want[f"t{len(steps) - 1}"].view(np.uint8))


def test_a_refused_layout_is_remembered_and_a_mask_or_scalar_in_the_outputs_memory_refused(
        monkeypatch):
    from ember.jit import loops

    plans = []
    plan = loops._plan
    monkeypatch.setattr(loops, "_plan", lambda *args: plans.append(args) or plan(*args))
    steps = (("sub", ("a0", "a1")),)
    n = 4 * MIN_ELEMENTS
    out, other = np.empty((128, n // 128), np.float32), np.ones((n // 128, 128), np.float32).T
    for _ in range(3):  # (another layout: NumPy's calls, planned once)
        assert not run_loop(steps, out, np.ones_like(out), other)
    assert len(plans) == 1
    # a bool view of the output's own first bytes is a mask, not the output
    mask_out = np.full(n, 2.0, np.float32)
    ones, zeros = np.ones(n, np.float32), np.zeros(n, np.float32)
    assert not run_loop((("where", ("a0", "a1", "a2")),), mask_out, mask_out.view(np.bool_)[:n],
                        ones, zeros)
    np.testing.assert_array_equal(mask_out, 2.0)
    # a one-element operand inside the output: a share of the rows could read it rewritten
    big = np.ones(n, np.float32)
    assert not run_loop(steps, big, np.ones(n, np.float32), big[:1])
    np.testing.assert_array_equal(big, 1.0)


@pytest.mark.parametrize("size,pieces", [(7 << 19, 2), (8 << 20, 8), ((1 << 21) + 1, 1)])
def test_a_loop_over_one_layout_is_cut_into_pieces_that_divide_it(monkeypatch, size, pieces):
    # 7·2¹⁹ elements are three pieces' worth, which do not divide it: two then (three would
    # leave the work on one thread), and an odd size runs whole
    from ember.backend import parallel
    from ember.jit import loops

    monkeypatch.setattr(parallel, "workers", lambda: 2)
    seen = []
    monkeypatch.setattr(parallel, "run", lambda parts: seen.append(len(parts)) or
                        [part() for part in parts])
    a, b = _values(size, np.float32, 4), _values(size, np.float32, 5)
    out = np.empty(size, np.float32)
    with np.errstate(all="ignore"):
        assert loops.run_loop((("add", ("a0", "a1")),), out, a, b)
    np.testing.assert_array_equal(out, a + b)
    assert seen == ([pieces] if pieces > 1 else [])


_LATER_PROCESS = """
import numpy as np
from ember.backend import compiled
from ember.jit import loops
compiled.use_numba(True)
x = np.linspace(-3.0, 3.0, 1 << 14, dtype=np.float32)
out = np.empty_like(x)
assert loops.run_loop((("mul", ("a0", "a0")), ("add", ("t0", "a0"))), out, x)
assert np.array_equal(out, x * x + x)
(loop,) = loops._COMPILED.values()
print(sum(loop.stats.cache_hits.values()), sum(loop.stats.cache_misses.values()))
"""


def test_a_later_process_loads_a_loop_from_numbas_disk_cache(tmp_path):
    # (the loop's module is written once under $EMBER_HOME/jit; numba caches its machine code
    # beside it, so a later process's compile is a load: 0.2-2 s a loop spared)
    import os
    import subprocess
    import sys

    env = {**os.environ, "EMBER_HOME": str(tmp_path)}
    counts = [subprocess.run([sys.executable, "-c", _LATER_PROCESS], env=env, text=True,
                             capture_output=True, check=True).stdout.split()
              for _ in range(2)]
    assert counts == [["0", "1"], ["1", "0"]]  # (compiled, then loaded)
    (source,) = (tmp_path / "jit").glob("loop_*.py")
    assert "def loop(" in source.read_text()


def test_a_loop_compiles_where_embers_directory_cannot_be_written(tmp_path, monkeypatch):
    from ember.jit import loops

    blocked = tmp_path / "a_file"
    blocked.write_text("")
    monkeypatch.setenv("EMBER_HOME", str(blocked))  # (no directory can be made inside it)
    loop = loops._compile(loop_source((("sub", ("a0", "a1")), ("abs", ("t0",))),
                                      ("full", "full")), None)
    x, y = (np.arange(5.0) * k for k in (1, 3))
    out = np.empty(5)
    loop(out, x, y, 0, 1, 5)
    assert out.tolist() == np.abs(x - y).tolist()
