"""addcmul/addcdiv round as PyTorch's CPU kernels: ``(value * tensor1) op tensor2``, in float32
for float16/bfloat16 and rounded once (cast57; they rounded each step in the dtype, with the
product scaled last: up to a third of float16 elements differed)."""

import numpy as np
import pytest
import torch

import ember


def _inputs(dtype: str):
    rng = np.random.default_rng(0)
    ts = [torch.tensor(rng.standard_normal(2048)).to(getattr(torch, dtype)) for _ in range(3)]
    return ts, [ember.tensor(t.double().numpy()).to(getattr(ember, dtype)) for t in ts]


@pytest.mark.parametrize("dtype", ["float16", "bfloat16", "float32", "float64"])
@pytest.mark.parametrize("value", [0.1, 1 / 3, 3.14159])
def test_addcdiv_bits_as_torch(dtype, value):
    ts, es = _inputs(dtype)
    want = torch.addcdiv(*ts, value=value).double().numpy()
    np.testing.assert_array_equal(ember.addcdiv(*es, value=value).double().numpy(), want)


@pytest.mark.parametrize("value", [0.1, 1 / 3, 3.14159])
def test_float16_addcmul_bits_as_torch(value):
    ts, es = _inputs("float16")
    want = torch.addcmul(*ts, value=value).double().numpy()
    np.testing.assert_array_equal(ember.addcmul(*es, value=value).double().numpy(), want)


@pytest.mark.parametrize("op", ["addcmul", "addcdiv"])
def test_half_gradients_keep_dtype_and_match_torch(op):
    ts, es = _inputs("float16")
    ts = [t[:8].clone().requires_grad_() for t in ts]
    es = [e[:8].detach().requires_grad_() for e in es]
    getattr(torch, op)(*ts, value=0.3).sum().backward()
    getattr(ember, op)(*es, value=0.3).sum().backward()
    for e, t in zip(es, ts):
        assert e.grad.dtype == ember.float16
        np.testing.assert_allclose(e.grad.float().numpy(), t.grad.float().numpy(), rtol=2e-3)


@pytest.mark.parametrize("op", ["addcmul", "addcdiv"])
def test_float64_gradcheck(op):
    rng = np.random.default_rng(1)
    xs = [ember.tensor(rng.uniform(0.5, 2, 5), requires_grad=True) for _ in range(3)]
    assert ember.autograd.gradcheck(lambda a, b, c: getattr(ember, op)(a, b, c, value=0.7), xs)
