"""Strides of op results on channels-last, transposed and expanded inputs, against PyTorch:
the ops PyTorch computes on a contiguous copy give C order whatever the input's layout."""

import numpy as np
import pytest
import torch

import ember

INPUTS = {
    "channels_last": lambda m: m.arange(120.0, dtype=m.float64).reshape(2, 3, 4, 5)
    .contiguous(memory_format=m.channels_last),
    "transposed": lambda m: m.arange(120.0, dtype=m.float64).reshape(2, 3, 5, 4).transpose(2, 3),
    "channels_last_3d": lambda m: m.arange(240.0, dtype=m.float64).reshape(2, 3, 2, 4, 5)
    .contiguous(memory_format=m.channels_last_3d),
}


def assert_like_torch(fn, layout, grad=True):
    """``fn(module, x)`` on the input ``layout`` in Ember and torch: same strides, values
    and (through a weighted sum) input gradients."""
    results = []
    for m in (ember, torch):
        x = (INPUTS[layout](m) / 50).requires_grad_(grad)
        y = fn(m, x)
        if grad:
            (y * m.arange(float(y.numel()), dtype=y.dtype).reshape(y.shape)).sum().backward()
        results.append((y, x.grad))
    (mine, mine_grad), (ref, ref_grad) = results
    assert mine.stride() == ref.stride()
    np.testing.assert_allclose(mine.detach().numpy(), ref.detach().numpy(), rtol=1e-10)
    if grad:
        assert mine_grad.stride() == ref_grad.stride()
        np.testing.assert_allclose(mine_grad.numpy(), ref_grad.numpy(), rtol=1e-9, atol=1e-12)


@pytest.mark.parametrize("layout", list(INPUTS))
@pytest.mark.parametrize("op", ["softmax", "log_softmax", "softmin", "cumsum", "cumprod"])
@pytest.mark.parametrize("dim", [0, 1, -1])
def test_softmax_and_scans_give_c_order_as_torch(op, layout, dim):
    # Ember kept the input's layout (NumPy's), so .view(-1) of the result failed
    if op == "softmin":
        assert_like_torch(lambda m, x: m.nn.functional.softmin(x, dim), layout)
    else:
        assert_like_torch(lambda m, x: getattr(x, op)(dim), layout)
