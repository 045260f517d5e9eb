"""Ints past 64 bits, and np.uint64 past int64, given as number parameters are refused as
PyTorch refuses them (OverflowError / TypeError there), not computed or wrapped (cast57)."""

import numpy as np
import pytest
import torch
import torch.nn.functional as TF

import ember
import ember.nn.functional as EF
from ember.errors import ValueOverflow

BIG = np.uint64(2**63 + 5)

CASES = {
    "lerp": lambda L, F, v: L.lerp(L.zeros(2), L.ones(2), v),
    "hardtanh_max": lambda L, F, v: F.hardtanh(L.ones(2), max_val=v),
    "hardtanh_min": lambda L, F, v: F.hardtanh(L.ones(2), min_val=-v if type(v) is int else v,
                                               max_val=float("inf")),
    "leaky_relu": lambda L, F, v: F.leaky_relu(L.ones(2), v),
    "elu": lambda L, F, v: F.elu(-L.ones(2), v),
    "softplus": lambda L, F, v: F.softplus(L.ones(2), v),
    "hardshrink": lambda L, F, v: F.hardshrink(L.ones(2), v),
    "softshrink": lambda L, F, v: F.softshrink(L.ones(2), v),
    "arange_float": lambda L, F, v: L.arange(0.0, v),
    "arange_range": lambda L, F, v: L.range(0.0, v),
    "arange_linspace": lambda L, F, v: L.linspace(0.0, v, 3),
    "clamp": lambda L, F, v: L.clamp(L.ones(2), max=v),
    "add_int64": lambda L, F, v: L.add(L.ones(2, dtype=L.int64), v),
}


@pytest.mark.parametrize("case", sorted(CASES))
@pytest.mark.parametrize("value", [2**64, 2**70, BIG], ids=["2^64", "2^70", "np_uint64"])
@pytest.mark.filterwarnings("ignore::UserWarning")  # (range is deprecated)
def test_refused_as_torch(case, value):
    if case.startswith("arange") and type(value) is not int:
        pytest.skip("arange reads np.uint64 as NumPy does")
    with pytest.raises((OverflowError, TypeError)) as refused:
        CASES[case](torch, TF, value)
    with pytest.raises(refused.type, match=r"beyond|cannot be converted") as got:  # (torch's type:
        CASES[case](ember, EF, value)  # TypeError for a np.uint64, OverflowError for an int)
    assert isinstance(got.value, ValueOverflow) != (type(value) is np.uint64)


def test_message_names_op_and_value():
    with pytest.raises(ValueOverflow, match=r"lerp: 18446744073709551616 is beyond"):
        ember.lerp(ember.zeros(2), ember.ones(2), 2**64)
    with pytest.raises(TypeError, match=r"np.uint64\(9223372036854775813\) is beyond int64"):
        ember.ones(2, dtype=ember.int64) + BIG


@pytest.mark.parametrize("value", [2**63 + 5, 2**64 - 1, np.uint64(5)])
def test_in_range_still_computes_as_torch(value):
    for case in ("lerp", "hardtanh_max", "leaky_relu", "add_int64"):
        want = CASES[case](torch, TF, value)
        got = CASES[case](ember, EF, value)
        np.testing.assert_array_equal(got.numpy(), want.numpy())
