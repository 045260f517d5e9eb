"""A batch-1 MLP compiled: each Linear layer and its ReLU are one kernel whose values are
eager's bit for bit, run on numba's threads where eager's product runs there."""

from __future__ import annotations

import numpy as np
import pytest

import ember
import ember.models
from ember import jit
from ember.backend import compiled

pytestmark = pytest.mark.usefixtures("threads_restored")


@pytest.fixture
def kernel_calls(monkeypatch):
    """How many times numba's one-row kernel ran (None where it cannot run here)."""
    kernels = compiled.load("ember.backend.gemv_numba") if compiled.numba_enabled() else None
    if kernels is None or not kernels.OPENMP:
        return None
    calls = []
    run = kernels.rows_times
    monkeypatch.setattr(kernels, "rows_times", lambda *a: calls.append(a[-1]) or run(*a))
    return calls


def _mlp(dtype):
    ember.manual_seed(0)
    model = ember.models.mlp().to(dtype)
    return model, jit.compile(model), ember.randn(1, 1, 28, 28, dtype=dtype)


def _same(fast, model, x):
    with ember.no_grad():
        expected = model(x).numpy()
        for _ in range(2):  # (the trace's call, then the generated code's)
            got = fast(x).numpy()
            np.testing.assert_array_equal(got, expected)
            np.testing.assert_array_equal(np.signbit(got), np.signbit(expected))


@pytest.mark.parametrize("dtype", [ember.float32, ember.float64])
def test_a_batch_one_mlp_gives_eagers_values_bit_for_bit(dtype, kernel_calls):
    ember.set_num_threads(2)
    model, fast, x = _mlp(dtype)
    _same(fast, model, x)
    assert fast.code.count("= linear_relu") == 2 and "= linear(" in fast.code
    if kernel_calls is not None:  # eager's two products, then the kernels' with their epilogues
        assert kernel_calls[-4:] == [0, 0, 3, 3]


def test_changed_weights_and_biases_are_read_at_the_next_call():
    ember.set_num_threads(2)
    model, fast, x = _mlp(ember.float32)
    _same(fast, model, x)
    with ember.no_grad():
        model[1].bias.add_(0.5)
        model[3].weight.mul_(-1)
    _same(fast, model, x)


def test_without_numba_or_on_one_thread_it_makes_eagers_calls(monkeypatch, kernel_calls):
    ember.set_num_threads(2)
    model, fast, x = _mlp(ember.float32)
    _same(fast, model, x)
    monkeypatch.setattr(compiled, "_OFF_BECAUSE", ["test"])
    _same(fast, model, x)
    monkeypatch.undo()
    ember.set_num_threads(1)
    calls = None if kernel_calls is None else len(kernel_calls)
    _same(fast, model, x)
    assert kernel_calls is None or len(kernel_calls) == calls


def test_the_pass_switched_off_leaves_the_product_and_its_fused_addition():
    model, _, x = _mlp(ember.float32)
    fast = jit.compile(model, passes={"epilogue": False})
    _same(fast, model, x)
    assert "linear" not in fast.code and "fused_add_relu" in fast.code


def test_a_saved_batch_one_mlp_loads_and_runs_the_same_numbers(tmp_path):
    ember.set_num_threads(2)
    model, fast, x = _mlp(ember.float32)
    _same(fast, model, x)
    jit.save(fast, tmp_path / "mlp.ejit")
    with ember.no_grad():
        np.testing.assert_array_equal(jit.load(tmp_path / "mlp.ejit")(x).numpy(),
                                      model(x).numpy())


def test_a_bias_added_first_keeps_eagers_nan_signs(kernel_calls):
    ember.set_num_threads(2)
    weight = ember.ones(1024, 784)
    row = np.ones((1, 784), np.float32)
    row[0, :2] = np.inf, -np.inf  # each sum a NaN with its sign bit set (x86's default NaN)
    bias = ember.tensor(np.full(1024, np.nan, np.float32))  # NaNs without it: eager keeps these

    def layer(x):
        return bias + x @ weight.t()

    fast = jit.compile(layer)
    _same(fast, layer, ember.tensor(row))
    assert "_one_row" not in fast.code  # (eager's calls: NumPy's order of the two addends)


def test_a_function_named_as_a_kernel_keeps_its_own_name():
    weight, bias = ember.randn(1024, 784), ember.randn(1024)

    def linear(x):  # (the name of the kernel it compiles to)
        return x @ weight.t() + bias

    fast = jit.compile(linear)
    _same(fast, linear, ember.randn(1, 784))
    assert "def linear_2(xp, a, b, bias, out=None)" in fast.code


def test_work_on_constants_alone_is_computed_once():
    bias = ember.randn(1024)

    def layer(x):  # (the weight made inside: no state keys its cached transpose)
        return (x @ (ember.ones(1024, 784) * 0.01).t() + bias).relu()

    fast = jit.compile(layer)
    _same(fast, layer, ember.randn(1, 784))
    assert "_state = (), ()" in fast.code  # (cached: hoisted work keyed by no state)
