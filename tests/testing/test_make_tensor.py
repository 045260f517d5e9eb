"""ember.testing.make_tensor: PyTorch's default ranges per dtype, bounds clamped and checked
with PyTorch's messages, non-contiguous and memory-format layouts, exclude_zero and
requires_grad."""

import math

import pytest
import torch

import ember
from ember.testing import make_tensor

RANGES = {"bool_": (0, 1), "uint8": (0, 9), "int8": (-9, 9), "int16": (-9, 9), "int32": (-9, 9),
          "int64": (-9, 9), "uint16": (0, 9), "uint32": (0, 9), "uint64": (0, 9),
          "float16": (-9, 9), "bfloat16": (-9, 9), "float32": (-9, 9), "float64": (-9, 9),
          "complex64": (-9, 9), "complex128": (-9, 9), "float8_e4m3fn": (-9, 9),
          "float8_e5m2": (-9, 9)}


@pytest.mark.parametrize("name", RANGES)
def test_default_ranges_per_dtype(name):
    dtype = getattr(ember, name)
    x = make_tensor(400, dtype=dtype, device="cpu")
    assert x.dtype is dtype and x.shape == (400,) and not x.requires_grad
    values = ember.view_as_real(x) if dtype.is_complex else x
    values = values.to(ember.float64)
    low, high = RANGES[name]
    assert low <= values.min().item() and values.max().item() <= high
    assert values.max().item() - values.min().item() >= (high - low) / 2  # (spread out)


def test_bounds_are_clamped_and_integer_bounds_rounded_up():
    x = make_tensor(500, dtype=ember.uint8, device="cpu", low=-100.5, high=2.5)
    assert set(x.tolist()) == {0, 1, 2}
    wide = make_tensor(500, dtype=ember.float32, device="cpu", low=-1e300, high=1e300)
    assert math.isfinite(wide.abs().max().item()) and wide.abs().max().item() > 1e37
    assert make_tensor([2, 3], dtype=ember.int32, device="cpu").shape == (2, 3)


@pytest.mark.parametrize("kwargs", [dict(low=5, high=5, dtype="int32"),
                                    dict(low=float("nan"), dtype="float32"),
                                    dict(low=300, dtype="uint8"),
                                    dict(low=-300, high=-200, dtype="uint8"),
                                    dict(requires_grad=True, dtype="int32"),
                                    dict(noncontiguous=True, memory_format=True, dtype="float32")])
def test_refusals_match_torch(kwargs):
    def message(lib):
        options = dict(kwargs, dtype=getattr(lib, kwargs["dtype"]))
        if "memory_format" in options:
            options["memory_format"] = lib.channels_last
        with pytest.raises(ValueError) as info:
            lib.testing.make_tensor(1, 2, 3, 4, device="cpu", **options)
        return str(info.value)

    assert message(ember).replace("ember.", "torch.") == message(torch)


def test_layouts_exclude_zero_and_requires_grad():
    x = make_tensor(3, 4, dtype=ember.float64, device="cpu", noncontiguous=True,
                    requires_grad=True)
    assert x.shape == (3, 4) and not x.is_contiguous() and x.requires_grad and x.is_leaf
    assert make_tensor(1, dtype=ember.float32, device="cpu", noncontiguous=True).is_contiguous()
    y = make_tensor(2, 3, 4, 5, dtype=ember.float32, device="cpu",
                    memory_format=ember.channels_last)
    assert y.is_contiguous(memory_format=ember.channels_last)
    z = make_tensor(2000, dtype=ember.int8, device="cpu", low=-1, high=1, exclude_zero=True)
    assert set(z.tolist()) == {-1, 1}
    f = make_tensor(100, dtype=ember.float16, device="cpu", low=0, high=1e-3, exclude_zero=True)
    assert (f != 0).all()
    assert not make_tensor(2, dtype=ember.float8_e5m2, device="cpu",
                           requires_grad=True).requires_grad  # (as torch: not for float8)
    with pytest.warns(FutureWarning, match="low==high"):
        assert (make_tensor(3, dtype=ember.float32, device="cpu", low=2, high=2) == 2).all()
    with pytest.raises(TypeError, match="make_tensor: the dtype .*qint8 is not supported"):
        make_tensor(2, dtype=ember.qint8, device="cpu")


@pytest.mark.parametrize("shape", [(2.5,), ((2,), 3), ((2.0, 3),)])
def test_a_shape_of_floats_or_a_mix_is_refused_as_torch(shape):
    # int() turned 2.5 into 2: a tensor of the wrong shape, silently
    with pytest.raises(TypeError):
        torch.testing.make_tensor(*shape, dtype=torch.float32, device="cpu")
    with pytest.raises(TypeError, match="make_tensor: the shape must be ints"):
        make_tensor(*shape, dtype=ember.float32, device="cpu")


def test_float8_low_equal_high_is_refused_as_torch():
    # (for the floating dtypes low == high is only deprecated; float8 is not among them)
    with pytest.raises(ValueError, match="`low` must be less than `high`"):
        torch.testing.make_tensor(3, dtype=torch.float8_e4m3fn, device="cpu", low=2, high=2)
    with pytest.raises(ValueError, match="`low` must be less than `high`"):
        make_tensor(3, dtype=ember.float8_e4m3fn, device="cpu", low=2, high=2)


def test_bfloat16_takes_int_bounds_past_int64_as_torch():
    # (a guard, through make_tensor, of e8fc4f0a's fix in ops.creation.scalar_tensor, whose
    # tests are in tests/ops/test_tensor_huge_ints.py: ml_dtypes' bfloat16 takes no Python int
    # past int64, "expected number, got int")
    x = make_tensor(1000, dtype=ember.bfloat16, device="cpu", low=-2 ** 70, high=2 ** 70)
    assert x.dtype is ember.bfloat16 and x.abs().max().item() > 2 ** 69
    torch.testing.make_tensor(3, dtype=torch.bfloat16, device="cpu", low=-2 ** 70, high=2 ** 70)
