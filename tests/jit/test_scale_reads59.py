"""``GradScaler.get_scale()`` in a compiled step that calls ``update()``: read before it, the
scale is watched by value (the graph kept the trace's); read after it and returned, it is each
call's scale; used otherwise, the call runs eagerly (sweep59e)."""

from __future__ import annotations

import warnings

import pytest

import ember
import ember.nn as nn


def _run(compiled: bool, use: str) -> list:
    ember.manual_seed(0)
    m = nn.Linear(2, 1)
    opt = ember.optim.SGD(m.parameters(), lr=0.1)
    scaler = ember.amp.GradScaler("cpu", init_scale=4.0, growth_interval=1)

    def step(x):
        before = scaler.get_scale()
        opt.zero_grad()
        scaler.scale(m(x).sum()).backward()
        scaler.step(opt)
        scaler.update()
        if use == "returned":
            return m.weight.clone(), scaler.get_scale()
        if use == "before":
            return m.weight * before
        return m.weight * scaler.get_scale()

    f = ember.compile(step) if compiled else step
    out = []
    for x in (ember.ones(1, 2), ember.ones(1, 2) * float("inf"), ember.ones(1, 2),
              ember.ones(1, 2)):
        got = f(x)
        out.append((got[0].tolist(), got[1]) if use == "returned" else got.tolist())
    assert "get_scale" not in vars(scaler)  # (the stand-in is gone after the trace)
    return out


@pytest.mark.parametrize("use", ["returned", "computed", "before"])
def test_scale_after_update_is_each_calls(use):
    with warnings.catch_warnings(record=True) as warned:
        warnings.simplefilter("always")
        compiled = _run(True, use)
    assert compiled == _run(False, use)
    assert any("GradScaler.get_scale()" in str(w.message) for w in warned) == (use == "computed")
