"""ember.testing.assert_close against torch.testing.assert_close: the same verdict and the same
message (up to the library's name) for tensors of each dtype family, NumPy arrays, numbers,
booleans, None and nested sequences and mappings, and for each option."""

import warnings

import numpy as np
import pytest
import torch

import ember


def close(make_inputs, **kwargs):
    """A case: assert_close of the inputs ``make_inputs`` builds from the library given."""
    return lambda lib: lib.testing.assert_close(*make_inputs(lib), **kwargs)


def t(*values, dtype=None):
    """A tensor of ``values`` in the library given later (dtype by its name)."""
    return lambda lib: lib.tensor(list(values) if len(values) != 1 else values[0],
                                  **({} if dtype is None else {"dtype": getattr(lib, dtype)}))


def inputs(*makers):
    """The inputs made by ``makers`` (functions of the library, or plain values)."""
    return lambda lib: [m(lib) if callable(m) else m for m in makers]


NAN, INF = float("nan"), float("inf")
CASES = {
    "floats": close(inputs(t(1.0, 2, 3), t(1.0, 2.5, 3))),
    "matrix": close(inputs(lambda L: L.tensor([[1.0, 2], [3, 4]]),
                           lambda L: L.tensor([[1.0, 2], [3, 5]]))),
    "many": close(inputs(lambda L: L.arange(24.0).reshape(2, 3, 4),
                         lambda L: L.arange(24.0).reshape(2, 3, 4) * 1.01)),
    "ints": close(inputs(t(1, 2, 3), t(1, 2, 9))),
    "uint8": close(inputs(t(1, 200, dtype="uint8"), t(3, 100, dtype="uint8"))),
    "uint8_int8": close(inputs(t(1, 200, dtype="uint8"), t(1, 100, dtype="int8")),
                        check_dtype=False),
    "bools": close(inputs(t(True, False), t(True, True))),
    "complex": close(inputs(t(1 + 1j, 2j), t(1 + 2j, 2j))),
    "float16": close(inputs(t(1.0, 2.0, dtype="float16"), t(1.0, 2.01, dtype="float16"))),
    "bfloat16": close(inputs(t(1.0, 2.0, dtype="bfloat16"), t(1.0, 2.1, dtype="bfloat16"))),
    "float8": close(inputs(lambda L: L.tensor([1.0, 2.0]).to(L.float8_e4m3fn),
                           lambda L: L.tensor([1.0, 3.0]).to(L.float8_e4m3fn))),
    "float8_tolerances": close(inputs(lambda L: L.ones(2).to(L.float8_e4m3fn),
                                      lambda L: L.ones(2).to(L.float8_e4m3fn)),
                               rtol=1e-3, atol=1e-3),
    "relative_to_zero": close(inputs(t(1.0, 0.0), t(1.0, 0.5))),
    "zero_expected": close(inputs(t(0.5, 1.0), t(0.0, 1.0))),
    "nan": close(inputs(t(NAN), t(NAN))),
    "nan_equal": close(inputs(t(NAN, 1.0), t(NAN, 1.0)), equal_nan=True),
    "opposite_infinities": close(inputs(t(INF), t(-INF))),
    "infinities": close(inputs(t(INF), t(INF))),
    "zero_dim": close(inputs(t(1.0), t(2.0))),
    "empty": close(inputs(lambda L: L.ones(0), lambda L: L.ones(0))),
    "requires_grad": close(inputs(lambda L: L.tensor([1.0, 2], requires_grad=True), t(1.0, 2))),
    "shape": close(inputs(t(1.0), t(1.0, 2))),
    "dtype": close(inputs(t(1.0, 2), t(1.0, 2, dtype="float64"))),
    "dtype_unchecked": close(inputs(t(1.0, 3), t(1.0000001, 3, dtype="float64")),
                             check_dtype=False),
    "dtype_unchecked_fails": close(inputs(t(1.0, 3), t(1.1, 3, dtype="float64")),
                                   check_dtype=False),
    "stride": close(inputs(lambda L: L.ones(2, 3), lambda L: L.ones(3, 2).t()), check_stride=True),
    "tolerances": close(inputs(t(1.0), t(1.1)), rtol=0.1, atol=0),
    "rtol_only": close(inputs(t(1.0), t(1.1)), rtol=0.1),
    "msg": close(inputs(t(1.0), t(1.1)), msg="custom"),
    "msg_callable": close(inputs(lambda L: [L.tensor([1.0])], lambda L: [L.tensor([1.1])]),
                          msg=lambda m: "X" + m),
    "python_floats": close(inputs(1.0, 1.1)),
    "python_ints": close(inputs(1, 2)),
    "int_and_float": close(inputs(1, 1.0)),
    "int_and_float_unchecked": close(inputs(1, 1.0), check_dtype=False),
    "python_complex": close(inputs(1 + 1j, 1 + 2j)),
    "numpy_scalars": close(inputs(np.float32(1.0), np.float64(1.5))),
    "booleans": close(inputs(True, False)),
    "numpy_bool": close(inputs(np.bool_(True), False)),
    "none": close(inputs(None, 1)),
    "strings": close(inputs("a", "a")),
    "numpy_arrays": close(inputs(np.array([1.0, 2]), np.array([1.0, 3]))),
    "numpy_and_tensor": close(inputs(np.array([1.0, 2]), t(1.0, 2))),
    "number_and_tensor": close(inputs(1.0, t(1.0))),
    "list": close(inputs(lambda L: [L.tensor(1.0), L.tensor(2.0)],
                         lambda L: [L.tensor(1.0), L.tensor(3.0)])),
    "list_and_tuple": close(inputs([1, 2], (1, 2))),
    "lengths": close(inputs([1, 2], [1, 2, 3])),
    "lengths_msg": close(inputs([1, 2], [1, 2, 3]), msg="custom"),  # (pairing: msg unused)
    "types_msg_callable": close(inputs([1], ["a"]), msg=lambda m: "X" + m),
    "keys_msg": close(inputs({"a": 1}, {"b": 1}), msg="custom"),
    "half_tolerances_msg": close(inputs(t(1.0), t(1.1)), rtol=0.1, msg="custom"),
    "dict": close(inputs(lambda L: {"a": L.tensor(1.0)}, lambda L: {"a": L.tensor(2.0)})),
    "keys": close(inputs(lambda L: {"a": L.tensor(1.0)}, lambda L: {"b": L.tensor(2.0)})),
    "nested": close(inputs(lambda L: {"x": [1, (2.0, L.tensor([1.0, 2.0]))]},
                           lambda L: {"x": [1, (2.0, L.tensor([1.0, 2.1]))]})),
    "structure_first": close(inputs(lambda L: [L.tensor(1.0), [1, 2]],
                                    lambda L: [L.tensor(2.0), [1, 2, 3]])),
    "quantized": close(inputs(lambda L: L.quantize_per_tensor(L.tensor([1.0, 2.0]), 0.1, 0,
                                                              L.quint8),
                              lambda L: L.quantize_per_tensor(L.tensor([1.0, 2.5]), 0.1, 0,
                                                              L.quint8))),
    "quantized_dtype": close(inputs(lambda L: L.quantize_per_tensor(L.ones(2), 0.1, 0, L.quint8),
                                    lambda L: L.quantize_per_tensor(L.ones(2), 0.1, 0, L.qint8))),
    "quantized_scheme": close(inputs(
        lambda L: L.quantize_per_tensor(L.ones(1, 2), 0.1, 0, L.quint8),
        lambda L: L.quantize_per_channel(L.ones(1, 2), L.tensor([0.1]), L.tensor([0]), 0,
                                         L.quint8))),
    # meta tensors: attributes only, no values to compare (Ember copied them out: NoDataError)
    "meta": close(inputs(lambda L: L.empty(2, 3, device="meta"),
                         lambda L: L.empty(2, 3, device="meta"))),
    "meta_shape": close(inputs(lambda L: L.empty(2, device="meta"),
                               lambda L: L.empty(3, device="meta"))),
    "meta_cpu": close(inputs(lambda L: L.empty(2, device="meta"), lambda L: L.zeros(2)),
                      check_device=False),
    "bool_0d": close(inputs(t(True), t(False))),  # (was "Expected 0 but got 1")
    "allclose": lambda L: L.testing.assert_allclose([1.0, 2.0], [1.0, 2.01]),
    "allclose_nan": lambda L: L.testing.assert_allclose(L.tensor([1.0, NAN]), [1.0, NAN]),
}


def _outcome(lib, case):
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", FutureWarning)  # (assert_allclose's deprecation)
            warnings.simplefilter("ignore", UserWarning)  # (torch's quantized deprecation)
            case(lib)
    except Exception as err:  # noqa: BLE001 - the outcome is what is compared
        return type(err), str(err).replace("ember.tensor.Tensor", "torch.Tensor")
    return None


@pytest.mark.parametrize("name", CASES)
def test_same_verdict_and_message_as_torch(name):
    expected = _outcome(torch, CASES[name])
    actual = _outcome(ember, CASES[name])
    if expected is None:
        assert actual is None
    else:
        assert actual is not None and actual[0] is expected[0]
        assert actual[1].replace("ember.", "torch.") == expected[1]


def test_subclasses_and_devices():
    p, t = ember.nn.Parameter(ember.ones(2)), ember.ones(2)
    ember.testing.assert_close(p, t)
    with pytest.raises(TypeError, match="No comparison pair"):
        ember.testing.assert_close(p, t, allow_subclasses=False)


def test_assert_allclose_is_deprecated():
    with pytest.warns(FutureWarning, match="assert_allclose.*deprecated.*assert_close"):
        ember.testing.assert_allclose(ember.tensor([1.0]), [1.0])


@pytest.mark.parametrize("dtype, actual, expected", [
    ("int64", 2 ** 62, -(2 ** 62)), ("int64", -(2 ** 63), 0), ("uint64", 2 ** 63 + 5, 5)])
def test_integer_differences_do_not_wrap(dtype, actual, expected):
    # |actual - expected| is 2**63: computed in int64 it wraps to a negative number, which
    # would pass as "close" (PyTorch fails here too, with a wrapped difference in its message)
    a, e = (ember.tensor([1, v], dtype=getattr(ember, dtype)) for v in (actual, expected))
    with pytest.raises(AssertionError, match=r"Greatest absolute difference: 9223372036854775808 "
                                             r"at index \(1,\)"):
        ember.testing.assert_close(a, e)
    with pytest.raises(AssertionError, match="Expected"):
        ember.testing.assert_close(a[1], e[1], rtol=0.5, atol=0)


@pytest.mark.parametrize("actual, expected", [(ember.tensor([1.0]), ember.tensor([1.0])), (1, 1)])
def test_negative_tolerances_are_refused(actual, expected):
    with pytest.raises(ValueError, match="non-negative.*rtol=-1 and atol=0"):
        ember.testing.assert_close(actual, expected, rtol=-1, atol=0)
    with pytest.raises(ValueError, match="non-negative.*rtol=nan and atol=0"):
        ember.testing.assert_close(actual, expected, rtol=NAN, atol=0)  # (NaN passed)
    with pytest.raises(RuntimeError):  # (PyTorch: its isclose's error, wrapped)
        torch.testing.assert_close(torch.tensor([1.0]), torch.tensor([1.0]), rtol=NAN, atol=0)


def test_subclasses_of_numbers_compare_as_their_base_type():
    # (PyTorch fails on them with an internal error; Ember compared them and raised KeyError)
    import enum

    class Level(enum.IntEnum):
        LOW = 1

    class Meters(float):
        pass

    ember.testing.assert_close(Level.LOW, 1, check_dtype=False)
    ember.testing.assert_close(Meters(1.0), 1.0 + 1e-9, check_dtype=False)
    with pytest.raises(AssertionError, match="The \\(d\\)types do not match: <enum 'Level'> "
                                             "!= <class 'int'>"):
        ember.testing.assert_close(Level.LOW, 1)
    with pytest.raises(AssertionError, match="Scalars are not close"):
        ember.testing.assert_close(Meters(1.0), 2.0, check_dtype=False)
