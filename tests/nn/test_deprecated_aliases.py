"""PyTorch's deprecated and kernel-named aliases in ``ember.nn``: ``F.upsample``,
``F.upsample_bilinear``, ``F.upsample_nearest``, ``F.native_channel_shuffle`` and
``nn.NLLLoss2d``, against torch."""

import numpy as np
import pytest
import torch

import ember
import ember.nn as nn
import ember.nn.functional as F

X = np.random.default_rng(0).standard_normal((1, 2, 3, 4))


@pytest.mark.parametrize("name,kwargs", [
    ("upsample_bilinear", {"scale_factor": 2}), ("upsample_bilinear", {"size": (5, 7)}),
    ("upsample_nearest", {"size": 6}), ("upsample", {"scale_factor": 2, "mode": "bilinear"})])
def test_upsample_aliases_match_torch(name, kwargs):
    x = ember.tensor(X, requires_grad=True)
    with pytest.warns(UserWarning, match=f"nn.functional.{name}` is deprecated"):
        out = getattr(F, name)(x, **kwargs)
    tx = torch.tensor(X, requires_grad=True)
    with pytest.warns(UserWarning):
        expected = getattr(torch.nn.functional, name)(tx, **kwargs)
    np.testing.assert_allclose(out.detach().numpy(), expected.detach().numpy(), atol=1e-12)
    g = np.random.default_rng(1).standard_normal(tuple(out.shape))
    out.backward(ember.tensor(g))
    expected.backward(torch.tensor(g))
    np.testing.assert_allclose(x.grad.numpy(), tx.grad.numpy(), atol=1e-12)


def test_native_channel_shuffle():
    x = np.arange(24.0).reshape(1, 6, 2, 2)
    np.testing.assert_array_equal(
        F.native_channel_shuffle(ember.tensor(x), 3).numpy(),
        torch.nn.functional.native_channel_shuffle(torch.tensor(x), 3).numpy())


def test_nll_loss_2d():
    logp = np.log(np.random.default_rng(2).dirichlet(np.ones(3), size=(2, 2, 2))
                  ).transpose(0, 3, 1, 2)
    target = np.array([[[0, 2], [1, 1]], [[2, 0], [0, 1]]])
    with pytest.warns(FutureWarning, match="NLLLoss2d"):
        loss = nn.NLLLoss2d(ignore_index=1, reduction="sum")
    with pytest.warns(FutureWarning):
        expected = torch.nn.NLLLoss2d(ignore_index=1, reduction="sum")
    assert isinstance(loss, nn.NLLLoss)
    np.testing.assert_allclose(loss(ember.tensor(logp), ember.tensor(target)).item(),
                               expected(torch.tensor(logp), torch.tensor(target)).item())


def test_clip_grad_norm_alias_warns_and_clips_like_torch():
    g = np.random.default_rng(2).standard_normal((3, 4))
    totals, grads = [], []
    for lib in (ember, torch):
        p = lib.nn.Parameter(lib.zeros(3, 4, dtype=lib.float64))
        p.grad = lib.tensor(g)
        with pytest.warns(FutureWarning, match="clip_grad_norm_"):
            totals.append(float(lib.nn.utils.clip_grad_norm([p], 0.5, norm_type=3.0)))
        grads.append(np.asarray(p.grad.numpy()))
    np.testing.assert_allclose(totals[0], totals[1], rtol=1e-12)
    np.testing.assert_allclose(grads[0], grads[1], rtol=1e-6)
