"""Hyperparameters that are not Python floats, against PyTorch 2.13. Tensor betas of
Adam/AdamW stay tensors there: the bias corrections are tensor arithmetic in the betas' dtype,
a number over them is a reciprocal times it, and the first moment's lerp weight is
``1 - beta1`` cast to the parameters' dtype (Ember read them as floats: float64 parameters
ended 1.5e-6 apart, bfloat16 ones 0.01). A NumPy float32 lr is NumPy's float32 arithmetic."""

from __future__ import annotations

import numpy as np
import pytest
import torch

import ember

OPTIONS = [dict(), dict(amsgrad=True, weight_decay=0.1), dict(weight_decay=0.1)]


def run(lib, name, dtype, betas_dtype, n=50, steps=8, tensor_lr=False, **kwargs):
    p = lib.tensor(np.linspace(-1.0, 1.0, n), dtype=getattr(lib, dtype), requires_grad=True)
    betas = tuple(lib.tensor(b, dtype=getattr(lib, betas_dtype)) for b in (0.9, 0.999))
    opt = getattr(lib.optim, name)([p], lr=lib.tensor(0.1) if tensor_lr else 0.1, betas=betas,
                                   **kwargs)
    for i in range(steps):
        p.grad = lib.tensor(np.cos(np.arange(n) * (i + 1.0)), dtype=getattr(lib, dtype))
        opt.step()
    return p.detach().to(lib.float64).numpy()


@pytest.mark.parametrize("name", ["Adam", "AdamW"])
@pytest.mark.parametrize("kwargs", OPTIONS, ids=str)
def test_float32_betas_on_float64_parameters_as_torch(name, kwargs):
    # (what is left, ~1e-8, is PyTorch's float32 sqrt of 1 - beta2 ** t, which on this CPU
    # is not correctly rounded for 1 in 5 inputs)
    np.testing.assert_allclose(run(ember, name, "float64", "float32", **kwargs),
                               run(torch, name, "float64", "float32", **kwargs),
                               rtol=1e-7, atol=1e-7)


@pytest.mark.parametrize("name", ["Adam", "AdamW"])
def test_float64_betas_with_a_float32_tensor_lr_as_torch(name):
    # (two 0-d tensors promote: lr / (1 - beta1 ** t) is float64, not float32)
    np.testing.assert_allclose(run(ember, name, "float64", "float64", tensor_lr=True),
                               run(torch, name, "float64", "float64", tensor_lr=True),
                               rtol=1e-13, atol=1e-15)


@pytest.mark.parametrize("name", ["Adam", "AdamW"])
@pytest.mark.parametrize("betas_dtype", ["float32", "float64"])
def test_tensor_betas_on_bfloat16_parameters_bit_for_bit(name, betas_dtype):
    # (32 elements: PyTorch's vectorized loop covers them all; its scalar tail rounds twice)
    ours = run(ember, name, "bfloat16", betas_dtype, n=32, amsgrad=True)
    np.testing.assert_array_equal(ours, run(torch, name, "bfloat16", betas_dtype, n=32,
                                            amsgrad=True))


def test_float_betas_are_unchanged():
    p = ember.tensor([1.0, -2.0], requires_grad=True)
    opt = ember.optim.Adam([p], lr=0.1, betas=(0.9, 0.999))
    q = torch.tensor([1.0, -2.0], requires_grad=True)
    ref = torch.optim.Adam([q], lr=0.1, betas=(0.9, 0.999))
    for _ in range(4):
        p.grad, q.grad = p.detach() * 2, q.detach() * 2
        opt.step()
        ref.step()
    np.testing.assert_array_equal(p.detach().numpy(), q.detach().numpy())


@pytest.mark.parametrize("name", ["Adam", "AdamW", "Adagrad", "Adamax", "NAdam", "ASGD",
                                  "Adafactor", "RMSprop", "SGD"])
def test_a_numpy_float32_lr_is_numpys_arithmetic_as_in_torch(name):
    # (torch's step sizes are NumPy float32 arithmetic then, lr / bias_correction1 and the
    # like; Ember's float(lr) made float64 parameters 1e-8 apart)
    out = []
    for lib in (ember, torch):
        p = lib.tensor(np.linspace(-1.0, 1.0, 32), requires_grad=True)
        opt = getattr(lib.optim, name)([p], lr=np.float32(0.05))
        for i in range(6):
            p.grad = lib.tensor(np.cos(np.arange(32) * (i + 1.0)))
            opt.step()
        out.append(p.detach().numpy())
    np.testing.assert_allclose(out[0], out[1], rtol=1e-13, atol=1e-15)


def _float32_betas_run(lib, lr, **kwargs):
    p = lib.tensor(np.linspace(-1.0, 1.0, 32), requires_grad=True)
    opt = lib.optim.Adam([p], lr=lr(lib), betas=(lib.tensor(0.9), lib.tensor(0.999)), **kwargs)
    for i in range(3):  # (torch's float32 sqrt of 1 - beta2 ** t is correctly rounded there)
        p.grad = lib.tensor(np.cos(np.arange(32) * (i + 1.0)))
        opt.step()
    return p.detach().numpy()


@pytest.mark.parametrize("lr", [lambda lib: np.float64(0.05),
                                lambda lib: lib.tensor(0.05, dtype=lib.float64)],
                         ids=["np.float64", "float64 tensor"])
def test_float64_lr_kinds_with_float32_betas_as_torch(lr):
    # (torch: an np.float64 lr is a number, times the float32 reciprocal of the bias
    # correction, in float32; a float64 tensor lr over it is float64. Ember had them the
    # other way round: 1.2e-9 and 4.8e-9 apart in 3 steps)
    np.testing.assert_allclose(_float32_betas_run(ember, lr), _float32_betas_run(torch, lr),
                               rtol=0, atol=1e-15)


def test_fused_reads_tensor_betas_as_floats_as_torch():
    # (torch's fused kernel takes the betas as numbers: 5e-7 apart with tensor arithmetic)
    np.testing.assert_allclose(_float32_betas_run(ember, lambda lib: 0.05, fused=True),
                               _float32_betas_run(torch, lambda lib: 0.05, fused=True),
                               rtol=0, atol=1e-14)
