"""Evaluation-mode batch norm's fused op (ops/batch_norm_eval.py) against the composite it
replaces (numba off) bit for bit, against PyTorch, and by finite differences."""

import numpy as np
import pytest
import torch

import ember
import ember.nn.functional as F
from ember.autograd import gradcheck, gradgradcheck
from ember.backend import compiled


def _run(a, mean, var, w, b, needs, g, create_graph=False):
    x = ember.tensor(a, requires_grad=needs[0])
    weight, bias = (ember.tensor(v, requires_grad=n) for v, n in ((w, needs[1]), (b, needs[2])))
    y = F.batch_norm(x, ember.tensor(mean), ember.tensor(var), weight, bias, False, 0.1, 1e-3)
    assert (y.grad_fn.name() == "BatchNormEvalBackward0") == compiled.numba_enabled()
    wrt = [t for t in (x, weight, bias) if t.requires_grad]
    grads = ember.autograd.grad(y, wrt, ember.tensor(g), create_graph=create_graph)
    out = [y.detach().numpy()] + [t.detach().numpy() for t in grads]
    live = [t for t in grads if t.requires_grad]
    if create_graph and live:
        total = sum((t * t).sum() for t in live)
        out += [t.numpy() for t in ember.autograd.grad(total, wrt, allow_unused=True)
                if t is not None]
    return out


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("shape", [(8, 5), (4, 3, 7), (2, 6, 5, 4), (3, 4, 1, 6), (2, 3, 2, 3, 4)])
def test_fused_eval_batch_norm_is_the_composite_bit_for_bit(dtype, shape):
    rng = np.random.default_rng(len(shape))
    c = shape[1]
    a, g = (rng.standard_normal(shape).astype(dtype) for _ in range(2))
    mean, w, b = (rng.standard_normal(c).astype(dtype) for _ in range(3))
    var = rng.random(c).astype(dtype) + dtype(0.1)
    saved = compiled.numba_enabled()
    for needs in [(True, True, True), (False, True, True), (True, False, False)]:
        for create_graph in (False, True):
            runs = []
            for on in (True, False):
                compiled.use_numba(on and saved)
                try:
                    runs.append(_run(a, mean, var, w, b, needs, g, create_graph))
                finally:
                    compiled.use_numba(saved)
            for got, want in zip(*runs, strict=True):
                assert got.dtype == want.dtype and got.tobytes() == want.tobytes()
    x = torch.tensor(a, requires_grad=True)
    tw, tb = torch.tensor(w, requires_grad=True), torch.tensor(b, requires_grad=True)
    want = torch.nn.functional.batch_norm(x, torch.tensor(mean), torch.tensor(var), tw, tb,
                                          False, 0.1, 1e-3)
    want.backward(torch.tensor(g))
    got = _run(a, mean, var, w, b, (True, True, True), g)
    tol = 1e-5 if dtype == np.float32 else 1e-12
    for e, t in zip(got, (want, x.grad, tw.grad, tb.grad), strict=True):
        np.testing.assert_allclose(e, t.detach().numpy(), rtol=tol, atol=tol)


def test_fused_eval_batch_norm_gradcheck():
    rng = np.random.default_rng(0)
    x, w, b = (ember.tensor(rng.standard_normal(s), requires_grad=True)
               for s in ((3, 4, 2, 5), (4,), (4,)))
    mean, var = ember.tensor(rng.standard_normal(4)), ember.tensor(rng.random(4) + 0.5)

    def f(x, w, b):
        return F.batch_norm(x, mean, var, w, b, False, 0.1, 1e-5)
    assert gradcheck(f, (x, w, b))
    assert gradgradcheck(f, (x, w, b))
    assert ember.func.jvp(f, (x.detach(), w.detach(), b.detach()),
                          (ember.ones_like(x), ember.ones_like(w), ember.ones_like(b)))


def test_fused_eval_batch_norm_under_vmap():
    """Its batching rule (reached only when the op is applied under vmap: batch_norm itself
    takes the composite there) equals a loop over the samples."""
    from ember.ops.batch_norm_eval import BatchNormEval
    from ember.ops.primitive import apply

    rng = np.random.default_rng(1)
    xs, ws = ember.tensor(rng.standard_normal((3, 2, 4, 5))), ember.tensor(rng.random((3, 4)))
    mean, var, b = ember.tensor(rng.standard_normal(4)), ember.tensor(rng.random(4) + 1), \
        ember.tensor(rng.standard_normal(4))

    def f(x, w):
        return apply(BatchNormEval, x, mean, var, w, b, eps=1e-5)
    got = ember.func.vmap(f)(xs, ws)
    for i in range(3):
        np.testing.assert_allclose(got[i].numpy(), f(xs[i], ws[i]).numpy(), rtol=1e-12)


def test_fused_eval_batch_norm_statistics_gradients():
    """Applied directly with statistics that take a gradient (batch_norm never does so), the
    op's rules give theirs too: finite differences."""
    from ember.ops.batch_norm_eval import BatchNormEval
    from ember.ops.primitive import apply

    rng = np.random.default_rng(2)
    args = [ember.tensor(a, requires_grad=True) for a in (
        rng.standard_normal((3, 4, 5)), rng.standard_normal(4), rng.random(4) + 0.5,
        rng.standard_normal(4), rng.standard_normal(4))]
    assert gradcheck(lambda *a: apply(BatchNormEval, *a, eps=1e-5), args)


@pytest.mark.parametrize(("frozen", "held"), [(True, False), (False, True)])
def test_frozen_batch_norm_lets_its_input_go(frozen, held):
    """With weight and bias frozen, the input's gradient needs only the weight and var: the
    tape lets the (activation-sized) input go, as PyTorch's frozen batch norm does; a weight
    that learns needs the input kept."""
    import gc
    import weakref

    x = ember.randn(8, 16, 32, 32, requires_grad=True) * 1.0  # a layer's output
    w, b = ember.ones(16, requires_grad=not frozen), ember.zeros(16, requires_grad=not frozen)
    y = F.batch_norm(x, ember.zeros(16), ember.ones(16), w, b)
    seen = weakref.ref(x._data)
    del x
    gc.collect()
    assert (seen() is not None) == held
    y.sum().backward()
