"""The fused ``nll_loss`` primitive (ember.ops.nll) that eager cross_entropy and nll_loss use:
equal to the composite the transforms use, bit for bit, and to PyTorch, in values and first and
second derivatives; its own rules (vjp, jvp, their transposes) and its batching rule."""

import importlib
import itertools
import warnings

import numpy as np
import pytest
import torch

import ember
from ember.ops.nll import nll

loss_module = importlib.import_module("ember.ops.loss")

SHAPES = [((5,), ()), ((4, 3), (4,)), ((3, 4, 2, 2), (3, 2, 2)), ((0, 3), (0,))]


def _run(lib, fn, x, y, w, kwargs, g):
    """(loss, gradient, gradient of the gradient's squared norm) as NumPy arrays."""
    xt = lib.from_numpy(x.copy()).requires_grad_()
    out = getattr(lib.nn.functional, fn)(xt, lib.from_numpy(y),
                                         None if w is None else lib.from_numpy(w), **kwargs)
    (gx,) = lib.autograd.grad(out, xt, None if g is None else lib.from_numpy(g),
                              create_graph=True)
    square = (gx * gx).sum()  # (nll_loss's gradient is constant in x: no second one)
    (ggx,) = lib.autograd.grad(square, xt) if square.requires_grad else (None,)
    return [None if t is None else t.detach().numpy() for t in (out, gx, ggx)]


@pytest.mark.parametrize("fn", ["cross_entropy", "nll_loss", "smoothed"])
@pytest.mark.parametrize("shapes", SHAPES)
def test_fused_equals_composite_and_torch(fn, shapes, monkeypatch):
    rng = np.random.default_rng(0)
    smoothing = {"label_smoothing": 0.2} if fn == "smoothed" else {}
    fn = "cross_entropy" if fn == "smoothed" else fn
    xs, ys = shapes
    c = xs[1] if len(xs) > 1 else xs[0]
    for reduction, weighted, ignore, dtype in itertools.product(
            ("mean", "sum", "none"), (False, True), (None, 1, "all"), (np.float64, np.float32)):
        x = rng.standard_normal(xs).astype(dtype)
        y = np.ones(ys, np.int64) if ignore == "all" else rng.integers(0, c, ys)
        w = rng.random(c).astype(dtype) if weighted else None
        kwargs = {"reduction": reduction, **smoothing}
        if ignore is not None:
            kwargs["ignore_index"] = 1
        g = rng.standard_normal(ys).astype(dtype) if reduction == "none" else None
        with warnings.catch_warnings():
            warnings.simplefilter("error", RuntimeWarning)  # (0/0 of all ignored: silent)
            fused = _run(ember, fn, x, y, w, kwargs, g)
        with monkeypatch.context() as m:
            m.setattr(loss_module, "_fused_nll", lambda *args: None)
            composite = _run(ember, fn, x, y, w, kwargs, g)
        expected = _run(torch, fn, x, y, w, kwargs, g)
        tol = 1e-12 if dtype == np.float64 else 1e-5
        for got, same, want in zip(fused, composite, expected, strict=True):
            zeros = np.zeros_like(x)
            got, same = (zeros if a is None else a for a in (got, same))
            want = zeros if want is None else want
            np.testing.assert_array_equal(got, same)
            np.testing.assert_allclose(got, want, rtol=tol, atol=tol)


def test_eager_losses_are_one_fused_op_and_compiled_ones_the_composite():
    x, y = ember.randn(4, 3), ember.tensor([0, 2, 1, 0])
    with ember.profiler.profile() as prof:
        ember.nn.functional.cross_entropy(x, y)
    assert [e.name for e in prof.events()] == ["log_softmax", "nll_loss"]
    graph = ember.jit.trace(lambda a: ember.nn.functional.nll_loss(a, y), (x,)).graph
    assert "nll_loss" not in {eqn.prim.name for eqn in graph.eqns}


def test_eager_smoothed_cross_entropy_is_one_fused_op_but_in_half_precision():
    x, y, w = ember.randn(4, 3), ember.tensor([0, 2, 1, -100]), ember.rand(3)
    with ember.profiler.profile() as prof:
        ember.nn.functional.cross_entropy(x, y, w, label_smoothing=0.1)
    assert [e.name for e in prof.events()] == ["log_softmax", "nll_loss"]
    with ember.profiler.profile() as prof:  # (the composite rounds each step to float16)
        ember.nn.functional.cross_entropy(x.half(), y, label_smoothing=0.1)
    assert len(prof.events()) > 2


@pytest.mark.parametrize("smoothing", [0.0, 0.3])
@pytest.mark.parametrize("reduction", ["mean", "sum", "none"])
def test_rules_of_the_primitive_and_its_backward(reduction, smoothing):
    rng = np.random.default_rng(1)
    x = ember.tensor(rng.standard_normal((5, 3)), requires_grad=True)
    y, w = ember.tensor([0, 2, 1, 1, -100]), ember.tensor(rng.random(3))

    def loss(a):
        return nll(a, y, w, ignore_index=-100, reduction=reduction, op="nll_loss",
                   smoothing=smoothing)

    assert ember.autograd.gradcheck(loss, (x,))
    assert ember.autograd.gradgradcheck(loss, (x,))
    ty, tw = torch.tensor(y.numpy()), torch.tensor(w.numpy())

    def torch_loss(a):  # (cross_entropy's label smoothing, of log-probabilities a)
        hard = torch.nn.functional.nll_loss(a, ty, tw, reduction=reduction)
        valid = ty != -100
        uniform = torch.where(valid, -(a * tw).sum(1), 0.0)
        if reduction == "mean":
            uniform = uniform.sum() / tw[ty.clamp(min=0)][valid].sum()
        elif reduction == "sum":
            uniform = uniform.sum()
        return hard * (1 - smoothing) + uniform * (smoothing / 3)

    v = rng.standard_normal((5, 3))
    _, tangent = ember.func.jvp(loss, (x.detach(),), (ember.tensor(v),))
    _, want = torch.func.jvp(torch_loss, (torch.tensor(x.detach().numpy()),), (torch.tensor(v),))
    np.testing.assert_allclose(tangent.numpy(), want.numpy(), rtol=1e-12)
    # forward over reverse: the tangent of the gradient (the backward primitive's jvp)
    u = rng.standard_normal(() if reduction != "none" else (5,))

    def grad_in_g(g):
        (gx,) = ember.autograd.grad(loss(x), x, g, create_graph=True)
        return gx

    _, tangent = ember.func.jvp(grad_in_g, (ember.tensor(np.ones_like(u)),), (ember.tensor(u),))
    tx = torch.tensor(x.detach().numpy(), requires_grad=True)  # (linear in g: the gradient at u)
    (want,) = torch.autograd.grad(torch_loss(tx), tx, torch.tensor(u))
    np.testing.assert_allclose(tangent.numpy(), want.numpy(), rtol=1e-12)


@pytest.mark.parametrize("smoothing", [0.0, 0.2])
@pytest.mark.parametrize("reduction", ["mean", "sum", "none"])
def test_batched_gradients_of_an_eager_loss_as_torch(reduction, smoothing):
    x = np.random.default_rng(2).standard_normal((5, 3))
    y = np.array([0, 2, 1, 1, -100])
    v = np.eye(5) if reduction == "none" else np.array([1.0, 2.0, -1.0])
    got, want = [], []
    for lib, out in ((ember, got), (torch, want)):
        xt = lib.tensor(x, requires_grad=True)
        loss = lib.nn.functional.cross_entropy(xt, lib.tensor(y), reduction=reduction,
                                                label_smoothing=smoothing)
        out.append(lib.autograd.grad(loss, xt, lib.tensor(v), is_grads_batched=True)[0])
    np.testing.assert_allclose(got[0].numpy(), want[0].numpy(), rtol=1e-12)


@pytest.mark.parametrize("reduction", ["mean", "sum", "none"])
@pytest.mark.parametrize("smoothing", [0.0, 0.3])
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("weighted", [False, True])
def test_every_target_kept_gives_the_masked_computation_s_bits(reduction, smoothing, dtype,
                                                               weighted, monkeypatch):
    """An (N, C) loss whose targets are all kept skips the mask (ember.ops.nll._targets
    gives none, checked here), and the weights too without class weights: the same bits, in
    values and first and second derivatives, as the masked computation, which an
    ignore_index among the classes but no target forces."""
    module = importlib.import_module("ember.ops.nll")
    targets, masks = module._targets, []

    def spy(*args):
        found = targets(*args)
        masks.append(found[0])
        return found

    monkeypatch.setattr(module, "_targets", spy)
    rng = np.random.default_rng(3)
    x = (rng.standard_normal((6, 5)) * 3).astype(dtype)
    y = rng.integers(1, 5, 6)
    w = rng.random(5).astype(dtype) if weighted else None
    g = None if reduction != "none" else rng.standard_normal(6).astype(dtype)
    for fn in ("cross_entropy", "nll_loss"):
        kwargs = {"reduction": reduction}
        if fn == "cross_entropy":
            kwargs["label_smoothing"] = smoothing
        masks.clear()
        kept = _run(ember, fn, x, y, w, kwargs, g)
        assert masks and all(mask is None for mask in masks)  # (the fast path ran)
        masked = _run(ember, fn, x, y, w, {**kwargs, "ignore_index": 0}, g)
        assert any(mask is not None for mask in masks)
        for a, b in zip(kept, masked, strict=True):
            assert (a is None) == (b is None)
            if a is not None:
                assert a.dtype == b.dtype and a.shape == b.shape and a.tobytes() == b.tobytes()
