"""ONNX export of softplus, logsigmoid (softplus at beta = -1 with no threshold), mish and
binary_cross_entropy_with_logits against eager and PyTorch in onnxruntime: no overflow far
from 0 (ONNX's Softplus is ``log(exp(x) + 1)``: logsigmoid(-1e4) was -inf in float64,
logsigmoid(-100) -inf in float16, the BCE loss of logit 710 inf in float64), float16
computed in float32 as eager, and float64 at any opset (onnxruntime has a float64 Softplus
only at opset 18)."""

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


@pytest.mark.parametrize("dtype", ["float64", "float32", "float16"])
def test_bce_with_logits_far_from_zero_matches_eager_and_torch(dtype):
    rng = np.random.default_rng(1)
    logits = np.concatenate([VALUES, rng.standard_normal(50) * 100])
    args = [ember.tensor(v, dtype=getattr(ember, dtype))
            for v in (logits, rng.random(logits.size), rng.random(logits.size) * 3)]
    args[1][:4] = ember.tensor([0.0, 1.0, 0.0, 1.0])

    def fn(lib, x, t, p):
        functional = lib.nn.functional
        return (functional.binary_cross_entropy_with_logits(x, t, reduction="none"),
                functional.binary_cross_entropy_with_logits(x, t, pos_weight=p, reduction="none"))

    proto = ember.onnx.to_model(lambda *a: fn(ember, *a), tuple(args))
    got = run_onnx(proto, *(a.numpy() for a in args))
    reference = fn(torch, *(torch.from_numpy(a.numpy()) for a in args))
    rtol = max(RTOL[dtype], 1e-13)  # (onnxruntime's float64 exp and log: a few ulp off)
    finite = np.isfinite(logits)  # (at ±inf torch's 0·inf is NaN, eager's the limit)
    for g, w, r in zip(got, fn(ember, *args), reference):
        np.testing.assert_allclose(g, w.numpy(), rtol=rtol, atol=np.finfo(dtype).tiny)
        if dtype != "float16":  # (torch's float16 loss rounds each step: 19% off at times)
            # (torch's (1 - t)·x + log(1 + exp(-x)) cancels: near, not to the ulp)
            np.testing.assert_allclose(g[finite], r.numpy()[finite], rtol=1e-4)
