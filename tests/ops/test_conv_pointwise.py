"""1×1 stride-1 convolutions in the ``conv`` primitive: an NCHW input as a GEMM per sample on
the input as it lies (NCHW out, as PyTorch's), a channels-last one as one GEMM of its pixel rows
(channels-last out), the bias added to the fresh output; against torch in float64, every
gradient path, and compiled steps equal to eager."""

import numpy as np
import pytest
import torch
import torch.nn.functional as TF

import ember
import ember.nn as nn
import ember.nn.functional as F
from ember.autograd import gradcheck, gradgradcheck

_CONV = {1: (F.conv1d, TF.conv1d), 2: (F.conv2d, TF.conv2d), 3: (F.conv3d, TF.conv3d)}


def _pair(shape, rng, dtype=np.float64, channels_last=False):
    a = rng.standard_normal(shape).astype(dtype)
    e, t = ember.tensor(a, requires_grad=True), torch.tensor(a, requires_grad=True)
    if channels_last:
        e = e.detach().contiguous(memory_format=ember.channels_last).requires_grad_()
        t = t.detach().contiguous(memory_format=torch.channels_last).requires_grad_()
    return e, t


@pytest.mark.parametrize("nd", [1, 2, 3])
@pytest.mark.parametrize("channels_last", [False, True])
@pytest.mark.parametrize("n, cin, cout, size", [
    (3, 5, 7, 6),  # the weight gradient as one GEMM per sample, summed
    (1, 9, 4, 5),  # batch 1
    (2, 48, 40, 2),  # few pixels: the weight gradient as (C, N·L) copies and one GEMM
    (4, 512, 512, 3),  # few pixels and a large weight: the forward as pixel rows
])
@pytest.mark.parametrize("bias", [True, False])
def test_matches_torch_values_gradients_and_output_layout(nd, channels_last, n, cin, cout, size,
                                                          bias):
    if channels_last and nd != 2 or nd == 3 and cin == 512:
        pytest.skip("channels-last is 2-D; a small 3-D case is enough")
    rng = np.random.default_rng(0)
    x, tx = _pair((n, cin) + (size,) * nd, rng, channels_last=channels_last)
    w, tw = _pair((cout, cin) + (1,) * nd, rng)
    b, tb = _pair((cout,), rng) if bias else (None, None)
    conv, tconv = _CONV[nd]
    y, ty = conv(x, w, b), tconv(tx, tw, tb)
    np.testing.assert_allclose(y.detach().numpy(), ty.detach().numpy(), rtol=1e-12, atol=1e-12)
    assert y.stride() == ty.stride()  # (few pixels by a large weight too: NCHW in, NCHW out)
    g = rng.standard_normal(tuple(y.shape))
    y.backward(ember.tensor(g).contiguous(
        memory_format=ember.channels_last if y.stride()[1] == 1 and nd == 2 else
        ember.contiguous_format))
    ty.backward(torch.tensor(g))
    for e, t in ((x, tx), (w, tw), (b, tb)):
        if e is not None:
            np.testing.assert_allclose(e.grad.numpy(), t.grad.numpy(), rtol=1e-11, atol=1e-11)


@pytest.mark.parametrize("channels_last", [False, True])
def test_gradients_in_float64_to_second_order(channels_last):
    rng = np.random.default_rng(1)
    x, _ = _pair((2, 3, 4, 5), rng, channels_last=channels_last)
    w, _ = _pair((4, 3, 1, 1), rng)
    b, _ = _pair((4,), rng)
    assert gradcheck(F.conv2d, (x, w, b))
    assert gradgradcheck(F.conv2d, (x, w, b))


def test_nchw_output_gradient_of_a_channels_last_output_and_back():
    """A gradient in the other layout than the output's takes the rows path (a copy)."""
    rng = np.random.default_rng(2)
    for x_cl in (False, True):
        x, tx = _pair((2, 6, 5, 5), rng, channels_last=x_cl)
        w, tw = _pair((3, 6, 1, 1), rng)
        y, ty = F.conv2d(x, w), TF.conv2d(tx, tw)
        g = rng.standard_normal((2, 3, 5, 5))
        other = ember.contiguous_format if x_cl else ember.channels_last
        y.backward(ember.tensor(g).contiguous(memory_format=other))
        ty.backward(torch.tensor(g))
        np.testing.assert_allclose(x.grad.numpy(), tx.grad.numpy(), rtol=1e-12, atol=1e-12)
        np.testing.assert_allclose(w.grad.numpy(), tw.grad.numpy(), rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize("dtype", [ember.bfloat16, ember.float16])
def test_under_autocast_the_bias_is_added_before_the_one_rounding(dtype):
    # (in float32, then rounded once, as PyTorch's half convolution)
    rng = np.random.default_rng(3)
    x, w, b = (ember.tensor(rng.standard_normal(s).astype(np.float32), requires_grad=True)
               for s in ((2, 8, 5, 5), (6, 8, 1, 1), (6,)))
    with ember.autocast("cpu", dtype=dtype):
        y = F.conv2d(x, w, b)
    assert y.dtype is dtype and y.stride() == (150, 25, 5, 1)
    with ember.no_grad():
        low = [t.to(dtype).float() for t in (x, w, b)]
        after = (F.conv2d(low[0], low[1]) + low[2].reshape(6, 1, 1)).to(dtype)
    assert y.float().detach().numpy().tobytes() == after.float().numpy().tobytes()


class _Head(nn.Module):
    def __init__(self):
        super().__init__()
        self.a, self.b = nn.Conv2d(8, 16, 1), nn.Conv2d(16, 5, 1)

    def forward(self, x):
        return self.b(self.a(x).relu())


def _train_and_infer(x, compiled):
    """Losses of 3 SGD steps, the parameters after them and the output then, as bytes."""
    ember.manual_seed(0)
    model = _Head()
    opt = ember.optim.SGD(model.parameters(), lr=0.1)

    def step():
        opt.zero_grad()
        loss = model(x).square().mean()
        loss.backward()
        opt.step()
        return loss

    fn = ember.jit.compile(step) if compiled else step
    losses = [fn().item() for _ in range(3)]
    infer = ember.jit.compile(model.forward) if compiled else model
    with ember.no_grad():
        out = infer(x).numpy()
    return losses, [p.detach().numpy().tobytes() for p in model.parameters()], out.tobytes()


@pytest.mark.parametrize("channels_last", [False, True])
def test_compiled_training_and_inference_equal_eager(channels_last):
    rng = np.random.default_rng(4)
    x = ember.tensor(rng.standard_normal((3, 8, 6, 6)).astype(np.float32))
    if channels_last:
        x = x.contiguous(memory_format=ember.channels_last)
    assert _train_and_infer(x, False) == _train_and_infer(x, True)
