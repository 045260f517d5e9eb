"""``T.data = value`` inside a compiled function, on a tensor from before the call (one it
reaches, an argument), with ``value`` made in the call: every call gives ``T`` that value
again, as eager does. The graph read ``T`` itself where it was first met after the
assignment (``T.data = zeros(3); T.add_(1)`` added up: 1, 2, 3), and held ``value``'s array,
which ``T`` now is, as its constant (a write into ``T`` between calls changed it)."""

from __future__ import annotations

import pytest

import ember
from ember import jit

CALLS = 3


def _case(body):
    held = ember.zeros(3)
    return (lambda x: body(held, x)), held


def _fill_then_write(T, x):
    T.data = ember.zeros(3)
    T.add_(1.0)
    return x * T


def _read_fill_write(T, x):
    y = x * T
    T.data = ember.zeros(3)
    T.add_(1.0)
    return y + T


def _full_then_write(T, x):
    T.data = ember.full((3,), 2.0)
    T.add_(1.0)
    return x * T


def _fill_only(T, x):
    T.data = ember.zeros(3)
    return x + T


@pytest.mark.parametrize("body", [_fill_then_write, _read_fill_write, _full_then_write,
                                  _fill_only])
def test_data_set_in_the_call_matches_eager(body):
    x = ember.arange(3.0)
    f, held = _case(body)
    want = []
    for i in range(CALLS):
        held.add_(5.0 * i)  # (the caller writes it between calls)
        want.append((f(x).tolist(), held.tolist()))
    f, held = _case(body)
    compiled = jit.compile(f)
    got = []
    for i in range(CALLS):
        held.add_(5.0 * i)
        got.append((compiled(x).tolist(), held.tolist()))
    assert got == want
    assert compiled.traces == 1


def test_data_set_of_an_argument_matches_eager():
    def f(x):
        x.data = ember.zeros(3)
        return x + 1

    compiled = jit.compile(f)
    for _ in range(CALLS):
        a = ember.ones(3)
        assert compiled(a).tolist() == [1.0, 1.0, 1.0]
        assert a.tolist() == [0.0, 0.0, 0.0]
