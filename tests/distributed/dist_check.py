"""Checks of distributed functions from inside the ranks.

:func:`global_jacobians` treats ``fn`` run on every rank as one function of all ranks' inputs
to all ranks' outputs, and builds its full Jacobian three ways (central differences, the vjp
rules, the jvp rules), perturbing or seeding one element of one rank at a time.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

import ember
import ember.distributed as dist


def _gather(a: ember.Tensor) -> np.ndarray:
    parts = [None] * dist.get_world_size()
    dist.all_gather_object(parts, a.detach().numpy().reshape(-1))
    return np.concatenate(parts)


def _unit(like: ember.Tensor, owner: int, j: int) -> ember.Tensor:
    e = np.zeros(like.numel())
    if dist.get_rank() == owner:
        e[j] = 1.0
    return ember.tensor(e.reshape(tuple(like.shape)))


def global_jacobians(fn: Callable, x: ember.Tensor, eps: float = 1e-6) -> tuple:
    """(numerical, from vjp, from jvp) Jacobians of ``fn`` over all ranks; ``x`` float64, the
    same shape on every rank."""
    n = dist.get_world_size()
    y = fn(x)
    num_cols, jvp_cols, vjp_rows = [], [], []
    for k in range(n):
        for j in range(x.numel()):
            e = _unit(x, k, j)
            diff = (fn(x + eps * e) - fn(x - eps * e)) / (2 * eps)
            num_cols.append(_gather(diff))
            jvp_cols.append(_gather(ember.func.jvp(fn, (x,), (e,))[1]))
    for k in range(n):
        for i in range(y.numel()):
            xr = x.detach().requires_grad_()
            (g,) = ember.autograd.grad(fn(xr), xr, _unit(y, k, i), allow_unused=True)
            vjp_rows.append(_gather(ember.zeros_like(x) if g is None else g))
    return np.stack(num_cols, 1), np.stack(vjp_rows, 0), np.stack(jvp_cols, 1)


def check_global_gradients(fn: Callable, x: ember.Tensor, atol: float = 1e-7) -> None:
    """Asserts that the vjp and jvp rules of ``fn`` agree with finite differences."""
    num, rev, fwd = global_jacobians(fn, x)
    np.testing.assert_allclose(rev, num, atol=atol, err_msg="vjp vs finite differences")
    np.testing.assert_allclose(fwd, num, atol=atol, err_msg="jvp vs finite differences")
