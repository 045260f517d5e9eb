"""Batch norm's input gradient as one op (ember.ops.batch_norm_grad): the composite's values bit
for bit and in its layout (numba's loop and NumPy's calls), its rules (second derivatives,
forward mode, vmap) and torch's gradients."""

import numpy as np
import pytest
import torch

import ember
from ember.backend import compiled
from ember.ops import normalization
from ember.ops.batch_norm_grad import batch_norm_input_grad

SHAPES = [(1024, 64), (6, 5), (16, 32, 40), (8, 16, 12, 12), (2, 3, 4, 5)]


def _operands(shape, dtype, channels_last):
    rng = np.random.default_rng(len(shape))
    c = shape[1]
    per_channel = (1, c) + (1,) * (len(shape) - 2)

    def t(*s):
        return ember.tensor(rng.standard_normal(s) * 3, dtype=dtype)
    g, x = t(*shape), t(*shape)
    if channels_last:
        g, x = (a.contiguous(memory_format=ember.channels_last) for a in (g, x))
    return g, x, *(t(*per_channel) for _ in range(4))


@pytest.mark.parametrize("numba", [True, False])
@pytest.mark.parametrize("channels_last", [False, True])
@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("shape", SHAPES)
def test_the_composites_values_and_layout(shape, dtype, channels_last, numba):
    if channels_last and len(shape) != 4:
        pytest.skip("channels-last is 4-D")
    g, x, mean, k, c1, c2 = _operands(shape, getattr(ember, dtype), channels_last)
    compiled.use_numba(numba)
    try:
        got = batch_norm_input_grad(g, x, mean, k, c1, c2).numpy()
    finally:
        compiled.use_numba(True)
    want = (g * k + (x - mean) * c1 - c2).numpy()
    assert got.tobytes() == want.tobytes() and got.strides == want.strides


def test_rules_second_derivative_forward_mode_and_vmap():
    operands = [t.requires_grad_() for t in _operands((5, 3, 2), ember.float64, False)]
    assert ember.autograd.gradcheck(batch_norm_input_grad, tuple(operands))
    assert ember.autograd.gradgradcheck(batch_norm_input_grad, tuple(operands))
    tangents = [ember.randn(*t.shape, dtype=ember.float64) for t in operands]
    _, got = ember.func.jvp(batch_norm_input_grad, tuple(operands), tuple(tangents))
    _, want = ember.func.jvp(lambda g, x, m, k, a, b: g * k + (x - m) * a - b,
                             tuple(operands), tuple(tangents))
    np.testing.assert_allclose(got.detach().numpy(), want.detach().numpy(), rtol=1e-12)
    batched = ember.randn(4, 5, 3, 2, dtype=ember.float64)
    rows = ember.func.vmap(lambda g: batch_norm_input_grad(g, *operands[1:]))(batched)
    for i in range(4):
        np.testing.assert_array_equal(rows[i].detach().numpy(), batch_norm_input_grad(
            batched[i], *operands[1:]).detach().numpy())


@pytest.mark.parametrize("shape", [(512, 32), (8, 16, 12, 12)])
def test_batch_norm_gradients_match_torch(shape):
    rng = np.random.default_rng(0)
    x, g = rng.standard_normal(shape) * 2 + 1, rng.standard_normal(shape)
    c = shape[1]
    got, want = [], []
    for lib, out in ((ember, got), (torch, want)):
        xt = lib.tensor(x, requires_grad=True)
        w = lib.tensor(np.linspace(0.5, 1.5, c), requires_grad=True)
        b = lib.tensor(np.linspace(-1, 1, c), requires_grad=True)
        y = lib.nn.functional.batch_norm(xt, None, None, w, b, training=True)
        out.extend(t.detach().numpy() for t in lib.autograd.grad(y, (xt, w, b), lib.tensor(g)))
    for a, b in zip(got, want):
        np.testing.assert_allclose(a, b, rtol=1e-10, atol=1e-12)


@pytest.mark.parametrize(("shape", "dtype", "channels_last", "input_grad"), [
    ((8, 16), np.float32, False, True), ((8, 16, 8, 8), np.float32, False, True),
    ((4, 3, 5), np.float64, False, True), ((32, 64, 8, 8), np.float32, True, True),
    ((6, 4, 3, 3), np.float32, False, False)])
def test_a_backward_that_records_nothing_equals_the_ops_and_torch(shape, dtype, channels_last,
                                                                  input_grad, monkeypatch):
    """Without create_graph the per-channel steps run on the arrays (``plain_coefficients``,
    counted): the gradients equal the ops' (create_graph=True) bit for bit, and torch's."""
    ran = []
    monkeypatch.setattr(normalization, "plain_coefficients",
                        lambda *a, steps=normalization.plain_coefficients: ran.append(1) or
                        steps(*a))
    rng = np.random.default_rng(0)
    x = rng.standard_normal(shape).astype(dtype) * 2 + 1
    w = rng.uniform(0.5, 2.0, shape[1]).astype(dtype)
    b = rng.standard_normal(shape[1]).astype(dtype)
    g = rng.standard_normal(shape).astype(dtype)
    results = []
    for lib, create_graph in ((ember, False), (ember, True), (torch, False)):
        xt = lib.tensor(x, requires_grad=input_grad)
        wt, bt = lib.tensor(w, requires_grad=True), lib.tensor(b, requires_grad=True)
        xin = xt.contiguous(memory_format=lib.channels_last) if channels_last else xt
        out = lib.nn.functional.batch_norm(xin, None, None, wt, bt, training=True)
        wanted = [xt, wt, bt] if input_grad else [wt, bt]
        grads = lib.autograd.grad(out, wanted, lib.tensor(g), create_graph=create_graph)
        results.append([t.detach().numpy() for t in grads])
        assert len(ran) == 1  # (the array path once, without create_graph only)
    plain, ops, theirs = results
    tol = 1e-5 if dtype == np.float32 else 1e-12
    for a, o, t in zip(plain, ops, theirs, strict=True):
        np.testing.assert_array_equal(a, o)
        # (a float32 sum of 2048 terms whose result cancels to a small value moves with
        # torch's thread count: against the array's scale)
        np.testing.assert_allclose(a, t, rtol=tol, atol=tol * max(1.0, np.abs(t).max()))
