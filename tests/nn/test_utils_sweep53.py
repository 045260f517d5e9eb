"""nn.utils corners found by the session-53 sweep, each checked against torch."""

import warnings

import pytest
import torch

import ember


@pytest.mark.parametrize("half", ["float16", "bfloat16"])
@pytest.mark.parametrize("foreach", [None, True])
def test_clip_grad_norm_scales_half_gradients_with_one_rounding(half, foreach):
    def scenario(lib):  # a float32 total norm: the half gradients scale by it unrounded
        a = lib.nn.Parameter(lib.zeros(3, dtype=getattr(lib, half)))
        b = lib.nn.Parameter(lib.zeros(3))
        a.grad = lib.tensor([600.0, 900.0, -700.0], dtype=getattr(lib, half))
        b.grad = lib.tensor([900.0, 1200.0, 5.0])
        total = lib.nn.utils.clip_grad_norm_([a, b], 1.0, foreach=foreach)
        return float(total), a.grad.double().tolist(), b.grad.tolist()

    assert scenario(ember) == scenario(torch)


def test_stateless_functional_call_is_deprecated_and_func_functional_call_is_not():
    for lib in (ember, torch):
        m = lib.nn.Linear(2, 1)
        with pytest.warns(FutureWarning, match="stateless.functional_call` is deprecated"):
            old = lib.nn.utils.stateless.functional_call(m, {"bias": lib.ones(1)}, lib.ones(1, 2))
        with warnings.catch_warnings():
            warnings.simplefilter("error")
            new = lib.func.functional_call(m, {"bias": lib.ones(1)}, lib.ones(1, 2))
        assert float(old) == float(new)
