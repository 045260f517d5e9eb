"""The check every fused eager primitive takes: the same bits as the composite it replaces
(which transforms still run) and PyTorch's values and gradients."""

import warnings

import numpy as np
import torch

import ember


def assert_fused_matches(monkeypatch, module, switch: str, call, x: np.ndarray,
                         tol: float) -> None:
    """``call(lib, tensor)`` on ``x`` in Ember (the fused primitive), in Ember with
    ``module.<switch>`` (the dtypes the fused path takes) emptied, which runs the composite:
    bit for bit equal; and in PyTorch: values within ``tol``, gradients within ``10 * tol``."""
    got = ember.tensor(x, requires_grad=True)
    out = call(ember, got)
    with monkeypatch.context() as m:
        m.setattr(module, switch, ())
        composite = call(ember, ember.tensor(x))
    np.testing.assert_array_equal(out.detach().numpy(), composite.numpy())
    want = torch.tensor(x, requires_grad=True)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # (torch's: no degrees of freedom left)
        expected = call(torch, want)
    np.testing.assert_allclose(out.detach().numpy(), expected.detach().numpy(), rtol=tol,
                               atol=tol)
    g = np.random.default_rng(1).standard_normal(tuple(expected.shape)).astype(x.dtype)
    out.backward(ember.tensor(g))
    expected.backward(torch.tensor(g))
    np.testing.assert_allclose(got.grad.numpy(), want.grad.numpy(), rtol=10 * tol,
                               atol=10 * tol)
