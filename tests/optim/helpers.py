"""Runs the same small problem in Ember and PyTorch, so optimizer trajectories can be compared
step by step (float64, each framework computing its own gradients)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
import torch

import ember

SHAPES = [(3, 4), (5,), (), (2, 0)]


def initial(seed: int = 0) -> list[np.ndarray]:
    rng = np.random.default_rng(seed)
    return [rng.standard_normal(s) for s in SHAPES]


def loss(lib: Any, params: list[Any]) -> Any:
    """A smooth non-quadratic loss: every coordinate gets its own curvature."""
    total = 0.0
    for i, p in enumerate(params):
        total = total + ((p * p) * (0.5 + i) + lib.sin(3.0 * p) + 0.1 * p).sum()
    return total


def pair(seed: int = 0) -> tuple[list[ember.Tensor], list[torch.Tensor]]:
    arrays = initial(seed)
    ep = [ember.tensor(a.copy(), requires_grad=True) for a in arrays]
    tp = [torch.tensor(a.copy(), requires_grad=True) for a in arrays]
    return ep, tp


def grads(lib: Any, opt: Any, params: list[Any]) -> Any:
    opt.zero_grad()
    value = loss(lib, params)
    value.backward()
    return value


def step_both(eo: Any, to: Any, ep: list[Any], tp: list[Any], steps: int,
              check: Callable[[], None] | None = None) -> None:
    for _ in range(steps):
        grads(ember, eo, ep)
        eo.step()
        grads(torch, to, tp)
        to.step()
        assert_params_close(ep, tp)
        if check is not None:
            check()


def assert_params_close(ep: list[Any], tp: list[Any], rtol: float = 1e-6) -> None:
    for e, t in zip(ep, tp, strict=True):
        np.testing.assert_allclose(e.detach().numpy(), t.detach().numpy(), rtol=rtol,
                                   atol=1e-12)
