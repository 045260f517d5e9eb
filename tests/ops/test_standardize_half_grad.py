"""``standardize``'s gradients for float16/bfloat16 inputs use float32 statistics (its mean and
var outputs are rounded to the input's dtype), so they are as exact as PyTorch's, whose norms
keep float32 statistics for their backward. The reference: float64 on the rounded values."""

import numpy as np
import pytest
import torch

import ember

CASES = {  # the affine-free norms, trailing and non-trailing dims
    "layer_norm": ((16, 256), lambda m, x: m.nn.functional.layer_norm(x, (256,))),
    "layer_norm_2d": ((4, 8, 6, 32), lambda m, x: m.nn.functional.layer_norm(x, (6, 32))),
    "layer_norm_transposed": ((16, 256), lambda m, x: m.nn.functional.layer_norm(x.t(), (16,))),
    "instance_norm_1d": ((4, 8, 100), lambda m, x: m.nn.functional.instance_norm(x)),
    "instance_norm_2d": ((2, 3, 12, 10), lambda m, x: m.nn.functional.instance_norm(x)),
    "group_norm": ((4, 12, 7, 5), lambda m, x: m.nn.functional.group_norm(x, 3)),
}


def _relative(got, want):
    return np.abs(got.float().numpy() - want).max() / np.abs(want).max()


@pytest.mark.parametrize("dtype", ["bfloat16", "float16"])
@pytest.mark.parametrize("case", CASES)
def test_half_grad_is_as_exact_as_torch(case, dtype):
    shape, fn = CASES[case]
    worst = []
    for seed in range(4):
        rng = np.random.default_rng(seed)
        offset = (0.0, 8.0)[seed % 2]
        xr, gr = (torch.tensor(a).to(getattr(torch, dtype)).double() for a in (
            offset + rng.standard_normal(shape) * rng.uniform(0.5, 3),
            rng.standard_normal(shape)))
        x = xr.clone().requires_grad_()
        y = fn(torch, x)
        y.backward(gr.reshape(y.shape))
        want = x.grad.numpy()
        errors = []
        for lib in (torch, ember):
            x = lib.tensor(xr.numpy()).to(getattr(lib, dtype)).requires_grad_()
            y = fn(lib, x)
            y.backward(lib.tensor(gr.numpy()).to(x.dtype).reshape(y.shape))
            assert x.grad.dtype is x.dtype
            errors.append(_relative(x.grad, want))
        worst.append(errors[1] / errors[0])
    assert max(worst) <= 1.001, worst


@pytest.mark.parametrize("seed", range(3))
@pytest.mark.parametrize("dtype", ["bfloat16", "float16"])
def test_half_jvp_and_double_backward_are_as_exact_as_torch(dtype, seed):
    rng = np.random.default_rng(seed)
    xr, tr, gr = (torch.tensor(a).to(getattr(torch, dtype)).double() for a in (
        3 + rng.standard_normal((8, 64)), rng.standard_normal((8, 64)),
        rng.standard_normal((8, 64))))
    want = None
    errors = []
    for lib in (torch, torch, ember):  # the float64 reference, then each in the half dtype
        d = torch.float64 if want is None else getattr(lib, dtype)
        x, t, g = (lib.tensor(a.numpy()).to(d) for a in (xr, tr, gr))
        norm = lambda u, lib=lib: lib.nn.functional.layer_norm(u, (64,))  # noqa: E731
        jvp = (torch.func if lib is torch else ember.func).jvp(norm, (x,), (t,))[1]
        x.requires_grad_()
        (gx,) = lib.autograd.grad((norm(x) * g).sum(), x, create_graph=True)
        (hvp,) = lib.autograd.grad((gx * t).sum(), x)
        assert jvp.dtype == d and hvp.dtype == d
        if want is None:
            want = jvp.numpy(), hvp.numpy()
        else:
            errors.append([_relative(got, w) for got, w in zip((jvp, hvp), want, strict=True)])
    (torch_jvp, torch_hvp), (ember_jvp, ember_hvp) = errors
    assert ember_jvp <= 1.001 * torch_jvp and ember_hvp <= 1.001 * torch_hvp, errors
