"""relu and its gradient by numba's one-pass loops against NumPy's calls and PyTorch: every
layout and dtype they take, NaN, -0.0, the sizes where the blocks split among the cores, and
the cases they leave to NumPy."""

import numpy as np
import pytest
import torch

import ember
from ember.ops import relu_kernel
from ember.ops.relu_kernel import relu_array, relu_grad_array


def _values(shape, dtype, seed=0):
    x = np.random.default_rng(seed).standard_normal(shape).astype(dtype)
    flat = x.reshape(-1)
    flat[:6] = [np.nan, -0.0, 0.0, np.inf, -np.inf, np.nan]
    return x


def _channels_last(x):
    return np.moveaxis(np.ascontiguousarray(np.moveaxis(x, 1, -1)), -1, 1)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("layout", ["c", "channels_last", "strided", "readonly"])
def test_relu_equals_torchs_relu_bit_for_bit(numba_or_numpy, dtype, layout):
    x = _values((4, 8, 24, 24), dtype)
    view = {"c": x, "channels_last": _channels_last(x), "strided": x[:, ::2],
            "readonly": x.copy()}[layout]
    view.flags.writeable = layout != "readonly"
    got = relu_array(np, view)
    want = torch.relu(torch.from_numpy(view.copy())).numpy()
    assert got.dtype == dtype and got.strides == np.empty_like(view).strides
    np.testing.assert_array_equal(got, want)
    np.testing.assert_array_equal(np.signbit(got), np.signbit(want))  # (-0.0 stays -0.0)
    out = view.copy() if layout != "readonly" else np.empty_like(view)
    assert relu_array(np, out if layout != "readonly" else view, out=out) is out
    np.testing.assert_array_equal(out, want)


@pytest.mark.parametrize("layout", ["c", "channels_last"])
def test_relu_grad_equals_the_masked_gradient(numba_or_numpy, layout):
    y = relu_array(np, _values((4, 8, 24, 24), np.float32, seed=1))
    v = _values((4, 8, 24, 24), np.float32, seed=2)
    v.reshape(-1)[10] = np.nan  # a NaN where y is 0 gives 0, as where() does
    if layout == "channels_last":
        y, v = _channels_last(y), _channels_last(v)
    got = relu_grad_array(np, v, y)
    np.testing.assert_array_equal(got, np.where(y <= 0, np.float32(0), v))
    assert got.strides == v.strides
    out = v.copy()
    assert relu_grad_array(np, out, y, out=out) is out  # over v, as the jit calls it
    np.testing.assert_array_equal(out, got)
    mask = y.copy()
    assert relu_grad_array(np, v, mask, out=mask) is mask  # over y
    np.testing.assert_array_equal(mask, got)


def test_an_output_overlapping_its_input_elsewhere_is_left_to_numpy(numba_or_numpy):
    x = _values((40000,), np.float32)
    a, out = x[:30000], x[10000:]  # the same memory, shifted
    want = np.maximum(a, 0)
    relu_array(np, a, out=out)
    np.testing.assert_array_equal(out, want)


@pytest.mark.parametrize("case", ["mixed layouts", "broadcast mask", "mixed dtypes"])
def test_relu_grad_leaves_other_operands_to_numpy(case):
    rng = np.random.default_rng(5)
    v = rng.standard_normal((8, 8, 8, 16)).astype(np.float32)
    y = rng.standard_normal((8, 8, 8, 16)).astype(np.float32)
    y = {"mixed layouts": _channels_last(y), "broadcast mask": y[0],
         "mixed dtypes": y.astype(np.float64)}[case]
    assert relu_kernel.flat_blocks(v, y) is None or y.dtype != v.dtype
    np.testing.assert_array_equal(relu_grad_array(np, v, y), np.where(y <= 0, 0, v))


@pytest.mark.parametrize("size", [100, 5000, (1 << 22) + 3])
def test_relu_and_its_gradient_match_torch_at_every_size(numba_or_numpy, size):
    """Below numba's cut-off, one loop, and shared among the cores."""
    x = _values((size,), np.float32, seed=3)
    g = _values((size,), np.float32, seed=4)
    t = torch.from_numpy(x).requires_grad_()
    torch.relu(t).backward(torch.from_numpy(g))
    a = ember.from_numpy(x).requires_grad_()
    out = ember.relu(a)
    out.backward(ember.from_numpy(g))
    want = torch.relu(torch.from_numpy(x)).numpy()
    np.testing.assert_array_equal(out.detach().numpy(), want)  # -0.0 == 0.0
    np.testing.assert_array_equal(a.grad.numpy(), t.grad.numpy())


@pytest.mark.parametrize("name", ["leaky_relu", "hardtanh"])
def test_slope_grads_take_numbas_pass_from_4097_elements_with_numpys_bits(monkeypatch, name):
    """leaky_relu's and hardtanh's backward take numba's pass above 4096 elements (NumPy's
    select of a random mask costs twice the pass at 8192), with the NumPy twin's bits. Passes
    are counted during autograd.grad only: leaky_relu's forward takes one too."""
    from ember.backend import compiled

    if not compiled.numba_enabled():
        pytest.skip("numba is off")
    fn = {"leaky_relu": lambda t: ember.nn.functional.leaky_relu(t, 0.1),
          "hardtanh": lambda t: ember.nn.functional.hardtanh(t, -1.1, 0.7)}[name]
    a, g = _values((4097,), np.float32), _values((4097,), np.float32, seed=1)
    passes = []
    real = relu_kernel.parallel.over_rows
    monkeypatch.setattr(relu_kernel.parallel, "over_rows",
                        lambda *args: passes.append(1) or real(*args))
    runs, backward_passes = [], []
    for on in (True, False):
        compiled.use_numba(on)
        try:
            x = ember.tensor(a, requires_grad=True)
            y = fn(x)
            before = len(passes)
            runs.append(ember.autograd.grad(y, x, ember.tensor(g))[0].numpy().tobytes())
            backward_passes.append(len(passes) - before)
        finally:
            compiled.use_numba(True)
    assert backward_passes == [1, 0] and runs[0] == runs[1]


@pytest.mark.parametrize("dtype", ["float16", "bfloat16", "float32", "float64"])
@pytest.mark.parametrize("n", [5, 40_000])
def test_relu_keeps_minus_zero_in_every_float_dtype_as_torch(numba_or_numpy, dtype, n):
    values = np.resize(np.array([-0.0, 0.0, -1.0, np.nan, 2.0]), n)
    got = ember.relu(ember.tensor(values).to(getattr(ember, dtype))).float().numpy()
    want = torch.relu(torch.tensor(values).to(getattr(torch, dtype))).float().numpy()
    np.testing.assert_array_equal(got, want)
    number = ~np.isnan(want)  # (a NaN's sign is not kept by either)
    np.testing.assert_array_equal(np.signbit(got[number]), np.signbit(want[number]))
