"""Compiled functions and Python threads: tensors other threads make while a function is
traced, and compiled calls from several threads at once (with join timeouts)."""

import threading

import numpy as np
import pytest

import ember
from ember import jit
from ember.jit.sources import TraceError

TIMEOUT = 10


def _in_a_thread(fn):
    box = {}
    t = threading.Thread(target=lambda: box.setdefault("value", fn()))
    t.start()
    t.join(TIMEOUT)
    assert not t.is_alive()
    return box["value"]


def test_reading_what_another_thread_computed_while_tracing_is_refused():
    # another thread's ops are not recorded: the graph would keep the first call's value
    @jit.compile
    def doubled(x):
        return _in_a_thread(lambda: x * 2) + 1

    with pytest.raises(TraceError, match="made in another thread while this function was "
                                         "being traced"):
        doubled(ember.ones(3))


def test_another_threads_work_that_the_function_does_not_read_is_fine():
    made = []

    @jit.compile
    def doubled(x):
        made.append(_in_a_thread(lambda: (ember.ones(2) * 3).tolist()))
        return x * 2

    doubled(ember.ones(2))
    np.testing.assert_array_equal(doubled(ember.full((2,), 5.0)).numpy(), [10.0, 10.0])
    assert made == [[3.0, 3.0]]


def test_first_calls_from_several_threads_at_once_give_eager_values():
    @jit.compile
    def f(x, y):
        return (x * y).sin().sum() + x.exp().mean()

    wrong, errors = [], []
    barrier = threading.Barrier(4)

    def call(i):
        try:
            barrier.wait(TIMEOUT)
            for k in range(6):
                x, y = ember.full((3 + (i + k) % 3,), float(i + 1)), ember.ones(3 + (i + k) % 3)
                want = ((x * y).sin().sum() + x.exp().mean()).item()
                if abs(f(x, y).item() - want) > 1e-4 * abs(want):
                    wrong.append((i, k))
        except Exception as exc:  # reported in the test's thread
            errors.append(exc)

    threads = [threading.Thread(target=call, args=(i,)) for i in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(TIMEOUT * 3)
    assert not any(t.is_alive() for t in threads)
    assert errors == [] and wrong == []


def test_a_parameter_gradient_another_thread_makes_while_tracing_is_not_the_graphs():
    # thread A's backward sets w.grad while B traces a function that reads w (not w.grad):
    # the compiled function used to write A's gradient into w.grad at every call
    w = ember.ones(4, requires_grad=True)
    inside, done = threading.Event(), threading.Event()

    @jit.compile
    def f(x):
        inside.set()
        done.wait(TIMEOUT)
        return (x * w).sum()

    def other():
        inside.wait(TIMEOUT)
        (w * 2).sum().backward()
        done.set()

    t = threading.Thread(target=other)
    t.start()
    assert f(ember.ones(4)).item() == 4.0
    t.join(TIMEOUT)
    np.testing.assert_array_equal(w.grad.numpy(), [2.0] * 4)
    w.grad = None
    assert f(ember.full((4,), 2.0)).item() == 8.0  # (compiled)
    assert w.grad is None


def test_another_thread_reading_a_gradient_while_tracing_leaves_the_step_writing_it():
    # a logging thread's w.grad.detach() wraps the .grad's memory again: the step stopped
    # writing w.grad at every later call (it took the alias for another thread's gradient)
    w = ember.ones(3, requires_grad=True)
    w.grad = ember.zeros(3)
    first = [True]

    @jit.compile
    def step(x):
        if first[0]:
            first[0] = False
            _in_a_thread(lambda: (w.grad.detach(), w.grad.mul_(1.0)))
        (w * x).sum().backward()
        return x * 1

    for i in range(3):
        before = w.grad.clone()
        step(ember.full((3,), i + 1.0))
        np.testing.assert_array_equal((w.grad - before).numpy(), [i + 1.0] * 3)

