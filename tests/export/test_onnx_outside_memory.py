"""An export refuses a model that writes in place into a tensor it makes over memory that
outlives the call (``ember.from_numpy(G)`` of a global array, of a row of a reached tensor's
``.numpy()``): each eager call moves that memory, the exported graph held the traced call's
value as a constant (``x * 1``)."""

from __future__ import annotations

import io

import numpy as np
import pytest

import ember
from ember import nn
from ember.export import ExportError
from tests.jit.helpers import counts_into

MEMORY = np.zeros(3, dtype=np.float32)
REACHED = ember.zeros(2, 3)


class _Counts(nn.Module):
    def forward(self, x):
        return counts_into(MEMORY, x)


class _CountsInReached(nn.Module):  # (a new tensor over a row of REACHED's memory)
    def forward(self, x):
        return counts_into(REACHED.numpy()[0], x)


def test_onnx_export_refuses_a_write_into_outside_memory():
    with pytest.raises(ExportError, match=r"outlives the call \(shape \(3,\), float32 at "
                                          r".*helpers.py:\d+.*Hint"):
        ember.onnx.export(_Counts(), (ember.ones(3),), io.BytesIO())


@pytest.mark.parametrize("model", [_Counts, _CountsInReached])
def test_export_refuses_a_write_into_outside_memory(model):
    with pytest.raises(ExportError, match="outlives the call"):
        ember.export.export(model(), (ember.ones(3),))
    with pytest.raises(ExportError, match="outlives the call"):
        ember.onnx.export(model(), (ember.ones(3),), io.BytesIO())
