"""dtypes and PyTorch's promotion rules."""

import itertools

import numpy as np
import pytest
import torch

import ember
from ember import dtypes

PAIRS = [(d, getattr(torch, d.name)) for d in dtypes.ALL_DTYPES]


@pytest.mark.parametrize("a,b", list(itertools.product(PAIRS, PAIRS)),
                         ids=lambda p: p[0].name)
def test_promote_types_matches_torch(a, b):
    try:
        want = str(torch.promote_types(a[1], b[1])).removeprefix("torch.")
    except RuntimeError:  # (uint16/32/64 and float8 types promote with few others or none)
        with pytest.raises(ember.DTypeError, match="is not supported"):
            ember.promote_types(a[0], b[0])
        return
    assert ember.promote_types(a[0], b[0]).name == want


@pytest.mark.parametrize("dtype,scalar", list(itertools.product(PAIRS, [True, 3, 2.5])),
                         ids=str)
def test_result_type_with_python_scalars_matches_torch(dtype, scalar):
    try:
        ref = str(torch.result_type(torch.zeros(2, dtype=dtype[1]), scalar))
    except RuntimeError:
        with pytest.raises(ember.DTypeError):
            ember.result_type(ember.zeros(2, dtype=dtype[0]), scalar)
        return
    mine = ember.result_type(ember.zeros(2, dtype=dtype[0]), scalar)
    assert mine.name == ref.removeprefix("torch.")


def test_zero_dim_tensors_rank_below_dimensioned_ones():
    a = ember.zeros(2, dtype=ember.float16)
    b = ember.zeros((), dtype=ember.float64)
    assert ember.result_type(a, b) is ember.float16
    assert ember.result_type(ember.zeros(2, dtype=ember.int32), b) is ember.float64


def test_default_dtype_round_trip():
    assert ember.get_default_dtype() is ember.float32
    ember.set_default_dtype(ember.float64)
    try:
        assert ember.tensor([1.5]).dtype is ember.float64
        assert ember.result_type(ember.zeros(1, dtype=ember.int64), 1.5) is ember.float64
    finally:
        ember.set_default_dtype(ember.float32)
    with pytest.raises(ember.DTypeError):
        ember.set_default_dtype(ember.int32)


def test_names_and_aliases():
    assert ember.float is ember.float32 and ember.long is ember.int64 and ember.int is ember.int32
    assert dtypes.to_dtype("torch.float64") is ember.float64
    assert dtypes.to_dtype(np.float16) is ember.float16
    assert repr(ember.bfloat16) == "ember.bfloat16"
    with pytest.raises(ember.DTypeError, match="unknown dtype"):
        dtypes.to_dtype("float128")


@pytest.mark.parametrize("name", ["bfloat16", "float8_e4m3fn", "float8_e5m2"])
def test_tensor_of_a_numpy_array_of_an_ml_dtypes_dtype_keeps_it(name):
    # (ember.tensor(t.numpy()) of a bfloat16 tensor said "non-numeric data": ml_dtypes' kind
    # is 'V'; as_tensor and from_numpy took it)
    dtype = getattr(ember, name)
    array = ember.tensor([0.5, -2.0]).to(dtype).numpy()
    got = ember.tensor(array)
    assert got.dtype is dtype and got.tolist() == [0.5, -2.0]
    assert ember.tensor(array, dtype=ember.float32).tolist() == [0.5, -2.0]


@pytest.mark.parametrize("name", ["bool", "uint8", "int8", "int16", "int32", "int64",
                                  "float16", "bfloat16", "float32", "float64", "complex64"])
def test_extreme_is_where_a_running_max_or_min_starts(name):
    dtype = getattr(ember, name)
    low, high = dtypes.extreme(dtype), dtypes.extreme(dtype, highest=True)
    if dtype is ember.bool:
        assert (low, high) == (False, True)
    elif dtype.is_floating_point or dtype.is_complex:
        assert (low, high) == (-np.inf, np.inf)
    else:
        info = np.iinfo(dtype.np)
        assert (low, high) == (info.min, info.max) and type(low) is int


def test_finfo_of_ml_dtypes_types_as_torch():
    assert ember.finfo(ember.bfloat16).eps == 2.0 ** -7  # (ml_dtypes.finfo: no np.finfo needed)
    assert ember.finfo(ember.float8_e4m3fn).max == 448.0
    for name in ("bfloat16", "float8_e4m3fn", "float8_e5m2"):
        ours, theirs = ember.finfo(getattr(ember, name)), torch.finfo(getattr(torch, name))
        assert (ours.eps, ours.max, ours.tiny) == (theirs.eps, theirs.max, theirs.tiny), name


@pytest.mark.parametrize("name", ["int8", "int16", "int32", "int64", "uint8", "uint16",
                                  "uint32", "uint64"])
def test_iinfo_repr_matches_torch(name):
    # (torch prints the limits with %g: iinfo(min=-2.14748e+09, max=2.14748e+09, dtype=int32))
    assert repr(ember.iinfo(getattr(ember, name))) == repr(torch.iinfo(getattr(torch, name)))
    assert str(ember.iinfo(getattr(ember, name))) == str(torch.iinfo(getattr(torch, name)))


@pytest.mark.parametrize("name", ["float8_e4m3fn", "float8_e5m2"])
def test_a_float8_tensor_meets_a_complex_number_with_torch_s_error(name):
    # (result_type gave the float8 dtype itself, and float8 + 1j a bare "expected number,
    # got complex" from inside NumPy)
    t = torch.ones(2, dtype=getattr(torch, name))
    e = ember.ones(2, dtype=getattr(ember, name))
    for fn in (lambda m, x: m.result_type(x, 1j), lambda m, x: x + 1j):
        with pytest.raises(RuntimeError, match="Complex"):
            fn(torch, t)
        with pytest.raises(ember.errors.DTypeError, match=f"{name} has no complex"):
            fn(ember, e)


@pytest.mark.parametrize("kind", [float, complex, int, bool])
def test_a_python_type_as_dtype_is_torch_s(kind):
    # (dtype=float gave float32, the default dtype; torch reads Python's float as float64 and
    # complex as complex128 whatever the default)
    want = str(torch.zeros(1, dtype=kind).dtype).removeprefix("torch.")
    assert ember.zeros(1, dtype=kind).dtype.name == want
    assert ember.tensor([1], dtype=kind).dtype.name == want
    assert ember.tensor([1]).to(kind).dtype.name == want


@pytest.mark.parametrize("info", ["finfo", "iinfo", "can_cast"])
@pytest.mark.parametrize("make, hint", [
    (lambda m: m.tensor(1.0), "Hint: pass its dtype"), (lambda m: None, ""), (lambda m: 3, ""),
    (lambda m: [1], ""), (lambda m: np.zeros(2, np.int32), "Hint: pass its dtype")],
    ids=["tensor", "None", "int", "list", "ndarray"])
def test_limits_of_what_is_no_dtype_are_a_type_error_as_torch(info, make, hint):
    # (a tensor said "Could not convert tensor(1.) to a NumPy dtype", a ValueError;
    # iinfo(None) said "expected an integer dtype, got float64", can_cast(None, ...) was True;
    # an int or an array named no op)
    def call(m):
        return m.can_cast(make(m), m.float32) if info == "can_cast" else \
            getattr(m, info)(make(m))
    if info != "finfo" or make(torch) is not None:  # (finfo(None) is the default dtype's)
        with pytest.raises(TypeError):
            call(torch)
        with pytest.raises(TypeError, match=f"^{info}: .*a dtype.*{hint}"):
            call(ember)


@pytest.mark.parametrize("make", [lambda m: m.tensor(1.0), lambda m: np.zeros(2)],
                         ids=["tensor", "ndarray"])
def test_a_tensor_given_as_a_dtype_is_a_dtype_error_with_a_hint(make):
    # (NumPy's "Could not convert tensor(1.) to a NumPy dtype", a ValueError, escaped)
    with pytest.raises(TypeError):
        torch.zeros(2, dtype=make(torch))
    with pytest.raises(ember.errors.DTypeError, match=r"cannot read a dtype from a "
                                                      r".*Hint: pass its dtype, x\.dtype"):
        ember.zeros(2, dtype=make(ember))


def test_promote_types_refuses_a_non_dtype_as_torch():
    # (before: promote_types("float32", ember.int64) raised a bare AttributeError)
    for args, name in [((ember.float32, 3), "type2"), ((None, ember.int8), "type1"),
                       (("float32", ember.int8), "type1"), ((ember.ones(1), ember.int8), "type1")]:
        with pytest.raises(TypeError, match=f"promote_types\\(\\): argument '{name}'"):
            ember.promote_types(*args)
        with pytest.raises(TypeError):
            torch.promote_types(*(torch.ones(1) if isinstance(a, ember.Tensor) else
                                  getattr(torch, a.name) if isinstance(a, ember.dtype) else a
                                  for a in args))
