"""Per-tensor ``quint4x2`` quantized tensors against PyTorch 2.13 (sweep quant57)."""

import warnings

import numpy as np
import pytest
import torch

import ember
from ember.errors import ArgumentError


def _torch_values(x: np.ndarray, scale: float, zero_point: int) -> np.ndarray:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        q = torch.quantize_per_tensor(torch.tensor(x), scale, zero_point, torch.quint4x2)
    return q.dequantize().numpy()


@pytest.mark.parametrize("scale,zero_point", [(1.0, 1), (0.37, 5), (0.1, 0), (2.5, 15)])
def test_quantize_per_tensor_quint4x2_as_torch(scale, zero_point):
    rng = np.random.default_rng(0)
    ties = np.arange(-20, 21, dtype=np.float32) * np.float32(scale) / 2
    x = np.concatenate([ties, (rng.standard_normal(4000) * 4).astype(np.float32),
                        np.array([np.nan, np.inf, -np.inf, 100.0, -100.0, 1e18, 1e19, -1e19,
                                  1e30], np.float32)])
    q = ember.quantize_per_tensor(ember.tensor(x), scale, zero_point, ember.quint4x2)
    assert q.dtype is ember.quint4x2 and q.qscheme() is ember.per_tensor_affine
    assert (q.q_scale(), q.q_zero_point()) == (scale, zero_point)
    np.testing.assert_array_equal(q.dequantize().numpy(), _torch_values(x, scale, zero_point))
    ints = q.int_repr().numpy()  # (one value a byte; PyTorch packs two)
    assert ints.dtype == np.uint8 and ints.min() >= 0 and ints.max() <= 15


def test_quantize_per_tensor_quint4x2_zero_point_checked():
    with pytest.raises(ArgumentError, match=r"zero_point 16 is outside ember.quint4x2"):
        ember.quantize_per_tensor(ember.tensor([0.3]), 0.1, 16, ember.quint4x2)
    with pytest.raises(ArgumentError, match=r"zero_point -1"):
        ember.quantize_per_tensor(ember.tensor([0.3]), 0.1, -1, ember.quint4x2)
