"""Sorting, counting and creation ops against PyTorch (sweep 64): dtypes PyTorch refuses,
histogram's flattened weight, bincount of no values."""

import numpy as np
import pytest
import torch

import ember


@pytest.mark.parametrize("make", [
    lambda lib: lib.arange(3, dtype=lib.bool),
    lambda lib: lib.arange(3, out=lib.empty(0, dtype=lib.bool)),
    lambda lib: lib.linspace(0, 1, 3, dtype=lib.bool),
    lambda lib: lib.logspace(0, 1, 3, dtype=lib.bool),
])
def test_bool_ranges_are_refused_as_torch(make):
    # (NumPy made them silently: arange(3, dtype=bool) was [False, True, True])
    with pytest.raises(NotImplementedError, match="Bool"):
        make(torch)
    with pytest.raises(ember.errors.DTypeError, match="not implemented for bool"):
        make(ember)


@pytest.mark.parametrize("abs_, angle", [([1], [1]), ([1.0], [1]), ([1], [1.0]),
                                         ([True], [True])])
def test_polar_refuses_non_float_inputs_as_torch(abs_, angle):
    # (an integer angle went through cos to float32: a complex64 answer, PyTorch's an error)
    with pytest.raises(RuntimeError, match="Float or Double"):
        torch.polar(torch.tensor(abs_), torch.tensor(angle))
    with pytest.raises(ember.errors.DTypeError, match="polar: .*floating"):
        ember.polar(ember.tensor(abs_), ember.tensor(angle))


@pytest.mark.parametrize("weight_shape", [(4,), (1, 4), (4, 1)])
def test_histogram_takes_a_weight_of_any_shape_with_the_input_s_size(weight_shape):
    x = np.array([[1.0, 2.0], [3.0, 4.0]], np.float32)
    w = np.arange(1.0, 5.0, dtype=np.float32).reshape(weight_shape)
    want = torch.histogram(torch.tensor(x), 2, weight=torch.tensor(w))
    got = ember.histogram(ember.tensor(x), 2, weight=ember.tensor(w))
    np.testing.assert_array_equal(got.hist.numpy(), want.hist.numpy())
    np.testing.assert_array_equal(got.bin_edges.numpy(), want.bin_edges.numpy())


def test_histogram_weight_of_another_size_is_refused():
    x = [[1.0, 2.0], [3.0, 4.0]]
    with pytest.raises(RuntimeError, match="weight"):
        torch.histogram(torch.tensor(x), 2, weight=torch.ones(3))
    with pytest.raises(ember.errors.ShapeError, match="as many elements"):
        ember.histogram(ember.tensor(x), 2, weight=ember.ones(3))


@pytest.mark.parametrize("weights", [[], [1.0, 2.0]])
@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("minlength", [0, 3])
def test_bincount_of_no_values_is_int64_zeros_whatever_the_weights(weights, dtype, minlength):
    # (float zeros before, and a weights-length error where PyTorch gives zeros)
    def run(lib):
        return lib.bincount(lib.tensor([], dtype=lib.int64),
                            lib.tensor(weights, dtype=getattr(lib, dtype)), minlength=minlength)
    want, got = run(torch), run(ember)
    assert str(got.dtype) == str(want.dtype).replace("torch", "ember")
    np.testing.assert_array_equal(got.numpy(), want.numpy())


@pytest.mark.parametrize("dtype, value", [("int8", 3), ("float64", 3.5), ("bool", True),
                                          ("complex128", 1j), ("float16", 2.0)])
def test_full_reads_a_zero_dim_tensor_fill_as_its_number(dtype, value):
    # (the fill tensor's dtype was kept: int8 and float64 where PyTorch gives int64, float32)
    want = torch.full((2,), torch.tensor(value, dtype=getattr(torch, dtype)))
    got = ember.full((2,), ember.tensor(value, dtype=getattr(ember, dtype)))
    assert str(got.dtype) == str(want.dtype).replace("torch", "ember")
    np.testing.assert_array_equal(got.numpy(), want.numpy())


@pytest.mark.parametrize("dtype", [None, "float32", "float64", "float16", "bfloat16"])
def test_arange_gives_torch_s_exact_float_values(dtype):
    # (arange(-0.7, 0.4, 0.1)[7] was 1.1e-16, PyTorch's 8.3e-17: its kernel fuses each
    # multiply-add, and its vector loop counts each lane on from the lane's first point;
    # the half dtypes' points were rounded once from float64, PyTorch's steps in float32)
    rng = np.random.default_rng(0)
    for _ in range(150):
        start = round(float(rng.uniform(-30, 30)), int(rng.integers(0, 5)))
        step = round(float(rng.choice([-1, 1]) * rng.uniform(0.05, 3)), int(rng.integers(1, 5)))
        end = start + step * int(rng.integers(0, 400))
        kw = {} if dtype is None else {"dtype": getattr(torch, dtype)}
        want = torch.arange(start, end, step, **kw).double().numpy()
        kw = {} if dtype is None else {"dtype": getattr(ember, dtype)}
        got = ember.arange(start, end, step, **kw).double().numpy()
        np.testing.assert_array_equal(got, want, err_msg=f"arange({start}, {end}, {step})")


@pytest.mark.parametrize("flag", ["largest", "sorted"])
def test_topk_refuses_a_none_flag_as_torch(flag):
    # (None was read as False: topk(x, 1, largest=None) gave the smallest entry)
    with pytest.raises(TypeError, match=flag):
        torch.topk(torch.tensor([3.0, 1.0, 2.0]), 1, **{flag: None})
    with pytest.raises(ember.errors.ArgumentTypeError, match=f"'{flag}' must be bool"):
        ember.topk(ember.tensor([3.0, 1.0, 2.0]), 1, **{flag: None})


@pytest.mark.parametrize("dtype", ["float16", "bfloat16"])
def test_half_arange_past_the_dtype_s_range_is_inf_as_torch(dtype):
    want = torch.arange(65000.0, 66000.0, 7.3, dtype=getattr(torch, dtype)).double().numpy()
    got = ember.arange(65000.0, 66000.0, 7.3, dtype=getattr(ember, dtype)).double().numpy()
    np.testing.assert_array_equal(got, want)


@pytest.mark.parametrize("dtype", ["float16", "bfloat16"])
def test_half_linspace_gives_torch_s_exact_values(dtype):
    # (computed in float64 and rounded once: linspace(-38, 34, 8, dtype=float16)[3] was
    # -7.145, PyTorch's -7.125, as its half arithmetic rounds every operation)
    rng = np.random.default_rng(1)
    for _ in range(150):
        a, b = (float(v) for v in rng.uniform(-50, 50, 2))
        steps = int(rng.integers(0, 300))
        want = torch.linspace(a, b, steps, dtype=getattr(torch, dtype)).double().numpy()
        got = ember.linspace(a, b, steps, dtype=getattr(ember, dtype)).double().numpy()
        np.testing.assert_array_equal(got, want, err_msg=f"linspace({a}, {b}, {steps})")
