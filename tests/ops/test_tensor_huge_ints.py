"""tensor() of Python ints beyond every NumPy integer dtype (NumPy reads them as objects): an
overflow error for an integer dtype, floats for a float/complex/bool one, as in PyTorch (it
said "non-numeric data")."""

import numpy as np
import pytest
import torch

import ember
from ember.errors import ValueOverflow


@pytest.mark.parametrize("data, dtype", [
    (-2**63 - 1, "float64"), (2**64, "float32"), ([2**64, 1], "float64"), (2**64, "bool"),
    ([2**70, -2**70], "complex64")])
def test_huge_ints_into_a_float_dtype_match_torch(data, dtype):
    want = torch.tensor(data, dtype=getattr(torch, dtype))
    got = ember.tensor(data, dtype=getattr(ember, dtype))
    assert got.dtype == getattr(ember, dtype)
    np.testing.assert_array_equal(got.numpy(), want.numpy())


@pytest.mark.parametrize("data, dtype", [(-2**63 - 1, None), (2**64, "int64"), ([1, 2**65], None)])
def test_huge_ints_into_an_integer_dtype_overflow(data, dtype):
    with pytest.raises(ValueOverflow, match="cannot be converted to int64 without overflow"):
        ember.tensor(data, dtype=getattr(ember, dtype) if dtype else None)


@pytest.mark.parametrize("data, dtype", [
    ([2**64, 1.5], None), ([-2**64, 1.5, True], None), ([[2**64], [1.5]], None),
    ([2**64, np.float64(1.5)], None), ([2**64, np.float16(1.5)], None), ([2**64, 1 + 2j], None),
    ([2**64, True], "float32"), ([2**64, np.int64(1)], "float32"), ([2**64, 1.5], "bool"),
    ([2**64, 1.5], "complex64")])
def test_huge_ints_among_other_numbers_match_torch(data, dtype):
    # (these said "non-numeric data": only lists of Python ints alone were read)
    want = torch.tensor(data, dtype=None if dtype is None else getattr(torch, dtype))
    got = ember.tensor(data, dtype=None if dtype is None else getattr(ember, dtype))
    assert str(got.dtype).split(".")[-1] == str(want.dtype).split(".")[-1]
    np.testing.assert_array_equal(got.numpy(), want.numpy())


@pytest.mark.parametrize("data, dtype", [
    ([2**64, True], None), ([2**64, np.int64(1)], None), ([2**64, np.uint8(3)], None),
    ([2**64, 1.5], "int64"), ([2**64, 1.5], "uint8")])
def test_huge_ints_among_ints_or_into_an_integer_dtype_overflow(data, dtype):
    with pytest.raises(ValueOverflow, match="18446744073709551616 cannot be converted"):
        ember.tensor(data, dtype=getattr(ember, dtype) if dtype else None)


def test_object_array_without_ints_stays_refused():
    with pytest.raises(TypeError, match="non-numeric data"):
        ember.tensor(np.array([1.5], dtype=object))


@pytest.mark.parametrize("values", [[1, 2.5], [True, 2], [1, 2], [2 ** 64]])
def test_numpy_object_arrays_are_refused_as_torch(values):
    # (the huge-int reading took them: [1, 2.5] and [True, 2] came back float64)
    data = np.array(values, dtype=object)
    with pytest.raises(TypeError):
        torch.tensor(data)
    with pytest.raises(TypeError, match="tensor: non-numeric data"):
        ember.tensor(data)


@pytest.mark.parametrize("value", [2 ** 63, 2 ** 64 - 1])
def test_a_python_int_past_int64_meets_a_bfloat16_tensor_as_torch(value):
    # (ml_dtypes' bfloat16 takes no Python int past int64: "expected number, got int")
    want = torch.ones(2, dtype=torch.bfloat16) + value
    got = ember.ones(2, dtype=ember.bfloat16) + value
    assert got.dtype is ember.bfloat16
    np.testing.assert_array_equal(got.float().numpy(), want.float().numpy())


@pytest.mark.parametrize("value", [2 ** 63, 2 ** 64 - 1])
@pytest.mark.parametrize("op", [
    lambda m, x, v: x ** v, lambda m, x, v: x.clone().pow_(v),
    lambda m, x, v: m.nn.functional.hardtanh(x, -2 ** 63, v),
    lambda m, x, v: m.nn.functional.hardshrink(x, v)],
    ids=["pow", "pow_", "hardtanh", "hardshrink"])
def test_a_python_int_past_int64_as_a_bfloat16_op_parameter_as_torch(op, value):
    # (a scalar parameter reaches NumPy with the bfloat16 array: "expected number, got int")
    data = [0.5, -1.0, 2.5, 3e19, -3e19]  # (±3e19: past both bounds)
    outs = []
    for m in (torch, ember):
        x = m.tensor(data, dtype=m.bfloat16, requires_grad=True)
        y = op(m, x, value)
        y.backward(m.ones_like(y))
        assert y.dtype is m.bfloat16
        outs.append((y.detach().float().numpy(), x.grad.float().numpy()))
    for want, got in zip(*outs):
        np.testing.assert_array_equal(got, want)


def test_a_64_bit_overflow_does_not_hint_a_wider_integer_dtype():
    """(the hint said 'use a wider dtype, e.g. ember.int64' when int64 had overflowed)"""
    for make in (lambda: ember.full((1,), 2**63, dtype=ember.int64),
                 lambda: ember.zeros(2, dtype=ember.int64).fill_(-2**63 - 1),
                 lambda: ember.arange(2**63)):
        with pytest.raises(OverflowError, match=r"Hint: use a float dtype \(integers stop at 64"):
            make()
    with pytest.raises(OverflowError, match="Hint: use a wider dtype, e.g. ember.int64"):
        ember.zeros(2, dtype=ember.int32).fill_(2**40)
