"""Differences the fft48 sweep of ember.fft and stft/istft against torch found: each fails
before its fix."""

import math
import re

import numpy as np
import pytest
import torch

import ember
from ember.errors import ArgumentError, ArgumentTypeError, IndexOutOfRange, type_name


@pytest.mark.parametrize("name", ["fft", "ifft", "rfft", "irfft", "hfft", "ihfft"])
def test_a_bad_dim_is_reported_before_a_bad_n_as_torch(name):
    # torch checks dim first: an IndexError, not the n error
    with pytest.raises(IndexError):
        getattr(torch.fft, name)(torch.ones(4), n=0, dim=3)
    with pytest.raises(IndexOutOfRange, match=f"{name}: dimension 3"):
        getattr(ember.fft, name)(ember.ones(4), n=0, dim=3)


@pytest.mark.parametrize("name", ["fftfreq", "rfftfreq"])
def test_a_complex_spacing_is_refused_as_torch(name):
    # it was cast to float32 with a warning: all frequencies 0
    with pytest.raises(TypeError, match="argument 'd' .*must be float"):
        getattr(torch.fft, name)(4, 1j)
    with pytest.raises(ArgumentTypeError, match=f"{name}: the sample spacing d must be a "
                       "number, got complex"):
        getattr(ember.fft, name)(4, 1j)


@pytest.mark.parametrize("name", ["fftfreq", "rfftfreq"])
def test_complex_frequencies_divide_in_the_real_dtype(name):
    # complex division made d=0's infinities inf+nanj; the real ones are inf+0j
    mine = getattr(ember.fft, name)(4, 0.0, dtype=ember.complex128)
    ref = getattr(torch.fft, name)(4, 0.0, dtype=torch.float64)
    assert mine.dtype is ember.complex128
    assert [complex(v) for v in mine.tolist()][1:] == [complex(v) for v in ref.tolist()][1:]
    assert math.isnan(complex(mine[0].item()).real)


def test_a_nola_failure_is_a_runtime_error_as_torch():
    spec = torch.ones(5, 4, dtype=torch.complex128)
    window = torch.hann_window(8, dtype=torch.float64)
    with pytest.raises(RuntimeError, match="window overlap add min"):
        torch.istft(spec, 8, hop_length=2, window=window, center=False)
    with pytest.raises(RuntimeError, match="istft: the window overlap-add"):
        ember.istft(ember.tensor(spec.numpy()), 8, hop_length=2, center=False,
                    window=ember.tensor(window.numpy()))


@pytest.mark.parametrize("s", [np.array([2, 5]), ember.tensor([2, 5])], ids=["ndarray", "tensor"])
def test_s_as_an_array_is_read_as_ints(s):
    # a NumPy ValueError ('truth value of an array') or 'argument s must be bool' leaked;
    # torch refuses both (TypeError), Ember reads them as the ints they hold
    with pytest.raises(TypeError):
        torch.fft.fftn(torch.ones(4, 3), s=torch.tensor([2, 5]))
    assert tuple(ember.fft.fftn(ember.ones(4, 3), s=s).shape) == (2, 5)
    assert tuple(ember.fft.irfftn(ember.ones(4, 3), s=s).shape) == (2, 5)


@pytest.mark.parametrize("s", [np.array([2.0, 5.0]), ember.tensor([2.0, 5.0]),
                               ember.tensor([True, True])], ids=["ndarray", "tensor", "bool"])
def test_s_as_an_array_of_non_ints_names_a_sequence_of_ints(s):
    # it said "argument 's' must be int, not a Tensor of shape (2,)" (s is a sequence)
    with pytest.raises(TypeError):
        torch.fft.fftn(torch.ones(4, 3), s=torch.tensor([2.0, 5.0]))
    with pytest.raises(ArgumentTypeError, match="fftn: s must be a sequence of ints, got a "
                       rf"{re.escape(type_name(s))} of (float|bool)"):
        ember.fft.fftn(ember.ones(4, 3), s=s)


@pytest.mark.parametrize("name", ["fft", "irfft", "hfft"])
def test_norm_as_bytes_is_read_as_torch(name):
    x = np.arange(1.0, 5.0)
    ref = getattr(torch.fft, name)(torch.tensor(x), norm=b"ortho")
    mine = getattr(ember.fft, name)(ember.tensor(x), norm=b"ortho")
    np.testing.assert_allclose(mine.numpy(), ref.numpy(), rtol=1e-12)
    with pytest.raises(ArgumentError, match="invalid normalization mode 'orth'"):
        getattr(ember.fft, name)(ember.tensor(x), norm=b"orth")


@pytest.mark.parametrize("norm", [1, ["ortho"]], ids=["int", "list"])
def test_a_norm_that_is_no_string_is_a_type_error_as_torch(norm):
    with pytest.raises(TypeError, match="argument 'norm' must be str"):
        torch.fft.fft(torch.ones(4), norm=norm)
    with pytest.raises(ArgumentTypeError, match="fft: norm must be a string or None, got"):
        ember.fft.fft(ember.ones(4), norm=norm)


@pytest.mark.parametrize("name", ["stft", "istft"])
def test_a_window_that_is_no_tensor_is_a_type_error_as_torch(name):
    # a list leaked "'list' object has no attribute 'dtype'"
    def call(lib):
        x = lib.ones(5, 4, dtype=lib.complex64) if name == "istft" else lib.ones(20)
        return getattr(lib, name)(x, 8, window=[1.0] * 8, return_complex=name == "stft")
    with pytest.raises(TypeError):
        call(torch)
    with pytest.raises(ArgumentTypeError, match=f"{name}: window must be a Tensor or None, got "
                       "list"):
        call(ember)
