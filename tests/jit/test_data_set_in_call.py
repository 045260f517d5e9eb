"""``T.data = value`` inside a compiled function, on a tensor from before the call (one it
reaches, an argument), with ``value`` made in the call: every call gives ``T`` that value
again, as eager does. The graph read ``T`` itself where it was first met after the
assignment (``T.data = zeros(3); T.add_(1)`` added up: 1, 2, 3), and held ``value``'s array,
which ``T`` now is, as its constant (a write into ``T`` between calls changed it). A value over
memory that outlives the call (``ember.from_numpy(G)``) runs eagerly: the graph wrote the
traced call's value into ``G`` at every call."""

from __future__ import annotations

import functools

import numpy as np
import pytest
from tests.jit.helpers import eager_then_compiled

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


def _outside_then_write(T, memory, x):
    T.data = ember.from_numpy(memory)
    T.add_(1.0)
    return x * T


def _outside_read(T, memory, x):
    T.data = ember.from_numpy(memory)
    return x + T


def _local_then_write(T, memory, x):
    T.data = ember.from_numpy(np.zeros(3, dtype=np.float32))
    T.add_(1.0)
    return x * T


def _calls(body, compiled):
    held, memory = ember.zeros(3), np.zeros(3, dtype=np.float32)
    f = functools.partial(body, held, memory)
    f = jit.compile(f) if compiled else f
    seen = []
    for i in range(CALLS):
        memory += 5.0 * i  # (the caller writes it between calls)
        seen.append((f(ember.arange(3.0)).tolist(), held.tolist(), memory.tolist()))
    return seen, f


@pytest.mark.parametrize("body", [_outside_then_write, _outside_read, _local_then_write])
def test_data_set_to_a_numpy_array_matches_eager(body):
    # (T's memory is the array's: the graph wrote the traced call's value into it at every
    # call, so a global array stopped moving; such a call runs eagerly, a local one compiles)
    compiled = _calls(body, True)
    assert compiled[0] == _calls(body, False)[0]
    assert (compiled[1].last.eager is None) == (body is _local_then_write)


def _view_written_through(T, U, x):
    T.data = U[1]
    T.add_(1.0)
    return x * T


def _base_written_view_read(T, U, x):
    T.data = U[1]
    U.mul_(2.0)
    return x * T


def _made_tensor_written_through(T, U, x):
    b = ember.empty(3)
    b.data = U.t().t()[1]
    b.add_(1.0)
    return x * b + T


def _view_of_a_rebound_base_written(T, U, x):
    v = U[1]
    U.data = ember.zeros(2, 3)  # (v views U's old memory now)
    v.add_(1.0)
    return x * v + U[1]


def _view_data_set_then_base_rebound(T, U, x):
    T.data = U[1]
    U.data = ember.zeros(2, 3)
    T.add_(1.0)
    return x * T + U[1]


@pytest.mark.parametrize("body", [_view_written_through, _base_written_view_read,
                                  _made_tensor_written_through, _view_of_a_rebound_base_written,
                                  _view_data_set_then_base_rebound])
def test_data_set_to_a_view_is_that_view(body):
    # (T.data = U[1]: a write into T is one into U, as eager's; it raised a TraceError naming
    # "a view (shape (2, 3))" at the caller's line. A view whose base got other memory since
    # is a view no more: the graph wrote into U's new memory)
    def make():
        T, U = ember.zeros(3), ember.ones(2, 3)
        return functools.partial(body, T, U), lambda out: (out.tolist(), T.tolist(), U.tolist())

    eager, compiled, f = eager_then_compiled(make, CALLS)
    assert compiled == eager
    # (a view of a tensor from before the call runs eagerly: review50f found the graph one
    # call behind once T views U from the call before)
    of_state = body in (_view_written_through, _base_written_view_read,
                        _view_data_set_then_base_rebound)
    assert (f.last.eager or "").startswith("runs eagerly: it sets .data") == of_state


def test_data_set_to_a_view_of_state_then_the_state_read_runs_eagerly_as_eager():
    # (review50f: from the second call T views U already, and the graph, traced with T
    # apart, read U[1] one call behind: 4,5,6 twice)
    def run(compiled):
        U, T = ember.arange(6.0).reshape(2, 3), ember.zeros(3)

        def f(x):
            T.data = U[1]
            T.add_(1)
            return U[1] * x

        g = ember.jit.compile(f) if compiled else f
        return [g(ember.ones(3)).tolist() for _ in range(4)], U.tolist()

    assert run(True) == run(False)


def test_a_write_through_numpy_of_a_tensor_from_before_the_call_runs_eagerly():
    # (review50f 5: U.numpy()[0, 0] += 1 gave 1, 1, 1 compiled, 1, 2, 3 eager)
    def run(compiled):
        U = ember.zeros(2, 3)

        def f(x):
            U.numpy()[0, 0] += 1
            return x * U[0, 0]

        g = jit.compile(f) if compiled else f
        return [g(ember.ones(1)).tolist() for _ in range(3)], g

    (eager, _), (got, g) = run(False), run(True)
    assert got == eager == [[1.0], [2.0], [3.0]]
    assert g.last.eager.startswith("runs eagerly: it takes .numpy()")
