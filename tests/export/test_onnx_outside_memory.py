"""An export refuses a model that writes in place into a tensor it makes over memory that
outlives the call (``ember.from_numpy(G)`` of a global array): each eager call moves that
memory, the exported graph held the traced call's value as a constant (``x * 1``)."""

from __future__ import annotations

import io

import numpy as np
import pytest

import ember
from ember import nn
from ember.export import ExportError

MEMORY = np.zeros(3, dtype=np.float32)


class _Counts(nn.Module):
    def forward(self, x):
        b = ember.from_numpy(MEMORY)
        b.add_(1.0)
        return x * b


def test_onnx_export_refuses_a_write_into_outside_memory():
    with pytest.raises(ExportError, match=r"outlives the call \(shape \(3,\), float32 at "
                                          r".*test_onnx_outside_memory.py:\d+.*Hint"):
        ember.onnx.export(_Counts(), (ember.ones(3),), io.BytesIO())


def test_export_refuses_a_write_into_outside_memory():
    with pytest.raises(ExportError, match="outlives the call"):
        ember.export.export(_Counts(), (ember.ones(3),))
