"""Training-mode batch norm by numba's two passes against NumPy's forward, float64 truth and
PyTorch: channels-last layouts of every rank, both dtypes, the batch split among the cores,
the cases left to NumPy, and the gradient through the same statistics."""

import numpy as np
import pytest
import torch
import torch.nn.functional as TF

import ember
import ember.nn.functional as F
from ember.backend import compiled
from ember.ops import batch_norm_kernel
from ember.ops.normalization import BatchNorm


def _channels_last(x):
    return np.moveaxis(np.ascontiguousarray(np.moveaxis(x, 1, -1)), -1, 1)


def _inputs(shape, dtype, seed=0):
    rng = np.random.default_rng(seed)
    x = (rng.standard_normal(shape) * 3 + 5).astype(dtype)  # a mean far from 0
    c = shape[1]
    return x, rng.standard_normal(c).astype(dtype), rng.standard_normal(c).astype(dtype)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("shape", [(16, 8, 9, 7), (700, 12), (20, 6, 50)])
@pytest.mark.parametrize("split", [False, True])
def test_the_loops_match_float64_statistics_and_numpys_output(monkeypatch, dtype, shape, split):
    pytest.importorskip("numba")
    if split:  # the rows in shares side by side, added in order
        monkeypatch.setattr(batch_norm_kernel, "_SHARE", 1000)
        monkeypatch.setattr(batch_norm_kernel.parallel, "workers", lambda: 3)
    x, w, b = _inputs(shape, dtype)
    view = _channels_last(x)
    got = batch_norm_kernel.batch_norm(np, view, w, b, 1e-5)
    assert got is not None and compiled.numba_enabled()
    out, mean, var = got
    strided = batch_norm_kernel.batch_norm(np, view, np.repeat(w, 2)[::2], np.repeat(b, 2)[::2],
                                           1e-5)  # parameters seen through a strided view
    np.testing.assert_array_equal(strided[0], out)
    assert out.dtype == mean.dtype == var.dtype == dtype
    assert out.strides == view.strides  # channels-last, as its input
    dims = (0, *range(2, x.ndim))
    exact = x.astype(np.float64)
    tol = 1e-6 if dtype == np.float32 else 1e-13
    np.testing.assert_allclose(mean, exact.mean(dims), rtol=tol)
    np.testing.assert_allclose(var, exact.var(dims), rtol=tol)
    saved = compiled.numba_enabled()
    compiled.use_numba(False)
    try:
        want = BatchNorm.forward(np, view, w, b, eps=1e-5)[0]
    finally:
        compiled.use_numba(saved)
    np.testing.assert_allclose(out, want, rtol=1e-4 if dtype == np.float32 else 1e-10,
                               atol=1e-5 if dtype == np.float32 else 1e-12)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("split", [False, True])
def test_the_gradient_sums_match_float64(monkeypatch, dtype, split):
    pytest.importorskip("numba")
    if split:
        monkeypatch.setattr(batch_norm_kernel, "_SHARE", 1000)
        monkeypatch.setattr(batch_norm_kernel.parallel, "workers", lambda: 3)
    x, _, mean = _inputs((16, 8, 9, 7), dtype)
    g = np.random.default_rng(1).standard_normal(x.shape).astype(dtype)
    got = batch_norm_kernel.gradient_sums(np, _channels_last(g), _channels_last(x), mean)
    assert got is not None and all(t.dtype == dtype and t.shape == (8,) for t in got)
    dims = (0, 2, 3)
    g64, centred = g.astype(np.float64), x - mean.astype(np.float64).reshape(1, -1, 1, 1)
    tol = 1e-5 if dtype == np.float32 else 1e-12
    np.testing.assert_allclose(got[0], g64.sum(dims), rtol=tol, atol=tol)
    np.testing.assert_allclose(got[1], (g64 * centred).sum(dims), rtol=tol, atol=tol)
    assert batch_norm_kernel.gradient_sums(np, g, _channels_last(x), mean) is None  # layouts


@pytest.mark.parametrize("case", ["channels first", "small", "half", "one row", "numba off"])
def test_what_the_loops_leave_to_numpy(case):
    x, w, b = _inputs((16, 8, 9, 7), np.float32)
    x = {"channels first": x, "small": _channels_last(x[:2, :, :4, :4]),
         "half": _channels_last(x).astype(np.float16), "one row": np.ones((1, 5000), np.float32),
         "numba off": _channels_last(x)}[case]
    saved = compiled.numba_enabled()
    compiled.use_numba(case != "numba off" and saved)
    try:
        assert batch_norm_kernel.batch_norm(np, x, w[:x.shape[1]], b[:x.shape[1]], 1e-5) is None
    finally:
        compiled.use_numba(saved)


@pytest.fixture
def looped(monkeypatch):
    """Counts the calls numba's loops served (each function's non-None results)."""
    served = {"batch_norm": 0, "gradient_sums": 0}
    for name in served:
        original = getattr(batch_norm_kernel, name)

        def spy(*args, _original=original, _name=name):
            result = _original(*args)
            served[_name] += result is not None
            return result
        monkeypatch.setattr(batch_norm_kernel, name, spy)
    return served


def test_batch_norm_of_a_channels_last_batch_matches_torch(numba_or_numpy, looped):
    x, w, b = _inputs((16, 8, 9, 7), np.float32, seed=3)
    g = np.random.default_rng(4).standard_normal(x.shape).astype(np.float32)
    mine = [ember.from_numpy(a).requires_grad_() for a in (_channels_last(x), w, b)]
    theirs = [torch.from_numpy(a).requires_grad_() for a in (x, w, b)]
    rm, rv = ember.zeros(8), ember.ones(8)
    trm, trv = torch.zeros(8), torch.ones(8)
    y = F.batch_norm(mine[0], rm, rv, mine[1], mine[2], training=True)
    ty = TF.batch_norm(theirs[0], trm, trv, theirs[1], theirs[2], training=True)
    (y * ember.from_numpy(_channels_last(g))).sum().backward()
    (ty * torch.from_numpy(g)).sum().backward()
    np.testing.assert_allclose(y.detach().numpy(), ty.detach().numpy(), rtol=1e-4, atol=1e-5)
    np.testing.assert_allclose(rm.numpy(), trm.numpy(), rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(rv.numpy(), trv.numpy(), rtol=1e-5)
    for a, t in zip(mine, theirs):
        np.testing.assert_allclose(a.grad.numpy(), t.grad.numpy(), rtol=1e-3, atol=1e-4)
    assert all(looped.values()) == (numba_or_numpy == "numba")


def test_the_gradient_agrees_with_the_loops_forward_in_float64(numba_or_numpy, looped):
    # a directional finite difference of the looped forward against the backward's product
    rng = np.random.default_rng(5)
    x, w, b = _inputs((16, 8, 9, 7), np.float64, seed=6)
    d, g = rng.standard_normal(x.shape), rng.standard_normal(x.shape)

    def loss(a):
        y = F.batch_norm(ember.from_numpy(_channels_last(a)), None, None,
                         ember.from_numpy(w), ember.from_numpy(b), training=True)
        return float((y * ember.from_numpy(_channels_last(g))).sum())

    xt = ember.from_numpy(_channels_last(x)).requires_grad_()
    y = F.batch_norm(xt, None, None, ember.from_numpy(w), ember.from_numpy(b), training=True)
    (y * ember.from_numpy(_channels_last(g))).sum().backward()
    h = 1e-6
    numeric = (loss(x + h * d) - loss(x - h * d)) / (2 * h)
    np.testing.assert_allclose(float((xt.grad.numpy() * d).sum()), numeric, rtol=1e-6)
    assert all(looped.values()) == (numba_or_numpy == "numba")
