"""A tensor the compiled function makes over memory that outlives the call
(``ember.from_numpy(G)`` of a global array, ``as_tensor``, ``asarray``, ``frombuffer``,
``from_dlpack``, a view of it, a row of a reached tensor's ``.numpy()``, an array only a tuple
or an object array holds) and writes in place: eager moves that memory at each call, so
the signature runs eagerly (the graph held the first call's value: ``G`` stopped at 1 and
every call returned ``x * 1``). Memory made in the call (a local array, a tensor's after
``.numpy()``) and a reached tensor's memory after ``.data =`` still compile."""

from __future__ import annotations

import array
import gc

import numpy as np
import pytest

import ember
from ember import jit

CALLS = 3  # the trace, then two cached calls


def _global_array(make):
    memory = np.zeros(3, dtype=np.float32)

    def f(x):
        b = make(memory)
        b.add_(1.0)
        return x * b
    return f, lambda: memory.tolist()


def _buffer():
    memory = array.array("f", [0.0, 0.0, 0.0])

    def f(x):
        b = ember.frombuffer(memory, dtype=ember.float32)
        b.add_(1.0)
        return x * b
    return f, lambda: list(memory)


def _held_memoryview():
    memory = memoryview(bytearray(12))

    def f(x):
        b = ember.frombuffer(memory, dtype=ember.float32)
        b.add_(1.0)
        return x * b
    return f, lambda: np.frombuffer(memory, dtype=np.float32).tolist()


def _row_of_global():
    memory = np.zeros((2, 3), dtype=np.float32)

    def f(x):
        b = ember.from_numpy(memory[1])
        b[1:].mul_(2.0).add_(1.0)
        return x + b
    return f, lambda: memory.tolist()


def _numpy_kept():
    kept = []

    def f(x):
        b = ember.zeros(3)
        kept.append(b.numpy())
        b.add_(1.0)
        return x * b
    return f, lambda: [a.tolist() for a in kept]


def _view_of_reached_numpy():
    reached = ember.zeros(2, 3)

    def f(x):
        b = ember.from_numpy(reached.numpy()[1])  # (state's memory, not its variable)
        b.add_(1.0)
        return x * b
    return f, lambda: reached.tolist()


def _held_without_the_collector(hold, get):
    # (a tuple of arrays or bytearrays, which the collector untracks, an object array, a
    # view: each references the memory where gc.get_referrers lists no holder)
    held = hold()
    gc.collect()

    def f(x):
        b = get(held)
        b.add_(1.0)
        return x * b.reshape(-1)[:3]
    return f, lambda: get(held).tolist()


def _object_array():
    held = np.empty(1, dtype=object)
    held[0] = np.zeros(3, dtype=np.float32)
    return held


OUTSIDE = {
    "from_numpy": lambda: _global_array(ember.from_numpy),
    "as_tensor": lambda: _global_array(ember.as_tensor),
    "asarray": lambda: _global_array(ember.asarray),
    "from_dlpack": lambda: _global_array(ember.from_dlpack),
    "reshape_of_global": lambda: _global_array(lambda m: ember.from_numpy(m.reshape(3))),
    "frombuffer": _buffer,
    "frombuffer_of_a_held_memoryview": _held_memoryview,
    "row_of_global": _row_of_global,
    "numpy_kept": _numpy_kept,
    "view_of_a_reached_tensors_numpy": _view_of_reached_numpy,
    "in_a_tuple": lambda: _held_without_the_collector(
        lambda: (np.zeros(3, dtype=np.float32),), lambda h: ember.from_numpy(h[0])),
    "bytearray_in_a_tuple": lambda: _held_without_the_collector(
        lambda: (bytearray(12),), lambda h: ember.frombuffer(h[0], dtype=ember.float32)),
    "in_an_object_array": lambda: _held_without_the_collector(
        _object_array, lambda h: ember.from_numpy(h[0])),
    "base_of_a_held_view": lambda: _held_without_the_collector(
        lambda: np.zeros((2, 3), dtype=np.float32)[1], lambda h: ember.from_numpy(h.base)),
}


@pytest.mark.parametrize("name", OUTSIDE)
def test_write_into_memory_outside_matches_eager(name):
    x = ember.arange(3.0)
    f, seen = OUTSIDE[name]()
    want = [f(x).numpy().tolist() for _ in range(CALLS)]
    want_memory = seen()
    f, seen = OUTSIDE[name]()
    compiled = jit.compile(f)
    got = [compiled(x).numpy().tolist() for _ in range(CALLS)]
    assert got == want
    assert seen() == want_memory
    assert "outlives the call" in compiled.last.eager


def _local_array(x):
    b = ember.from_numpy(np.zeros(3, dtype=np.float32))
    b.add_(1.0)
    return x * b


def _numpy_read(x):
    b = ember.zeros(3)
    b.numpy()
    b.add_(1.0)
    return x * b


REACHED = ember.zeros(3)


def _data_of_reached(x):
    b = ember.empty(3)
    b.data = REACHED
    b.add_(1.0)
    return x * b


def _data_of_reached_view_written(x):
    b = ember.empty(3)
    b.data = REACHED
    b[1:].add_(1.0)  # (a view the graph follows into REACHED's variable)
    return x * b


@pytest.mark.parametrize("f", [_local_array, _numpy_read, _data_of_reached,
                               _data_of_reached_view_written])
def test_memory_of_the_call_or_of_state_still_compiles(f):
    x = ember.arange(3.0)
    start = REACHED.clone()
    want = [f(x).numpy().tolist() for _ in range(CALLS)]
    REACHED.copy_(start)
    compiled = jit.compile(f)
    got = [compiled(x).numpy().tolist() for _ in range(CALLS)]
    assert got == want
    assert compiled.last.eager is None
