"""The optional numba kernels: the switch, and the NumPy twins when numba is off or missing.
(Their values against PyTorch: tests/ops/test_activations.py runs the float32 kernels both
ways.)"""

import math
import subprocess
import sys
import types

import numpy as np
import pytest

import ember
from ember.backend import compiled
from ember.ops import erf_kernel


def test_environment_variable_turns_numba_off():
    pytest.importorskip("numba")
    code = "import ember.backend.compiled as c; print(c.numba_enabled(), c.describe())"
    for value, expected in (("0", "False"), ("Off", "False"), ("false", "False"),
                            ("1", "True")):
        out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                             env={"EMBER_NUMBA": value, "PATH": ""}, check=True).stdout
        assert out.split()[0] == expected
        assert ("EMBER_NUMBA=" + value in out) == (expected == "False")


def test_missing_numba_falls_back_to_numpy(monkeypatch):
    monkeypatch.setattr(compiled, "_numba", lambda: None)
    assert not compiled.numba_enabled()
    x = ember.linspace(-3, 3, 7)
    expected = [-0.00404951, -0.04550026, -0.15865525, 0.0, 0.84134475, 1.95449974,
                2.99595049]
    np.testing.assert_allclose(ember.gelu(x).numpy(), expected, atol=1e-6)


def test_use_numba_switches_the_kernels():
    pytest.importorskip("numba")
    saved = compiled.numba_enabled()
    x = ember.randn(300_000)
    try:
        results = []
        for on in (True, False):
            compiled.use_numba(on)
            assert compiled.numba_enabled() is on
            results.append(ember.erf(x).numpy())
    finally:
        compiled.use_numba(saved)
    np.testing.assert_allclose(results[0], results[1], atol=5e-7)


def test_ember_info_says_which_kernels_run(monkeypatch):
    report = ember.backend.capabilities().report()
    assert "kernels:" in report
    monkeypatch.setattr(compiled, "_numba", lambda: None)
    assert "pip install 'ember[fast]'" in ember.backend.capabilities().report()


@pytest.fixture
def fresh_numba_load(monkeypatch):
    """numba switched on and its erf kernels not loaded yet; the switch restored after."""
    pytest.importorskip("numba")
    monkeypatch.setattr(erf_kernel, "_LOADED", {})
    saved = compiled.numba_enabled()
    compiled.use_numba(True)
    yield
    compiled.use_numba(saved)


def test_kernels_that_fail_to_load_turn_numba_off_with_a_warning(monkeypatch,
                                                                  fresh_numba_load):
    monkeypatch.setitem(sys.modules, "ember.ops.erf_numba", None)  # its import now fails
    with pytest.warns(RuntimeWarning, match="NumPy's run instead"):
        y = ember.gelu(ember.linspace(-3, 3, 7))
    assert not compiled.numba_enabled() and "failed to load" in compiled.describe()
    np.testing.assert_allclose(y.numpy()[[0, 3, 6]], [-0.00404951, 0.0, 2.99595049], atol=1e-6)


def test_kernels_that_disagree_with_numpys_are_compiled_again_then_dropped(monkeypatch,
                                                                          fresh_numba_load):
    # a cached kernel keeps the constants it was compiled with: checked against NumPy's once.
    # Real numba kernels, compiled without a disk cache (the package's is not touched), that
    # stay wrong however often they are compiled again
    numba = pytest.importorskip("numba")

    @numba.njit
    def off_by_one(a, out):
        for i in range(a.size):
            out[i] = a[i] + 1

    wrong = types.SimpleNamespace(erf32=off_by_one, gelu32=off_by_one, gelu_slope32=off_by_one)
    monkeypatch.setattr(compiled, "load", lambda module: wrong)
    with pytest.warns(RuntimeWarning, match="disagrees with the NumPy kernels"):
        y = ember.erf(ember.tensor([0.5], dtype=ember.float32))
    assert not compiled.numba_enabled()
    np.testing.assert_allclose(y.numpy(), [0.5204999], rtol=1e-6)  # NumPy's erf(0.5)


def test_read_only_input_runs_through_the_kernels(tmp_path):
    pytest.importorskip("numba")
    np.save(tmp_path / "x.npy", np.linspace(-3, 3, 8, dtype=np.float32))
    mapped = ember.from_numpy(np.load(tmp_path / "x.npy", mmap_mode="r"))
    for x in (mapped, ember.linspace(-3, 3, 8).expand(1, 8), ember.tensor(0.5).expand(1)):
        np.testing.assert_allclose(ember.gelu(x).numpy(), x.numpy() * 0.5 *
                                   (1 + np.vectorize(math.erf)(x.numpy() / math.sqrt(2))),
                                   atol=2e-6)


def test_njit_passes_every_compiler_flag_it_is_given(monkeypatch):
    # (a fake numba records the options: nothing is compiled)
    seen = []

    def fake_njit(**options):
        seen.append(options)
        return lambda fn: types.SimpleNamespace(py_func=fn)

    monkeypatch.setattr(compiled, "_numba", lambda: types.SimpleNamespace(njit=fake_njit))
    for flags in ({"reassociate": True, "contract": True}, {"contract": True},
                  {"own_flags": True}):
        compiled.njit("float32(float32)", **flags)(lambda x: x)
    assert [options["fastmath"] for options in seen] == [{"reassoc", "contract"}, {"contract"},
                                                         False]
    assert all("inline" not in options and options["cache"] for options in seen)


def _plain_kernel(fn, signature):
    """A lazy kernel of ``fn`` without numba's disk cache (the package's is not touched)."""
    pytest.importorskip("numba")
    return compiled.Lazy(fn, signature, {"nogil": True})


def test_a_kernel_compiles_every_signature_it_declares_on_its_first_call():
    def twice(x):
        return x * 2

    kernel = _plain_kernel(twice, ["float64(float64)", "float32(float32)"])
    assert kernel.kernel is None and not kernel.dispatcher.signatures  # nothing compiled yet
    assert kernel(np.float32(1.5)) == 3.0
    assert len(kernel.dispatcher.signatures) == 2 and compiled.ready(kernel) is kernel.dispatcher
    with pytest.raises(TypeError, match="No matching definition"):  # (declared types only)
        kernel(np.arange(3))


def test_a_kernel_compiles_the_signature_of_its_arrays_on_their_first_call():
    def total(a):
        s = 0.0
        for x in a:
            s += x
        return s

    nb = pytest.importorskip("numba").types
    read_only = nb.float64(nb.Array(nb.float32, 1, "C", readonly=True))
    kernel = _plain_kernel(total, ["float64(float64[::1])", "float64(float32[::1])",
                                   "float64(float32[:])", read_only])
    assert kernel(np.ones(3, np.float32)) == 3.0
    (group,) = kernel.groups.values()  # the writable contiguous float32 signature alone
    assert group.signatures == [(nb.Array(nb.float32, 1, "C"),)]
    assert kernel(np.ones(4, np.float32)[::2]) == 2.0 and kernel(np.ones(5, np.float32)) == 5.0
    assert [len(g.signatures) for g in kernel.groups.values()] == [1, 1] and kernel.kernel is None
    frozen = np.ones(3, np.float32)
    frozen.flags.writeable = False
    assert kernel(frozen) == 3.0
    assert list(kernel.groups.values())[-1].signatures == [read_only.args]
    assert kernel(np.ones(2)) == 2.0 and len(kernel.groups) == 4
    with pytest.raises(TypeError, match="No matching definition"):
        kernel(np.ones(2, np.int64))
    assert len(compiled.ready(kernel).signatures) == 4 and kernel(np.ones(5)) == 5.0


def test_a_call_no_signature_declares_exactly_compiles_those_of_its_dtypes():
    def total(a):
        return a.sum()

    kernel = _plain_kernel(total, ["float64(float64[:])", "float32(float32[:])",
                                   "float32(float32[:, :])"])
    assert kernel(np.ones(3, np.float32)) == 3.0  # (C-contiguous: numba converts it to "A")
    (group,) = kernel.groups.values()
    assert len(group.signatures) == 2


def test_a_later_call_finds_its_group_by_the_fingerprint_of_all_its_arguments():
    def scaled(a, k):
        return a.sum() * k

    kernel = _plain_kernel(scaled, ["float64(float64[::1], float64)",
                                    "float64(float64[:], float64)"])
    x = np.ones(4)
    assert kernel(x, 2.0) == 8.0 and kernel(x, 3) == 12.0  # (a float, then an int: one group)
    (group,) = kernel.groups.values()
    assert len(kernel.calls) == 2 and set(kernel.calls.values()) == {group}
    assert kernel(x[::2], 1.0) == 2.0 and len(kernel.groups) == 2  # (strided: a group of its own)
    assert kernel(x, 1.0) == 4.0 and kernel.calls[compiled._fingerprint((x, 1.0))] is group


def _doubled() -> tuple:
    """(scope, kernel): a lazy kernel ``doubled`` of float64/float32 blocks (writable or
    read-only), in ``scope`` as in its module."""
    nb = pytest.importorskip("numba").types
    scope: dict = {}
    exec("def doubled(a, out):\n    for i in range(a.size):\n        out[i] = 2 * a[i]\n",
         scope)
    blocks = [nb.void(nb.Array(dt, 1, "C", readonly=ro), nb.Array(dt, 1, "C"))
              for dt in (nb.float64, nb.float32) for ro in (False, True)]
    kernel = scope["doubled"] = compiled.Lazy(scope["doubled"], blocks, {"nogil": True})
    return scope, kernel


def test_after_its_first_call_a_kernel_s_module_calls_numba_s_dispatcher_itself():
    # (the Lazy wrapper cost ~0.37 µs a call: review57a note A)
    scope, kernel = _doubled()
    x, out = np.arange(3.0), np.empty(3)
    scope["doubled"](x, out)
    front = scope["doubled"]
    assert front is kernel.front and not isinstance(front, compiled.Lazy)
    assert len(front.signatures) == 1 and out.tolist() == [0.0, 2.0, 4.0]
    frozen = np.arange(3, dtype=np.float32)
    frozen.flags.writeable = False
    front(frozen, out32 := np.empty(3, np.float32))  # (another group, through the Lazy)
    assert out32.tolist() == [0.0, 2.0, 4.0] and len(kernel.groups) == 2
    assert front.signatures == [s for g in kernel.groups.values() for s in g.signatures]
    assert compiled.ready(front) is kernel.kernel
    with pytest.raises(TypeError, match="No matching definition"):
        front(np.arange(3), np.empty(3, np.int64))
    assert scope["doubled"] is kernel.kernel and len(kernel.kernel.signatures) == 4


def test_a_later_group_of_another_dtype_joins_the_front_not_a_read_only_one():
    # review57m1 1: float32 calls after a float64 warm-up went back through the Lazy (0.89 µs
    # against 0.22 µs straight): a group of another dtype now adds its code to the front; a
    # read-only one of a dtype already there does not (numba finds two matches and misses)
    scope, kernel = _doubled()
    x64, x32 = np.arange(3.0), np.arange(3, dtype=np.float32)
    kernel(x64, np.empty(3))
    front, misses = scope["doubled"], []
    back = front._compile_for_args
    front._compile_for_args = lambda *args, **kws: misses.append(args) or back(*args, **kws)
    front(x32, out32 := np.empty(3, np.float32))  # (compiles the float32 group: one miss)
    assert out32.tolist() == [0.0, 2.0, 4.0] and len(misses) == 1
    assert [str(s[0].dtype) for s in front.signatures] == ["float64", "float32"]
    front(x32, out32)
    front(x64, np.empty(3))
    assert len(misses) == 1  # (both dtypes' calls now run straight)
    frozen = x32.copy()
    frozen.flags.writeable = False
    front(frozen, out32)
    assert len(kernel.groups) == 3 and len(front.signatures) == 2 and len(misses) == 2
    front(x32, out32)
    assert len(misses) == 2 and scope["doubled"] is front


def test_a_kernel_compiles_where_numba_finds_no_folder_for_its_cache(monkeypatch):
    caching = pytest.importorskip("numba.core.caching")
    impl = getattr(caching, "CacheImpl", None) or caching._CacheImpl  # (numba < 0.59: private)
    monkeypatch.setattr(impl, "_locator_classes", [])  # (as where every folder is read-only)
    with pytest.raises(RuntimeError, match="no locator"):
        compiled._numba().njit(cache=True)(lambda x: x)

    def twice(x):
        return x * 2

    kernel = compiled.Lazy(twice, ["float64[::1](float64[::1])"], {"cache": True})
    np.testing.assert_array_equal(kernel(np.ones(2)), [2.0, 2.0])
    assert compiled.numba_enabled()


def test_a_cache_that_fails_to_load_or_save_leaves_the_kernel_compiled(monkeypatch, tmp_path):
    caching = pytest.importorskip("numba.core.caching")
    monkeypatch.setenv("NUMBA_CACHE_DIR", str(tmp_path))
    monkeypatch.setattr(compiled._numba().config, "CACHE_DIR", str(tmp_path))

    def broken(*args):
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(caching.Cache, "_save_overload", broken)
    monkeypatch.setattr(caching.Cache, "load_overload", broken)

    def thrice(x):
        return x * 3

    kernel = compiled.Lazy(thrice, ["float64[::1](float64[::1])", "float32[::1](float32[::1])"],
                           {"cache": True})
    np.testing.assert_array_equal(kernel(np.ones(2)), [3.0, 3.0])
    np.testing.assert_array_equal(compiled.ready(kernel)(np.ones(1, np.float32)), [3.0])
    assert compiled.numba_enabled()


def test_a_kernel_compiles_the_kernels_it_calls_first_with_their_own_signatures():
    def narrow(x):
        return x

    narrow = lazy = _plain_kernel(narrow, "float32(float32)")

    def caller(x):
        return narrow(x)

    # a float64 passed to the float32 kernel is rounded to float32, as with eager signatures
    assert _plain_kernel(caller, "float64(float64)")(0.1) == float(np.float32(0.1))
    assert narrow is lazy.kernel  # (numba's kernel in its place)


def test_a_kernel_that_calls_itself_compiles():
    def factorial(n):
        return 1 if n <= 1 else n * factorial(n - 1)

    factorial = _plain_kernel(factorial, "int64(int64)")
    assert factorial(5) == 120


def test_another_thread_gets_the_compiled_kernel_not_the_one_being_compiled():
    def twice(x):
        return x * 2

    kernel = _plain_kernel(twice, "float64(float64)")
    kernel.compiling = -1  # (as while another thread compiles it)
    assert compiled.ready(kernel).signatures  # waits for a compiled kernel, not the raw one


def test_a_numba_that_cannot_compile_leaves_the_kernels_to_numpy(monkeypatch, fresh_numba_load):
    def no_llvm(*args, **options):
        raise RuntimeError("no LLVM here")

    monkeypatch.setattr(compiled, "_numba", lambda: types.SimpleNamespace(njit=no_llvm))
    monkeypatch.setattr(compiled, "_LOADED", {})
    compiled._compiles.cache_clear()
    try:
        with pytest.warns(RuntimeWarning, match="no LLVM here"):
            assert compiled.load("ember.ops.erf_numba") is None
        assert not compiled.numba_enabled()
    finally:
        compiled._compiles.cache_clear()


def test_a_kernel_that_fails_to_compile_turns_numba_off_with_a_warning(fresh_numba_load):
    def broken(x):
        return np.no_such_function(x)

    kernel = _plain_kernel(broken, "float64(float64)")
    with pytest.warns(RuntimeWarning, match="broken failed to compile"), \
            pytest.raises(Exception, match="no_such_function"):
        kernel(1.0)
    assert not compiled.numba_enabled()


def test_importing_a_module_of_kernels_compiles_none_of_them():
    pytest.importorskip("numba")
    code = ("from ember.backend import compiled\n"
            "kernels = compiled.load('ember.optim.update_numba')\n"
            "lazy = [k for k in vars(kernels).values() if isinstance(k, compiled.Lazy)]\n"
            "print(len(lazy), sum(k.kernel is not None for k in lazy))")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          check=True)
    count, compiled_now = map(int, done.stdout.split())
    assert count >= 9 and compiled_now == 0


def test_describe_names_the_numba_kernels_of_the_special_ops():
    pytest.importorskip("numba")
    line = compiled.describe()
    for name in ("sign", "frac", "rsqrt", "lgamma", "digamma", "trigamma", "I0 and I1"):
        assert name in line, name
