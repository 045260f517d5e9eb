"""Pooling against PyTorch and finite differences."""

import numpy as np
import pytest
import torch
import torch.nn.functional as TF

import ember
import ember.nn.functional as F
from tests.ops.optable import OpCase, S, arg, op_tests

MAX2D = [
    S(arg(2, 3, 5, 5), kernel_size=2),
    S(arg(2, 3, 5, 5, noncontig=True), kernel_size=3, stride=2, padding=1),
    S(arg(2, 3, 5, 5), kernel_size=(3, 2), stride=(2, 1), dilation=(1, 2)),
    S(arg(2, 3, 5, 5), kernel_size=2, stride=2, ceil_mode=True),
    S(arg(1, 2, 6, 5), kernel_size=3, stride=2, padding=1, ceil_mode=True),
    S(arg(3, 5, 5), kernel_size=2, stride=1),                       # unbatched, overlapping
    S(arg(0, 3, 4, 4), kernel_size=2),                              # empty batch
]
AVG2D = [
    S(arg(2, 3, 5, 5), kernel_size=2),
    S(arg(2, 3, 5, 5, noncontig=True), kernel_size=3, stride=2, padding=1),
    S(arg(2, 3, 5, 5), kernel_size=3, stride=2, padding=1, count_include_pad=False),
    S(arg(2, 3, 5, 5), kernel_size=2, stride=2, ceil_mode=True),
    S(arg(1, 2, 6, 5), kernel_size=3, stride=2, padding=1, ceil_mode=True,
      count_include_pad=False),
    S(arg(1, 2, 6, 5), kernel_size=3, stride=2, padding=1, ceil_mode=True),
    S(arg(2, 3, 5, 5), kernel_size=(2, 3), divisor_override=5),
    S(arg(3, 4, 4), kernel_size=2),                                 # unbatched
]

CASES = [
    OpCase("max_pool2d", F.max_pool2d, TF.max_pool2d, MAX2D),
    OpCase("max_pool2d_indices", lambda x, **k: F.max_pool2d(x, return_indices=True, **k),
           lambda x, **k: TF.max_pool2d(x, return_indices=True, **k), MAX2D[1:5]),
    OpCase("max_pool1d", F.max_pool1d, TF.max_pool1d, [
        S(arg(2, 3, 7), kernel_size=3, stride=2, padding=1),
        S(arg(3, 6), kernel_size=2, dilation=2, ceil_mode=True),
    ]),
    OpCase("max_pool3d", F.max_pool3d, TF.max_pool3d, [
        S(arg(1, 2, 3, 4, 4), kernel_size=2, stride=(1, 2, 2), padding=(1, 0, 1)),
    ]),
    OpCase("avg_pool2d", F.avg_pool2d, TF.avg_pool2d, AVG2D),
    OpCase("avg_pool1d", F.avg_pool1d, TF.avg_pool1d, [
        S(arg(2, 3, 7), kernel_size=3, stride=2, padding=1, count_include_pad=False),
        S(arg(3, 7), kernel_size=2, ceil_mode=True),
    ]),
    OpCase("adaptive_avg_pool2d", F.adaptive_avg_pool2d, TF.adaptive_avg_pool2d, [
        S(arg(2, 3, 5, 5), output_size=(2, 3)),                     # windows overlap
        S(arg(2, 3, 6, 4, noncontig=True), output_size=(3, 2)),     # divides evenly
        S(arg(2, 3, 5, 7), output_size=1),                          # global average
        S(arg(2, 3, 5, 7), output_size=(None, 4)),
        S(arg(3, 4, 5), output_size=(7, 3)),                        # unbatched, upsampling
    ]),
    OpCase("adaptive_max_pool2d", F.adaptive_max_pool2d, TF.adaptive_max_pool2d, [
        S(arg(2, 3, 5, 5), output_size=(2, 3)),                     # windows overlap
        S(arg(2, 3, 6, 4, noncontig=True), output_size=(3, 2)),
        S(arg(2, 3, 5, 7), output_size=(None, 4)),
        S(arg(3, 4, 5), output_size=(7, 3)),                        # unbatched, upsampling
    ]),
    OpCase("adaptive_max_pool2d_indices",
           lambda x, **k: F.adaptive_max_pool2d(x, return_indices=True, **k),
           lambda x, **k: TF.adaptive_max_pool2d(x, return_indices=True, **k),
           [S(arg(2, 3, 5, 7), output_size=(3, 4))]),
    OpCase("adaptive_max_pool1d", F.adaptive_max_pool1d, TF.adaptive_max_pool1d, [
        S(arg(2, 3, 7), output_size=3),
    ]),
    OpCase("adaptive_avg_pool1d", F.adaptive_avg_pool1d, TF.adaptive_avg_pool1d, [
        S(arg(2, 3, 7), output_size=3),
    ]),
]

test_forward, test_backward, test_gradcheck, test_gradgradcheck, test_jvp = op_tests(CASES)


def test_max_pool_ties_send_gradient_to_one_element_like_torch():
    x = np.zeros((1, 1, 4, 4))
    x[0, 0, 1:3, 1:3] = 1.0  # every 3×3 window has several equal maxima
    mine = ember.from_numpy(x.copy()).requires_grad_()
    ref = torch.from_numpy(x.copy()).requires_grad_()
    F.max_pool2d(mine, 3, stride=1, padding=1).sum().backward()
    TF.max_pool2d(ref, 3, stride=1, padding=1).sum().backward()
    np.testing.assert_array_equal(mine.grad.numpy(), ref.grad.numpy())


def test_max_pool_indices_are_flat_per_plane():
    x = ember.arange(16.0).reshape(1, 1, 4, 4)
    _, idx = F.max_pool2d(x, 2, return_indices=True)
    assert idx.dtype is ember.int64
    assert idx.tolist() == [[[[5, 7], [13, 15]]]]


def test_pool_errors():
    x = ember.randn(1, 2, 5, 5)
    with pytest.raises(ember.ShapeError, match="at most half"):
        F.max_pool2d(x, 2, padding=2)
    with pytest.raises(ember.ShapeError, match="too small"):
        F.max_pool2d(ember.randn(1, 1, 2, 2), 3)
    with pytest.raises(ember.ShapeError, match="4-D"):
        F.avg_pool2d(ember.randn(5, 5), 2)
    with pytest.raises(ember.DTypeError):
        F.avg_pool2d(ember.ones(1, 1, 4, 4, dtype=ember.int64), 2)


def test_adaptive_avg_pool_float32_uneven_windows():
    x = np.random.default_rng(0).standard_normal((2, 4, 9, 11)).astype(np.float32)
    mine = F.adaptive_avg_pool2d(ember.from_numpy(x), (4, 5))
    ref = TF.adaptive_avg_pool2d(torch.from_numpy(x), (4, 5))
    np.testing.assert_allclose(mine.numpy(), ref.numpy(), rtol=1e-5, atol=1e-6)
