"""Runs the same small problem in Ember and PyTorch, so optimizer trajectories can be compared
step by step (float64, each framework computing its own gradients)."""

from __future__ import annotations

import json
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


def pair(seed: int = 0, dtype: type = np.float64) -> tuple[list[ember.Tensor], list[torch.Tensor]]:
    arrays = [a.astype(dtype) for a in initial(seed)]
    ep = [ember.tensor(a.copy(), requires_grad=True) for a in arrays]
    tp = [torch.tensor(a.copy(), requires_grad=True) for a in arrays]
    return ep, tp


def grads(lib: Any, opt: Any, params: list[Any]) -> Any:
    opt.zero_grad()
    value = loss(lib, params)
    value.backward()
    return value


def step_both(eo: Any, to: Any, ep: list[Any], tp: list[Any], steps: int,
              check: Callable[[], None] | None = None, rtol: float = 1e-6) -> None:
    for _ in range(steps):
        grads(ember, eo, ep)
        eo.step()
        grads(torch, to, tp)
        to.step()
        assert_params_close(ep, tp, rtol)
        if check is not None:
            check()


def assert_params_close(ep: list[Any], tp: list[Any], rtol: float = 1e-6) -> None:
    for e, t in zip(ep, tp, strict=True):
        assert e.dtype.name == str(t.dtype).removeprefix("torch.")
        np.testing.assert_allclose(e.detach().numpy(), t.detach().numpy(), rtol=rtol,
                                   atol=1e-12 if rtol < 1e-5 else 1e-6)


def through_checkpoint(saved: dict[str, Any]) -> dict[str, Any]:
    """An optimizer state dict as a checkpoint stores it: tensors as NumPy arrays, the rest
    through JSON (so int keys come back as strings, tuples as lists)."""
    tensors = {(i, k): v.numpy().copy() for i, s in saved["state"].items()
               for k, v in s.items() if isinstance(v, ember.Tensor)}
    text = json.dumps({"param_groups": saved["param_groups"],
                       "state": {i: {k: v for k, v in s.items()
                                     if not isinstance(v, ember.Tensor)}
                                 for i, s in saved["state"].items()}})
    loaded = json.loads(text)
    for (i, k), array in tensors.items():
        loaded["state"].setdefault(str(i), {})[k] = array
    return loaded
