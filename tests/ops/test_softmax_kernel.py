"""float32 softmax by numba's row loops and their ``exp`` against float64 truth and PyTorch:
row lengths around the lanes, nan and -inf, rows shared among the cores, read-only input, and
the cases left to NumPy."""

import importlib

import numpy as np
import pytest
import torch

import ember
from ember.backend import compiled

softmax_module = importlib.import_module("ember.ops.softmax")  # (ember.ops.softmax: the function)


@pytest.fixture
def looped(monkeypatch):
    """Counts the softmaxes numba's loops computed."""
    served = []
    original = softmax_module._looped_softmax

    def spy(xp, x, dim):
        result = original(xp, x, dim)
        served.append(result is not None)
        return result
    monkeypatch.setattr(softmax_module, "_looped_softmax", spy)
    return served


def _ulps(got, exact):
    return np.abs(got - exact) / np.spacing(np.abs(exact).astype(np.float32))


def test_exp_is_within_one_ulp_and_rounds_tiny_results_once():
    numba = pytest.importorskip("numba")
    from ember.ops.exp_numba import exp_nonpositive

    @numba.njit
    def over(y, out):
        for i in range(y.size):
            out[i] = exp_nonpositive(y[i])

    y = np.concatenate([np.linspace(-110, 0, 1_000_003), -np.logspace(-8, 0, 1001)])
    y = y.astype(np.float32)
    got = np.empty_like(y)
    over(y, got)
    exact = np.exp(y.astype(np.float64))
    normal = exact >= np.finfo(np.float32).tiny
    assert _ulps(got[normal], exact[normal]).max() <= 1.0
    # below the normal range: within half the smallest subnormal, 0 from e^-104 on
    assert np.abs(got[~normal] - exact[~normal]).max() <= 0.76 * np.spacing(np.float32(0))
    special = np.array([0.0, -0.0, -np.inf, np.nan, -104, -1e30], np.float32)
    out = np.empty_like(special)
    over(special, out)
    np.testing.assert_array_equal(out, [1, 1, 0, np.nan, 0, 0])


@pytest.mark.parametrize("n", [1, 5, 16, 17, 128, 1000])
@pytest.mark.parametrize("split", [False, True])
def test_the_loops_match_float64_truth(monkeypatch, looped, n, split):
    pytest.importorskip("numba")
    if split:  # the rows in shares side by side
        monkeypatch.setattr(softmax_module, "_SHARE", 64)
        monkeypatch.setattr(softmax_module.parallel, "workers", lambda: 3)
    x = (np.random.default_rng(n).standard_normal((7, 3, n)) * 20).astype(np.float32)
    x.flags.writeable = False  # (read-only input: a memory-mapped array)
    got = ember.softmax(ember.from_numpy(x), dim=-1).numpy()
    assert looped == [True] and compiled.numba_enabled()
    exact = torch.softmax(torch.from_numpy(x).double(), -1).numpy()
    assert got.dtype == np.float32 and got.shape == x.shape
    np.testing.assert_allclose(got, exact, rtol=2e-6, atol=1e-12)


def test_nan_and_infinite_logits_as_pytorch(looped):
    pytest.importorskip("numba")
    x = np.random.default_rng(0).standard_normal((6, 40)).astype(np.float32)
    x[0, 0] = np.nan  # first of its row
    x[1, 33] = np.nan  # past the lanes
    x[2] = -np.inf  # all masked: 0/0
    x[3, ::2] = -np.inf  # half masked: exactly 0 there
    x[4, 7] = np.inf
    x[5] = [1000.0, -1000.0] * 20
    got = ember.softmax(ember.from_numpy(x), dim=-1).numpy()
    want = torch.softmax(torch.from_numpy(x), -1).numpy()
    assert looped == [True]
    np.testing.assert_allclose(got, want, rtol=2e-6, atol=1e-12)
    assert (got[3, ::2] == 0).all()


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
    assert looped == [False]
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
