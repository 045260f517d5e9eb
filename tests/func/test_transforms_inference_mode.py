"""Reverse-mode transforms under ``inference_mode``: they compute (torch.func's levels leave
inference mode, as Ember's do), where recording nothing gave zeros."""

from __future__ import annotations

import numpy as np
import pytest
import torch
import torch.func as tf

import ember
import ember.func as ef

LIBS = [(torch, tf), (ember, ef)]
X = [0.2, -0.3, 0.5]


def _np(t):
    return np.asarray(t.detach().numpy())


def _cases(lib, fn):
    f = lambda z: (z.sin() * z).sum()  # noqa: E731
    x = lib.tensor(X, dtype=lib.float64)
    return {
        "grad": lambda: fn.grad(f)(x),
        "vjp": lambda: fn.vjp(lambda z: z.sin(), x)[1](lib.ones(3, dtype=lib.float64))[0],
        "jacrev": lambda: fn.jacrev(lambda z: z.sin() * z.sum())(x),
        "jacfwd": lambda: fn.jacfwd(lambda z: z.sin() * z.sum())(x),
        "hessian": lambda: fn.hessian(f)(x),
        "grad of grad": lambda: fn.grad(lambda z: fn.grad(f)(z).sum())(x),
    }


@pytest.mark.parametrize("name", list(_cases(torch, tf)))
def test_transforms_compute_under_inference_mode(name):
    expected = _np(_cases(torch, tf)[name]())
    with torch.inference_mode():
        np.testing.assert_allclose(_np(_cases(torch, tf)[name]()), expected, rtol=1e-12)
    with ember.inference_mode():
        got = _cases(ember, ef)[name]()
        assert ember.is_inference_mode_enabled()
    np.testing.assert_allclose(_np(got), expected, rtol=1e-12)


@pytest.mark.parametrize("lib, fn", LIBS)
def test_vjp_fn_called_under_inference_mode(lib, fn):
    x = lib.tensor(X, dtype=lib.float64)
    _, vjp_fn = fn.vjp(lambda z: z.exp(), x)
    with lib.inference_mode():
        (g,) = vjp_fn(lib.ones(3, dtype=lib.float64))
    np.testing.assert_allclose(_np(g), np.exp(X), rtol=1e-12)
