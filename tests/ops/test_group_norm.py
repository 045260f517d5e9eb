"""group_norm's fused primitives (numba and NumPy) against torch, the composite and vmap."""

import importlib

import numpy as np
import pytest
import torch
import torch.nn.functional as TF

import ember
import ember.nn.functional as F
from ember.ops.primitive import apply


@pytest.mark.parametrize("shape,groups", [((4, 6, 5, 7), 3), ((3, 8, 16), 8), ((2, 4), 1)])
def test_group_norm_by_numba_equals_numpy_and_torch(shape, groups, monkeypatch):
    """The fused group_norm and group_norm_grad in numba (one visit of each group) and their
    NumPy twins give torch's output and gradients to rounding; the statistics are (N, groups)
    as native_group_norm's."""
    group_norm = importlib.import_module("ember.ops.group_norm")  # (ember.ops.group_norm: the fn)
    rng = np.random.default_rng(11)
    for dtype, tol in ((np.float32, 2e-5), (np.float64, 1e-12)):
        a, w, b = (rng.standard_normal(s).astype(dtype) for s in (shape, shape[1:2], shape[1:2]))
        u = rng.standard_normal(shape).astype(dtype)
        xt, wt, bt = (torch.from_numpy(t.copy()).requires_grad_() for t in (a, w, b))
        out_t = TF.group_norm(xt, groups, wt, bt)
        (out_t * torch.from_numpy(u)).sum().backward()
        mean_t, rstd_t = torch.native_group_norm(xt.detach(), None, None, shape[0], shape[1],
                                                 int(np.prod(shape[2:])), groups, 1e-5)[1:]
        for numba in (True, False):
            if not numba:
                monkeypatch.setattr(group_norm, "_kernels", lambda *a: None)
            x, wm, bm = (ember.from_numpy(t.copy()).requires_grad_() for t in (a, w, b))
            out, mean, rstd = apply(group_norm.GroupNorm, x, wm, bm, groups=groups, eps=1e-5)
            (out * ember.from_numpy(u)).sum().backward()
            for mine, ref in ((out, out_t), (mean, mean_t), (rstd, rstd_t), (x.grad, xt.grad),
                              (wm.grad, wt.grad), (bm.grad, bt.grad)):
                np.testing.assert_allclose(mine.detach().numpy(), ref.detach().numpy(),
                                           rtol=tol, atol=tol)
            assert out.grad_fn.name() == "NativeGroupNormBackward0"
            monkeypatch.undo()


def test_group_norm_fused_equals_the_composite_and_keeps_channels_last_input_grads():
    # the fused op gives the standardize·weight + bias composite's values (float32) and a
    # channels-last input's gradient channels-last, as before
    from ember.ops.normalization import _standardize
    x = ember.randn(4, 8, 6, 6).contiguous(memory_format=ember.channels_last).requires_grad_()
    w, b = ember.randn(8), ember.randn(8)
    y = F.group_norm(x, 4, w, b)
    ref = _standardize(x.contiguous().reshape((4, 4, 72)), (2,), 1e-5)[0].reshape((4, 8, 6, 6))
    ref = ref * w.reshape((8, 1, 1)) + b.reshape((8, 1, 1))
    np.testing.assert_allclose(y.detach().numpy(), ref.detach().numpy(), rtol=1e-6, atol=1e-6)
    y.sum().backward()
    assert x.grad.is_contiguous(memory_format=ember.channels_last)


def test_group_norm_and_its_backward_under_vmap_match_each_sample():
    from ember.ops.group_norm import GroupNorm, GroupNormGrad
    rng = np.random.default_rng(12)
    x, g = (ember.from_numpy(rng.standard_normal((3, 2, 6, 5))) for _ in range(2))
    w, b = (ember.from_numpy(rng.standard_normal((3, 6))) for _ in range(2))
    for in_dims in ((0, None, None), (0, 0, 0)):  # one weight for all (into N); per sample
        got = ember.func.vmap(lambda t, v, c: apply(GroupNorm, t, v, c, groups=3, eps=1e-5),
                              in_dims)(x, w if in_dims[1] == 0 else w[0],
                                       b if in_dims[2] == 0 else b[0])
        for i in range(3):
            want = apply(GroupNorm, x[i], w[i if in_dims[1] == 0 else 0],
                         b[i if in_dims[2] == 0 else 0], groups=3, eps=1e-5)
            for a, c in zip(got, want):
                np.testing.assert_allclose(a[i].numpy(), c.numpy(), rtol=1e-12, atol=1e-12)
    _, mean, rstd = apply(GroupNorm, x.reshape((6, 6, 5)), w[0], b[0], groups=3, eps=1e-5)
    mean, rstd = mean.reshape((3, 2, 3)), rstd.reshape((3, 2, 3))
    got = ember.func.vmap(lambda *a: apply(GroupNormGrad, *a))(g, x, mean, rstd, w)
    for i in range(3):
        want = apply(GroupNormGrad, g[i], x[i], mean[i], rstd[i], w[i])
        for a, c in zip(got, want):
            np.testing.assert_allclose(a[i].numpy(), c.numpy(), rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize("fmt,shape", [("channels_last", (2, 4, 3, 5)),
                                       ("channels_last_3d", (2, 4, 3, 5, 2))])
def test_group_norm_keeps_a_channels_last_layout_as_torch(fmt, shape):
    """A channels-last(-3d) input's result, and its gradient, keep that layout (torch's
    suggest_memory_format); another dense order gives a C-ordered result, as torch's."""
    a = np.random.default_rng(3).standard_normal(shape)
    xt = torch.from_numpy(a).contiguous(memory_format=getattr(torch, fmt)).requires_grad_()
    xe = ember.tensor(a).contiguous(memory_format=getattr(ember, fmt)).requires_grad_()
    yt, ye = TF.group_norm(xt, 2), F.group_norm(xe, 2)
    (yt * torch.arange(float(shape[-1]))).sum().backward()
    (ye * ember.arange(float(shape[-1]))).sum().backward()
    assert ye.stride() == yt.stride() and xe.grad.stride() == xt.grad.stride()
    np.testing.assert_allclose(ye.detach().numpy(), yt.detach().numpy(), atol=1e-12)
    np.testing.assert_allclose(xe.grad.numpy(), xt.grad.numpy(), atol=1e-12)
    perm = (0, 2, 1, *range(3, len(shape)))
    assert F.group_norm(ember.tensor(a).permute(perm).contiguous().permute(perm), 2).stride() \
        == TF.group_norm(torch.from_numpy(a).permute(perm).contiguous().permute(perm), 2).stride()
