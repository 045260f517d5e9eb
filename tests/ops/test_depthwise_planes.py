"""The depthwise output from (B, C, H, W) planes (depthwise_numba.output_planes: each sample
made channels-last in a buffer) and the 3x3 window summed in registers: the same bits as the
channels-last input's loop and NumPy's tap loop, values against PyTorch, float64 gradcheck."""

import numpy as np
import pytest
import torch
import torch.nn.functional as F

import ember
import ember.nn.functional as EF
from ember.backend import compiled

GEOMETRIES = [dict(stride=1, padding=1), dict(stride=2, padding=1), dict(stride=1, padding=0),
              dict(stride=1, padding=2, dilation=2), dict(stride=(2, 1), padding=(0, 1)),
              dict(stride=1, padding=1, kernel=5), dict(stride=1, padding=3, kernel=(3, 1))]


def _case(rng, dtype, geometry):
    geometry = dict(geometry)
    kernel = geometry.pop("kernel", 3)
    kh, kw = (kernel, kernel) if isinstance(kernel, int) else kernel
    x = rng.standard_normal((3, 20, 9, 11)).astype(dtype)
    w = rng.standard_normal((20, 1, kh, kw)).astype(dtype)
    b = rng.standard_normal(20).astype(dtype)
    return x, w, b, geometry


@pytest.mark.parametrize("geometry", GEOMETRIES)
@pytest.mark.parametrize("bias", [False, True])
def test_planes_channels_last_and_numpy_give_the_same_bits_and_match_torch(geometry, bias):
    x, w, b, geometry = _case(np.random.default_rng(0), np.float32, geometry)
    args = (ember.tensor(w), ember.tensor(b) if bias else None)
    planes = EF.conv2d(ember.tensor(x), *args, groups=20, **geometry).numpy()
    strided = EF.conv2d(ember.tensor(np.concatenate([x, x], 3))[..., ::2], *args, groups=20,
                        **geometry).numpy()  # (not contiguous: the any-strides loop)
    last = EF.conv2d(ember.tensor(x).to(memory_format=ember.channels_last), *args, groups=20,
                     **geometry).numpy()
    was = compiled.numba_enabled()
    compiled.use_numba(False)
    try:
        plain = EF.conv2d(ember.tensor(x), *args, groups=20, **geometry).numpy()
    finally:
        compiled.use_numba(was)
    assert np.array_equal(planes, last) and np.array_equal(planes, plain)
    xs = np.concatenate([x, x], 3)[..., ::2]
    assert np.array_equal(strided, EF.conv2d(ember.tensor(np.ascontiguousarray(xs)), *args,
                                             groups=20, **geometry).numpy())
    want = F.conv2d(torch.tensor(x), torch.tensor(w), torch.tensor(b) if bias else None,
                    groups=20, **geometry).numpy()
    np.testing.assert_allclose(planes, want, rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("geometry", GEOMETRIES[:4])
def test_planes_float64_gradcheck_and_gradients_match_torch(geometry):
    x, w, b, geometry = _case(np.random.default_rng(1), np.float64, geometry)
    x, w, b = x[:2, :4, :6, :7], w[:4], b[:4]
    args = [ember.tensor(a, requires_grad=True) for a in (x, w, b)]
    assert ember.autograd.gradcheck(lambda *v: EF.conv2d(*v, groups=4, **geometry), args)
    targs = [torch.tensor(a, requires_grad=True) for a in (x, w, b)]
    y, z = EF.conv2d(*args, groups=4, **geometry), F.conv2d(*targs, groups=4, **geometry)
    np.testing.assert_allclose(y.detach().numpy(), z.detach().numpy(), rtol=1e-12)
    g = np.random.default_rng(2).standard_normal(tuple(z.shape))
    y.backward(ember.tensor(g))
    z.backward(torch.tensor(g))
    for mine, theirs in zip(args, targs, strict=True):
        np.testing.assert_allclose(mine.grad.numpy(), theirs.grad.numpy(), rtol=1e-10,
                                   atol=1e-12)
