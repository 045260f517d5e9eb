"""numba's row loops — softmax and log_softmax (float32), softmax's gradient, standardization,
layer norm and their gradients — and their ``exp``, against float64 truth and PyTorch: row
lengths around the vector width, nan and -inf, rows shared among the cores, read-only input, the
cases left to NumPy, and half inputs summed in float32 there."""

import importlib

import ml_dtypes
import numpy as np
import pytest
import torch

import ember
import ember.nn.functional as F
from ember.backend import compiled
from ember.ops import normalization, rows_kernel
from ember.ops.layer_norm import LayerNorm, LayerNormGrad

softmax_module = importlib.import_module("ember.ops.softmax")  # (ember.ops.softmax: the function)


def _spy(monkeypatch, module, name):
    """The list of whether each call of ``module.name`` was served by numba's loops."""
    served = []
    original = getattr(module, name)

    def spy(*args, **kwargs):
        result = original(*args, **kwargs)
        served.append(result is not None)
        return result
    monkeypatch.setattr(module, name, spy)
    return served


def _numba_rows(monkeypatch, split):
    """Skips without numba; with ``split``, the rows go in small shares to three workers side
    by side."""
    pytest.importorskip("numba")
    if split:
        monkeypatch.setattr(rows_kernel, "_SHARE", 64)
        monkeypatch.setattr(rows_kernel.parallel, "workers", lambda: 3)


def _close(got, exact, dtype):
    np.testing.assert_allclose(got, exact, rtol=1e-5 if dtype == np.float32 else 1e-12,
                               atol=1e-6 if dtype == np.float32 else 1e-13)


@pytest.fixture
def looped(monkeypatch):
    return _spy(monkeypatch, softmax_module, "_looped")


@pytest.fixture
def standardized(monkeypatch):
    return _spy(monkeypatch, rows_kernel, "kernels")


def _ulps(got, exact):
    return np.abs(got - exact) / np.spacing(np.abs(exact).astype(np.float32))


def test_exp_is_within_1_025_ulps_and_rounds_tiny_results_once():
    numba = pytest.importorskip("numba")
    from ember.backend import compiled
    from ember.ops.erf_numba import exp_nonpositive

    exp_nonpositive = compiled.ready(exp_nonpositive)  # (numba's own kernel, for numba here)

    @numba.njit
    def over(y, out):
        for i in range(y.size):
            out[i] = exp_nonpositive(y[i])

    # (and the worst of all float32 inputs with a normal result: 1.0246 and 1.0171 ulps)
    y = np.concatenate([np.linspace(-110, 0, 1_000_003), -np.logspace(-8, 0, 1001),
                        [-81.44471, -5.8908396]])
    y = y.astype(np.float32)
    got = np.empty_like(y)
    over(y, got)
    exact = np.exp(y.astype(np.float64))
    normal = exact >= np.finfo(np.float32).tiny
    assert _ulps(got[normal], exact[normal]).max() <= 1.025
    # below the normal range: one rounding of a value within 1 ulp (under 0.76 of the
    # smallest subnormal), and 0 from e^-104 on
    assert np.abs(got[~normal] - exact[~normal]).max() <= 0.76 * np.spacing(np.float32(0))
    special = np.array([0.0, -0.0, -np.inf, np.nan, -104, -1e30], np.float32)
    out = np.empty_like(special)
    over(special, out)
    np.testing.assert_array_equal(out, [1, 1, 0, np.nan, 0, 0])


_SOFTMAXES = {"softmax": (ember.softmax, torch.softmax, 1e-12),
              "log_softmax": (ember.log_softmax, torch.log_softmax, 1e-6)}  # (atol: near 0)


@pytest.mark.parametrize("n", [1, 5, 16, 17, 128, 1000])
@pytest.mark.parametrize("split", [False, True])
@pytest.mark.parametrize("name", _SOFTMAXES)
def test_the_loops_match_float64_truth(monkeypatch, looped, n, split, name):
    _numba_rows(monkeypatch, split)
    mine, theirs, atol = _SOFTMAXES[name]
    x = (np.random.default_rng(n).standard_normal((7, 3, n)) * 20).astype(np.float32)
    x.flags.writeable = False  # (read-only input: a memory-mapped array)
    got = mine(ember.from_numpy(x), dim=-1).numpy()
    assert looped == [True] and compiled.numba_enabled()
    exact = theirs(torch.from_numpy(x.astype(np.float64)), -1).numpy()
    assert got.dtype == np.float32 and got.shape == x.shape
    np.testing.assert_allclose(got, exact, rtol=2e-6, atol=atol)


@pytest.mark.parametrize("name", _SOFTMAXES)
def test_nan_and_infinite_logits_as_pytorch(looped, name):
    pytest.importorskip("numba")
    mine, theirs, atol = _SOFTMAXES[name]
    x = np.random.default_rng(0).standard_normal((6, 40)).astype(np.float32)
    x[0, 0] = np.nan  # first of its row
    x[1, 33] = np.nan  # past the lanes
    x[2] = -np.inf  # all masked: 0/0
    x[3, ::2] = -np.inf  # half masked: exactly 0 there
    x[4, 7] = np.inf
    x[5] = [1000.0, -1000.0] * 20
    got = mine(ember.from_numpy(x), dim=-1).numpy()
    want = theirs(torch.from_numpy(x), -1).numpy()
    assert looped == [True]
    np.testing.assert_allclose(got, want, rtol=2e-6, atol=atol)
    assert (got[3, ::2] == (0 if name == "softmax" else -np.inf)).all()


@pytest.mark.parametrize("case", ["float64", "not_last", "strided", "float16"])
def test_other_cases_are_left_to_numpy(numba_or_numpy, looped, case):
    x = np.random.default_rng(1).standard_normal((4, 6, 9)).astype(np.float32)
    tensor, dim = ember.from_numpy(x), -1
    if case == "float64":
        tensor = tensor.double()
    elif case == "not_last":
        dim = 1
    elif case == "strided":
        tensor = tensor[:, ::2]
    else:
        tensor = tensor.half()
    got = ember.softmax(tensor, dim=dim)
    want = torch.softmax(torch.from_numpy(tensor.numpy()), dim)
    assert looped[0] is False  # (float16: then its float32 copy may be)
    np.testing.assert_allclose(got.numpy(), want.numpy(),
                               rtol=2e-3 if case == "float16" else 1e-6)


def test_the_gradient_through_the_looped_forward(numba_or_numpy):
    x = np.random.default_rng(2).standard_normal((5, 33)).astype(np.float32)
    g = np.random.default_rng(3).standard_normal((5, 33)).astype(np.float32)
    mine = ember.from_numpy(x).requires_grad_()
    theirs = torch.from_numpy(x).requires_grad_()
    (ember.softmax(mine, dim=-1) * ember.from_numpy(g)).sum().backward()
    (torch.softmax(theirs, -1) * torch.from_numpy(g)).sum().backward()
    np.testing.assert_allclose(mine.grad.numpy(), theirs.grad.numpy(), rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("trailing", [(1,), (5,), (17,), (256,), (3, 40)])
@pytest.mark.parametrize("split", [False, True])
def test_standardize_matches_float64_truth(monkeypatch, standardized, dtype, trailing, split):
    _numba_rows(monkeypatch, split)
    rng = np.random.default_rng(len(trailing) * 100 + trailing[-1])
    x = (rng.standard_normal((6, 7, *trailing)) * 3 + 1000).astype(dtype)  # a far mean
    x.flags.writeable = False
    dims = tuple(range(2, x.ndim))
    y, mean, var = normalization.Standardize.forward(np, x, dims=dims, eps=1e-5)
    assert standardized == [True] and compiled.numba_enabled()
    exact = x.astype(np.float64)
    want_mean, want_var = exact.mean(dims, keepdims=True), exact.var(dims, keepdims=True)
    tol = 1e-6 if dtype == np.float32 else 1e-13
    assert y.dtype == mean.dtype == var.dtype == dtype and mean.shape == (6, 7) + (1,) * len(dims)
    np.testing.assert_allclose(mean, want_mean, rtol=tol)
    np.testing.assert_allclose(var, want_var, rtol=10 * tol, atol=tol)
    # the float32 input is already rounded at 1000 ± 3 to 6e-5: compare with its own statistics
    want = (exact - want_mean) / np.sqrt(want_var + 1e-5)
    np.testing.assert_allclose(y, want, rtol=0, atol=1e-3 if dtype == np.float32 else 1e-9)


@pytest.mark.parametrize("case", ["not_trailing", "strided", "float16"])
def test_other_standardizations_are_left_to_numpy(standardized, case):
    x = np.random.default_rng(1).standard_normal((4, 6, 9)).astype(np.float32)
    dims = (0, 2) if case == "not_trailing" else (2,)
    if case == "strided":
        x = x[:, ::2]
    elif case == "float16":
        x = x.astype(np.float16)
    y, mean, var = normalization.Standardize.forward(np, x, dims=dims, eps=1e-5)
    assert standardized == [False]
    exact = x.astype(np.float64)
    np.testing.assert_allclose(mean, exact.mean(dims, keepdims=True), rtol=1e-3, atol=1e-3)
    np.testing.assert_allclose(y, (exact - exact.mean(dims, keepdims=True))
                               / np.sqrt(exact.var(dims, keepdims=True) + 1e-5),
                               rtol=1e-2 if case == "float16" else 1e-5, atol=1e-3)


def test_layer_norm_through_the_loops_matches_torch(numba_or_numpy, standardized):
    rng = np.random.default_rng(4)
    x = rng.standard_normal((8, 16, 32)).astype(np.float32)
    w, b = (rng.standard_normal(32).astype(np.float32) for _ in range(2))
    g = rng.standard_normal(x.shape).astype(np.float32)
    mine = [ember.from_numpy(a).requires_grad_() for a in (x, w, b)]
    theirs = [torch.from_numpy(a).requires_grad_() for a in (x, w, b)]
    y = F.layer_norm(mine[0], (32,), mine[1], mine[2])
    ty = torch.nn.functional.layer_norm(theirs[0], (32,), theirs[1], theirs[2])
    (y * ember.from_numpy(g)).sum().backward()
    (ty * torch.from_numpy(g)).sum().backward()
    np.testing.assert_allclose(y.detach().numpy(), ty.detach().numpy(), rtol=1e-5, atol=1e-5)
    for a, t in zip(mine, theirs):
        np.testing.assert_allclose(a.grad.numpy(), t.grad.numpy(), rtol=1e-4, atol=1e-4)
    assert any(standardized) == (numba_or_numpy == "numba")


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("split", [False, True])
def test_softmax_grad_matches_float64_truth(monkeypatch, looped, dtype, split):
    _numba_rows(monkeypatch, split)
    rng = np.random.default_rng(7)
    v = rng.standard_normal((5, 3, 37)).astype(dtype)
    y = torch.softmax(torch.from_numpy(rng.standard_normal(v.shape)), -1).numpy().astype(dtype)
    v.flags.writeable = False  # (the first operand may be read-only)
    got = softmax_module.SoftmaxGrad.forward(np, v, y, dim=2)
    assert looped == [True] and got.dtype == dtype
    exact = torch._softmax_backward_data(torch.from_numpy(v.astype(np.float64)),
                                         torch.from_numpy(y).double(), 2, torch.float64).numpy()
    _close(got, exact, dtype)


@pytest.mark.parametrize("case", ["layouts", "read_only"])
def test_softmax_grad_of_other_operands_is_left_to_numpy(looped, case):
    v = np.random.default_rng(8).standard_normal((4, 9, 6)).astype(np.float32)
    y = np.ascontiguousarray(v.transpose(0, 2, 1)).transpose(0, 2, 1)  # another layout
    if case == "read_only":
        y = np.ascontiguousarray(y)
        y.flags.writeable = False
    got = softmax_module.SoftmaxGrad.forward(np, v, y, dim=2)
    assert looped == [False]
    np.testing.assert_allclose(got, y * (v - (v * y).sum(2, keepdims=True)), rtol=1e-5,
                               atol=1e-6)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("split", [False, True])
def test_standardize_grad_matches_float64_truth(monkeypatch, standardized, dtype, split):
    _numba_rows(monkeypatch, split)
    rng = np.random.default_rng(11)
    g, y = (rng.standard_normal((6, 7, 33)).astype(dtype) for _ in range(2))
    rstd = rng.uniform(0.5, 2.0, (6, 7, 1)).astype(dtype)
    got = normalization.StandardizeGrad.forward(np, g, y, rstd, dims=(2,))
    assert standardized == [True] and got.dtype == dtype
    g64, y64 = g.astype(np.float64), y.astype(np.float64)
    exact = rstd * (g64 - g64.mean(2, keepdims=True) - y64 * (g64 * y64).mean(2, keepdims=True))
    _close(got, exact, dtype)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("split", [False, True])
def test_layer_norm_and_its_grad_match_float64_truth(monkeypatch, standardized, dtype, split):
    _numba_rows(monkeypatch, split)
    rng = np.random.default_rng(13)
    x, g = (rng.standard_normal((6, 7, 33)).astype(dtype) * 3 + 1 for _ in range(2))
    w, b = (rng.standard_normal(33).astype(dtype) for _ in range(2))
    x.flags.writeable = w.flags.writeable = False  # (a read-only input and weight)
    out, mean, rstd = LayerNorm.forward(np, x, w, b, eps=1e-5)
    x64, g64, w64 = x.astype(np.float64), g.astype(np.float64), w.astype(np.float64)
    mean64 = x64.mean(2, keepdims=True)
    rstd64 = 1 / np.sqrt(((x64 - mean64) ** 2).mean(2, keepdims=True) + 1e-5)
    xhat = (x64 - mean64) * rstd64
    for got, exact in ((out, xhat * w64 + b), (mean, mean64), (rstd, rstd64)):
        assert got.dtype == dtype
        _close(got, exact, dtype)
    x = x.copy()  # (the backward takes a writable input)
    dx, dw, db = LayerNormGrad.forward(np, g, x, mean, rstd, w)
    assert standardized == [True, True]
    h = g64 * w64
    exact_dx = rstd64 * (h - h.mean(2, keepdims=True) - xhat * (h * xhat).mean(2, keepdims=True))
    for got, exact in ((dx, exact_dx), (dw, (g64 * xhat).sum((0, 1))), (db, g64.sum((0, 1)))):
        assert got.dtype == dtype and got.shape == exact.shape
        _close(got, exact, dtype)


@pytest.mark.parametrize("name", ["layer_norm", "layer_norm_affine", "softmax"])
def test_bfloat16_rows_are_summed_in_float32(name):
    # NumPy sums bfloat16 in bfloat16 (4096 ones average to 0.0625): forward and gradient
    # must sum in float32 and round once, as PyTorch's CPU kernels do
    rng = np.random.default_rng(12)
    n = 4096
    x = rng.standard_normal((8, n))
    w = rng.standard_normal((8, n)) * 0.1 + 1.0
    fn = {"layer_norm": lambda t: F.layer_norm(t, (n,)),
          "layer_norm_affine": lambda t: F.layer_norm(t, (n,), ember.ones(n, dtype=t.dtype),
                                                      ember.zeros(n, dtype=t.dtype)),
          "softmax": lambda t: F.softmax(t * 4, -1)}[name]

    def grad(dtype):
        t = ember.from_numpy(x.astype(dtype)).requires_grad_()
        (g,) = ember.autograd.grad((fn(t) * ember.from_numpy(w.astype(dtype))).sum(), [t])
        return g.numpy().astype(np.float64)

    exact = grad(np.float64)
    # (PyTorch: ~4 % of the largest; summed in bfloat16 the error was over 100 %)
    assert np.abs(grad(ml_dtypes.bfloat16) - exact).max() <= 0.06 * np.abs(exact).max()


def test_trailing_dims_test_takes_every_order_and_negative_dims():
    """rows_kernel._trailing (a single dim without sorting) agrees with the sorted rule for
    every set of dims of up to 4-d arrays, negative ones included."""
    import itertools

    from ember.ops.rows_kernel import _trailing

    for ndim in range(1, 5):
        every = list(range(-ndim, ndim))
        for count in (1, 2, 3):
            for dims in itertools.permutations(every, count):
                want = sorted(d % ndim for d in dims) == list(range(ndim - count, ndim))
                assert _trailing(dims, ndim) == want, (dims, ndim)
