"""nn.utils corners found by the session-63 sweep, each checked against torch."""

import numpy as np
import pytest
import torch

import ember


def _outcome(fn):
    """``fn()``'s value as a list, or the exception's base class (TypeError, RuntimeError)."""
    try:
        return fn().tolist()
    except TypeError:
        return TypeError
    except RuntimeError:
        return RuntimeError


@pytest.mark.parametrize("values, dtype, padding_value", [
    ([[1, 2], [3]], "uint8", -1),  # a float -1.0 does not fit uint8 (ember wrapped to 255)
    ([[1, 2], [3, 4]], "uint8", -1),  # checked even when nothing needs padding
    ([[1.0, 2.0], [3.0]], "float16", 1e6),  # (ember padded with inf)
    ([[1, 2], [3]], "int8", 300),
    ([[1, 2], [3]], "int8", -128),
    ([[1, 2], [3]], "int64", 2.7),  # truncated to 2, as torch
    ([[True, False], [True]], "bool", 2),
    ([[1.0, 2.0], [3.0]], "float32", None),  # (ember padded with uninitialised memory)
    ([[1.0, 2.0], [3.0]], "float32", "0"),
    ([[1.0, 2.0], [3.0]], "complex64", 1j),
    ([[1.0, 2.0], [3.0]], "float32", [5.0, 6.0]),
])
def test_pad_sequence_padding_value_is_a_float_that_fits_the_dtype(values, dtype, padding_value):
    def pad(lib):
        seqs = [lib.tensor(v, dtype=getattr(lib, dtype)) for v in values]
        return lambda: lib.nn.utils.rnn.pad_sequence(seqs, padding_value=padding_value)

    assert _outcome(pad(ember)) == _outcome(pad(torch))


@pytest.mark.parametrize("padding_value", [None, [5.0, 6.0], -2.5])
def test_pad_packed_sequence_padding_value_must_be_a_number(padding_value):
    def pad(lib):
        packed = lib.nn.utils.rnn.pack_sequence([lib.ones(3), lib.ones(1)])
        return lambda: lib.nn.utils.rnn.pad_packed_sequence(packed,
                                                            padding_value=padding_value)[0]

    assert _outcome(pad(ember)) == _outcome(pad(torch))


@pytest.mark.parametrize("total_length", [4.0, "4", np.int64(4), 4])
def test_pad_packed_sequence_total_length_must_be_an_int(total_length):
    def pad(lib):
        packed = lib.nn.utils.rnn.pack_sequence([lib.ones(2), lib.ones(1)])
        return lambda: lib.nn.utils.rnn.pad_packed_sequence(packed,
                                                            total_length=total_length)[0]

    assert _outcome(pad(ember)) == _outcome(pad(torch))
    if not isinstance(total_length, (int, np.integer)):  # (was Python's "can't multiply
        # sequence by non-int of type 'float'")
        with pytest.raises(TypeError, match="pad_packed_sequence.*'total_length' must be int"):
            pad(ember)()
