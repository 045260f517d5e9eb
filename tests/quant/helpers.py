"""Shared pieces of the quantization tests: PyTorch's names beside Ember's, and weight copying."""

import warnings

import numpy as np
import torch

import ember

warnings.filterwarnings("ignore", module="torch.ao")
torch.backends.quantized.engine = "fbgemm"  # the kernels Ember's numerics follow

TORCH_NAMES = {ember.qint8: torch.qint8, ember.quint8: torch.quint8, ember.qint32: torch.qint32,
               ember.per_tensor_affine: torch.per_tensor_affine,
               ember.per_tensor_symmetric: torch.per_tensor_symmetric,
               ember.per_channel_affine: torch.per_channel_affine,
               ember.per_channel_symmetric: torch.per_channel_symmetric}


def torch_kwargs(kwargs: dict) -> dict:
    return {k: TORCH_NAMES.get(v, v) if not isinstance(v, (int, float)) else v
            for k, v in kwargs.items()}


def copy_weights(torch_model: torch.nn.Module, ember_model: ember.nn.Module) -> None:
    target = ember_model.state_dict()
    for k, v in torch_model.state_dict().items():
        target[k][...] = ember.from_numpy(v.detach().numpy().copy())


def same(e: ember.Tensor, t: torch.Tensor) -> None:
    np.testing.assert_array_equal(e.detach().numpy(), t.detach().numpy())


def with_batch_statistics(model: ember.nn.Module) -> ember.nn.Module:
    """``model`` with random running statistics and scales in its ``BatchNorm2d`` layers (a
    folded or fused batch norm then changes the numbers)."""
    rng = np.random.default_rng(1)
    for m in model.modules():
        if isinstance(m, ember.nn.BatchNorm2d):
            c = m.num_features
            m.running_mean.copy_(ember.tensor(rng.uniform(-0.1, 0.1, c).astype(np.float32)))
            m.running_var.copy_(ember.tensor(rng.uniform(0.5, 1.5, c).astype(np.float32)))
            m.weight.data.copy_(ember.tensor(rng.uniform(0.5, 1.5, c).astype(np.float32)))
    return model
