"""FFTs of half-precision inputs under autocast: complex64, as PyTorch's CPU autocast (its
float32 list) gives them; ihfft (and rfft with norm="forward") of bfloat16 raised NumPy's
"no loop matching" error."""

import numpy as np
import pytest
import torch

import ember

FFTS = {
    "ihfft": lambda fft, x: fft.ihfft(x),
    "rfft_forward": lambda fft, x: fft.rfft(x, norm="forward"),
    "rfftn_forward": lambda fft, x: fft.rfftn(x, norm="forward"),
}


@pytest.mark.parametrize("dtype", ["bfloat16", "float16"])
@pytest.mark.parametrize("name", list(FFTS))
def test_half_inputs_under_autocast_match_torch(name, dtype):
    x = np.random.default_rng(0).standard_normal((4, 6)).astype(np.float32)
    results = []
    for lib in (ember, torch):
        with lib.autocast("cpu"):
            y = FFTS[name](lib.fft, lib.tensor(x).to(getattr(lib, dtype)))
        y = y.resolve_conj() if lib is torch else y
        results.append((str(y.dtype).split(".")[-1], y.numpy()))
    (ours, ours_values), (theirs, theirs_values) = results
    assert ours == theirs == "complex64"
    np.testing.assert_allclose(ours_values, theirs_values, rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("fn", [ember.fft.ihfft2, ember.fft.ihfftn])
def test_ihfft2_and_ihfftn_of_bfloat16_run_in_float32(fn):
    # (PyTorch refuses these two for half inputs, under autocast too; Ember computes them as
    # it does for float16, in float32, where bfloat16 was NumPy's "no loop matching" error)
    x = ember.randn(4, 6)
    y = fn(x.bfloat16())
    assert y.dtype is ember.complex64
    np.testing.assert_allclose(y.numpy(), fn(x.bfloat16().float()).numpy(), rtol=1e-6)
