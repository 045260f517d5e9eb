"""Average pooling without padding sums its windows in place (``window_sum``, transposed by
``window_spread``): the same values and gradients as the sum of unfold's columns, bit for
bit, PyTorch's, and the primitives' own rules (gradients of every order, tangents, vmap)."""

import importlib

import numpy as np
import pytest
import torch

import ember
import ember.nn.functional as F

pool = importlib.import_module("ember.ops.pool")
pool_windows = importlib.import_module("ember.ops.pool_windows")
# (shape, arguments, whether the windows lie inside the input: summed in place)
CASES = [((4, 8, 16, 16), dict(kernel_size=2), True),
         ((4, 8, 16, 16), dict(kernel_size=3, stride=2), True),
         ((2, 3, 9, 7), dict(kernel_size=(3, 2), stride=(2, 3)), True),
         ((4, 8, 12), dict(kernel_size=4), True), ((2, 3, 6, 6, 6), dict(kernel_size=2), True),
         ((2, 3, 9, 9), dict(kernel_size=3, stride=3, ceil_mode=True), True),
         ((2, 3, 8, 8), dict(kernel_size=3, stride=3, ceil_mode=True), False),
         ((2, 3, 8, 8), dict(kernel_size=3, padding=1), False)]


def _pool(lib, x):
    return {3: lib.nn.functional.avg_pool1d, 4: lib.nn.functional.avg_pool2d,
            5: lib.nn.functional.avg_pool3d}[x.ndim]


def _run(lib, x, g, kw):
    xt = lib.tensor(x, requires_grad=True)
    out = _pool(lib, xt)(xt, **kw)
    (gx,) = lib.autograd.grad(out, xt, lib.tensor(g))
    return out.detach().numpy(), gx.numpy()


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize(("shape", "kw", "inside"), CASES)
def test_equals_the_columns_sum_bit_for_bit_and_torch(shape, kw, inside, dtype, monkeypatch):
    rng = np.random.default_rng(0)
    x = rng.standard_normal(shape).astype(dtype)
    with ember.no_grad():
        out_shape = tuple(_pool(ember, x)(ember.tensor(x), **kw).shape)
    g = rng.standard_normal(out_shape).astype(dtype)
    with ember.profiler.profile() as prof:
        fast = _run(ember, x, g, kw)
    assert ("window_sum" in [e.name for e in prof.events()]) == inside
    monkeypatch.setattr(pool, "window_sums", lambda *args: None)
    columns = _run(ember, x, g, kw)
    theirs = _run(torch, x, g, kw)
    tol = 1e-6 if dtype == np.float32 else 1e-13
    for a, b, t in zip(fast, columns, theirs, strict=True):
        np.testing.assert_array_equal(a, b)
        np.testing.assert_allclose(a, t, rtol=tol, atol=tol)


def test_rules_of_the_pair():
    x = ember.tensor(np.random.default_rng(1).standard_normal((2, 3, 6, 5)), requires_grad=True)

    def f(a):
        return F.avg_pool2d(a, (3, 2), stride=(1, 2))

    assert ember.autograd.gradcheck(f, (x,))
    assert ember.autograd.gradgradcheck(f, (x,))
    v = ember.tensor(np.random.default_rng(2).standard_normal((2, 3, 6, 5)))
    _, tangent = ember.func.jvp(f, (x.detach(),), (v,))
    want = torch.func.jvp(lambda a: torch.nn.functional.avg_pool2d(a, (3, 2), stride=(1, 2)),
                          (torch.tensor(x.detach().numpy()),), (torch.tensor(v.numpy()),))[1]
    np.testing.assert_allclose(tangent.numpy(), want.numpy(), rtol=1e-12)


def test_jvp_rules_of_the_pair_as_torch(monkeypatch):
    """Forward over reverse reaches both jvp rules (``func.jvp`` of a pool takes the columns):
    a dual output gradient goes through ``window_spread``, a dual gradient of that gradient
    through ``window_sum``."""
    ran = []
    for cls in (pool_windows.WindowSum, pool_windows.WindowSpread):
        def spy(self, ctx, *tangents, rule=cls.jvp, name=cls.name):
            ran.append(name)
            return rule(self, ctx, *tangents)
        monkeypatch.setattr(cls, "jvp", spy)
    rng = np.random.default_rng(5)
    x, g, dg = (rng.standard_normal(s) for s in ((2, 3, 6, 5), (2, 3, 4, 2), (2, 3, 4, 2)))
    u, du = rng.standard_normal((2, 3, 6, 5)), rng.standard_normal((2, 3, 6, 5))
    tangents = []
    for lib in (ember, torch):
        fwd = lib.autograd.forward_ad
        xt, gt = lib.tensor(x, requires_grad=True), lib.tensor(g, requires_grad=True)
        y = lib.nn.functional.avg_pool2d(xt, (3, 2), stride=(1, 2))
        with fwd.dual_level():
            (gx,) = lib.autograd.grad(y, [xt], fwd.make_dual(gt, lib.tensor(dg)),
                                      create_graph=True)
            spread = fwd.unpack_dual(gx).tangent.detach().numpy()
        (gx,) = lib.autograd.grad(y, [xt], gt, create_graph=True)
        with fwd.dual_level():
            (gg,) = lib.autograd.grad(gx, [gt], fwd.make_dual(lib.tensor(u), lib.tensor(du)),
                                      create_graph=True)
            summed = fwd.unpack_dual(gg).tangent.detach().numpy()
        tangents.append((spread, summed))
    assert ran == ["window_spread", "window_sum"]
    for got, want in zip(*tangents, strict=True):
        np.testing.assert_allclose(got, want, rtol=1e-12, atol=1e-14)


def test_batched_gradients_of_an_eager_pool_as_torch():
    x = np.random.default_rng(3).standard_normal((2, 3, 4, 4))
    v = np.random.default_rng(4).standard_normal((5, 2, 3, 2, 2))
    got = []
    for lib in (ember, torch):
        xt = lib.tensor(x, requires_grad=True)
        out = lib.nn.functional.avg_pool2d(xt, 2)
        got.append(lib.autograd.grad(out, xt, lib.tensor(v), is_grads_batched=True)[0].numpy())
    np.testing.assert_allclose(got[0], got[1], rtol=1e-12)
