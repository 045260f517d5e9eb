"""Every primitive's jvp rule against its vjp rule: <vjp(u), v> == <u, jvp(v)> in float64,
for every row and sample of every family's op table (tests/ops/test_*.py ``CASES``)."""

from __future__ import annotations

import importlib

import numpy as np
import pytest

import ember
from tests.ops.optable import _grad_inputs, _jvp_all, _np, _outs

FAMILIES = ["activations", "arithmetic", "attention", "conv", "embedding", "indexing",
            "interpolate", "linalg", "loss", "margin_loss", "normalization", "pool", "reduce",
            "select", "shape", "softmax", "sort", "unary"]


def _params() -> list:
    out = []
    for family in FAMILIES:
        for case in importlib.import_module(f"tests.ops.test_{family}").CASES:
            if case.grad and case.jvp:
                out += [pytest.param(case, s, id=f"{family}.{case.name}[{s!r}]")
                        for s in case.samples]
    return out


def _dot(a: ember.Tensor, b: ember.Tensor) -> float:
    return float(np.sum(_np(a).astype(np.float64) * _np(b).astype(np.float64)))


@pytest.mark.parametrize("case,sample", _params())
def test_jvp_is_adjoint_of_vjp(case, sample) -> None:
    xs, fn = _grad_inputs(case, sample)
    rng = np.random.default_rng(7)
    diff = [i for i, x in enumerate(xs) if isinstance(x, ember.Tensor) and x.requires_grad]
    tangents = [ember.from_numpy(rng.standard_normal(x.shape)) if i in diff else None
                for i, x in enumerate(xs)]
    primals = [x.detach() if isinstance(x, ember.Tensor) else x for x in xs]
    _, douts = _jvp_all(fn, primals, tangents)
    outs = _outs(fn(*xs))
    douts = _outs(douts)
    pairs = [(o, d) for o, d in zip(outs, douts)
             if isinstance(o, ember.Tensor) and o.requires_grad]
    if not pairs:
        pytest.skip("no differentiable output")
    # entries where the value or its tangent is not finite (logsumexp over nothing: -inf, and
    # a nan tangent as in PyTorch) get no cotangent
    us = [ember.from_numpy(np.asarray(np.where(np.isfinite(_np(o)) & np.isfinite(_np(d)),
                                    rng.standard_normal(o.shape), 0.0))) for o, d in pairs]
    pairs = [(o, ember.from_numpy(np.asarray(np.nan_to_num(_np(d), nan=0.0, posinf=0.0,
                                                           neginf=0.0))))
             for o, d in pairs]
    grads = ember.autograd.grad([o for o, _ in pairs], [xs[i] for i in diff], us,
                                allow_unused=True)
    lhs = sum(_dot(u, d) for u, (_, d) in zip(us, pairs))
    rhs = sum(_dot(g, tangents[i]) for g, i in zip(grads, diff) if g is not None)
    scale = 1.0 + sum(float(np.abs(_np(u)).sum() * np.abs(_np(d)).max(initial=0.0))
                      for u, (_, d) in zip(us, pairs))
    assert abs(lhs - rhs) <= 1e-9 * scale, \
        f"{case.name}: <u, jvp(v)> = {lhs!r} but <vjp(u), v> = {rhs!r}"
