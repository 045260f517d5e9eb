"""What several compiled-step tests share."""

from __future__ import annotations

from typing import Any

import numpy as np

import ember
import ember.nn.functional as F


def training_step(model: Any, opt: Any) -> Any:
    """The usual step of ``model`` on ``(x, y)``: cross-entropy, backward, ``opt.step()``,
    ``opt.zero_grad()``; returns the loss."""

    def step(x, y):
        loss = F.cross_entropy(model(x), y)
        loss.backward()
        opt.step()
        opt.zero_grad()
        return loss

    return step


def counts_into(memory: np.ndarray, x: Any) -> Any:
    """``x`` times ``memory`` plus one, written into ``memory`` through a tensor made over it
    (``ember.from_numpy``): each eager call moves memory that outlives it."""
    b = ember.from_numpy(memory)
    b.add_(1.0)
    return x * b


def like_eager(f: Any, changes: list) -> Any:
    """``f`` compiled, called on ``ones(2)`` after each of ``changes`` (functions changing what
    it reads) and compared with ``f`` itself each time; returns the compiled function."""
    g = ember.jit.compile(f)
    t = ember.ones(2)
    for change in changes:
        change()
        np.testing.assert_allclose(g(t).numpy(), f(t).numpy())
    return g


def eager_then_compiled(make: Any, calls: int) -> tuple[list, list, Any]:
    """``make()`` gives a function on fresh state and what to record after a call (a function
    of its result); each is called ``calls`` times on ``arange(3.0)``, plain then compiled:
    the two lists of records and the compiled function."""
    runs, g = [], None
    for compiled in (False, True):
        f, record = make()
        g = ember.jit.compile(f) if compiled else f
        runs.append([record(g(ember.arange(3.0))) for _ in range(calls)])
    return runs[0], runs[1], g
