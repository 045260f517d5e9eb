"""The CPU backend: NumPy arrays, BLAS through NumPy's linked library."""

from __future__ import annotations

import numpy as np

from ember.backend.device import Device, register_backend

CPU = Device("cpu", None, np)


def _make_cpu(index: int | None) -> Device:
    return CPU


register_backend("cpu", _make_cpu)

# PyTorch computes 1/0 = inf and 0/0 = nan silently; so does Ember (anomaly mode finds NaNs).
np.seterr(divide="ignore", invalid="ignore", over="ignore", under="ignore")
