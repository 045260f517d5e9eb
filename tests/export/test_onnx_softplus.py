"""ONNX export of softplus, logsigmoid (softplus at beta = -1 with no threshold) and mish
against eager and PyTorch in onnxruntime: no overflow far from 0 (ONNX's Softplus is
``log(exp(x) + 1)``: logsigmoid(-1e4) was -inf in float64, logsigmoid(-100) -inf in
float16), float16 computed in float32 as eager, and float64 at any opset (onnxruntime has
a float64 Softplus only at opset 18)."""

from __future__ import annotations

import numpy as np
import pytest
import torch

import ember
from tests.export.onnx_helpers import run_onnx

VALUES = [0.0, -0.0, 1e-30, -1e-30, 3.0, -3.0, 15.0, -15.0, 19.9, -20.5, 30.0, -30.0, 88.7,
          89.0, -100.0, 709.0, 710.0, -745.0, -1e4, 1e4, np.inf, -np.inf, np.nan]
RTOL = {"float64": 1e-15, "float32": 1e-6, "float16": 1e-3}
OPS = {"logsigmoid": {}, "softplus": {}, "softplus_beta": {"beta": 0.5, "threshold": 3.0},
       "softplus_negative_beta": {"beta": -2.0, "threshold": 100.0}, "mish": {}}


def _fn(lib, name):
    functional = lib.nn.functional
    if name.startswith("softplus"):
        return lambda x: functional.softplus(x, **OPS[name])
    return getattr(functional, name)


@pytest.mark.parametrize("opset", [17, 18, 22])
@pytest.mark.parametrize("dtype", ["float64", "float32", "float16"])
@pytest.mark.parametrize("name", OPS)
def test_softplus_family_matches_eager_and_torch(name, dtype, opset):
    x = ember.tensor(np.concatenate([VALUES, np.random.default_rng(0).standard_normal(50) * 30]),
                     dtype=getattr(ember, dtype))
    fn = _fn(ember, name)
    proto = ember.onnx.to_model(fn, (x,), opset_version=opset)
    got = run_onnx(proto, x.numpy())[0]
    want = fn(x).numpy()
    reference = _fn(torch, name)(torch.from_numpy(x.numpy())).numpy()
    assert got.dtype == want.dtype
    for expected in (want, reference):
        np.testing.assert_allclose(got.astype(np.float64), expected.astype(np.float64),
                                   rtol=RTOL[dtype], atol=np.finfo(dtype).tiny)  # (subnormals)
