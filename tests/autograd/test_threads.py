"""Autograd state under Python threads: what is per thread, and concurrent backward passes.

Each cross-thread case runs two threads in a fixed order (events), with join timeouts, so a
deadlock fails the test instead of hanging it.
"""

import threading
import warnings

import numpy as np
import pytest

import ember
from ember.autograd import forward_ad as fwAD

TIMEOUT = 10


def _two(first, second):
    """Runs ``first(e1, e2)`` and ``second(e1, e2)`` in two threads; their results."""
    e1, e2 = threading.Event(), threading.Event()
    out, errors = [None, None], []

    def run(i, fn):
        try:
            out[i] = fn(e1, e2)
        except BaseException as exc:  # reported below, in the test's thread
            errors.append(exc)
            e1.set()
            e2.set()

    threads = [threading.Thread(target=run, args=(i, f)) for i, f in enumerate((first, second))]
    for t in threads:
        t.start()
    for t in threads:
        t.join(TIMEOUT)
    assert not any(t.is_alive() for t in threads), "deadlock"
    if errors:
        raise errors[0]
    return out


def _in_thread(fn):
    return _two(lambda e1, e2: fn(), lambda e1, e2: None)[0]


def test_a_new_thread_starts_with_grad_on_and_outside_inference_mode():
    x = ember.ones(2, requires_grad=True)
    for mode in (ember.no_grad(), ember.inference_mode(), ember.set_grad_enabled(False)):
        with mode:
            seen = _in_thread(lambda: (ember.is_grad_enabled(), (x * 2).requires_grad,
                                       ember.is_inference_mode_enabled()))
        assert seen == (True, True, False)


def test_saved_tensor_hooks_stay_in_their_thread():
    packed = []

    def hooked(e1, e2):
        with ember.autograd.graph.saved_tensors_hooks(lambda t: packed.append(t) or t,
                                                      lambda t: t):
            e1.set()
            e2.wait(TIMEOUT)

    def plain(e1, e2):
        e1.wait(TIMEOUT)
        x = ember.ones(3, requires_grad=True) * 1
        y = x.exp().sum()
        e2.set()
        y.backward()

    _two(hooked, plain)
    assert packed == []


def test_each_thread_records_through_its_own_innermost_hooks():
    # A opens hooks, then B opens its own, then A records while both are open
    seen = {"A": 0, "B": 0}
    recorded = threading.Event()

    def make(name):
        def pack(t):
            seen[name] += 1
            return t
        return ember.autograd.graph.saved_tensors_hooks(pack, lambda t: t)

    def a(e1, e2):
        with make("A"):
            e1.set()
            e2.wait(TIMEOUT)
            x = ember.ones(2, requires_grad=True) * 1
            x.exp().sum().backward()
            recorded.set()

    def b(e1, e2):
        e1.wait(TIMEOUT)
        with make("B"):
            e2.set()
            recorded.wait(TIMEOUT)

    _two(a, b)
    assert seen["A"] > 0 and seen["B"] == 0


def test_disable_saved_tensors_hooks_stays_in_its_thread():
    def disabled(e1, e2):
        with ember.autograd.graph.disable_saved_tensors_hooks("not here"):
            e1.set()
            e2.wait(TIMEOUT)

    def other(e1, e2):
        e1.wait(TIMEOUT)
        try:
            with ember.autograd.graph.save_on_cpu():
                return "entered"
        finally:
            e2.set()

    assert _two(disabled, other)[1] == "entered"


def test_forward_ad_levels_are_per_thread():
    # A enters a level, B enters one, A makes and uses its dual while B's level is open
    a_done = threading.Event()

    def dual_times_three(tangent):
        d = fwAD.make_dual(ember.ones(2, dtype=ember.float64),
                           ember.full((2,), tangent, dtype=ember.float64))
        return fwAD.unpack_dual(d * 3).tangent.tolist()

    def a(e1, e2):
        with fwAD.dual_level():
            e1.set()
            e2.wait(TIMEOUT)
            out = dual_times_three(2.0)
        a_done.set()
        return out

    def b(e1, e2):
        e1.wait(TIMEOUT)
        with fwAD.dual_level():
            e2.set()
            a_done.wait(TIMEOUT)
            return dual_times_three(5.0)

    assert _two(a, b) == [[6.0, 6.0], [15.0, 15.0]]


def test_anomaly_mode_is_per_thread():
    def nan_backward():
        x = ember.tensor([-1.0], requires_grad=True)
        try:
            x.sqrt().sum().backward()
        except RuntimeError:
            return "raised"
        return "no error"

    def first(e1, e2):
        with ember.autograd.detect_anomaly():
            e1.set()
            e2.wait(TIMEOUT)  # the other thread opens and closes a block meanwhile
            return ember.is_anomaly_enabled(), nan_backward()

    def second(e1, e2):
        e1.wait(TIMEOUT)
        outside = ember.is_anomaly_enabled(), nan_backward()
        with ember.autograd.detect_anomaly():
            pass
        e2.set()
        return outside

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        assert _two(first, second) == [(True, "raised"), (False, "no error")]
    assert not ember.is_anomaly_enabled()


def _together(work, n=4):
    """Runs ``work(i)`` in ``n`` threads that start at once; fails on a hang."""
    barrier = threading.Barrier(n)

    def run(i):
        barrier.wait(TIMEOUT)
        work(i)

    threads = [threading.Thread(target=run, args=(i,)) for i in range(n)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(TIMEOUT * 6)
    assert not any(t.is_alive() for t in threads)


def test_backward_in_threads_into_one_leaf_adds_every_gradient():
    w = ember.ones(5, dtype=ember.float64, requires_grad=True)

    def work(i):
        for _ in range(25):
            (w * (i + 1)).sum().backward()

    _together(work)
    np.testing.assert_array_equal(w.grad.numpy(), 25 * (1 + 2 + 3 + 4))


def test_backward_in_threads_into_one_big_leaf_loses_no_update():
    # NumPy lets go of the GIL inside big adds: unguarded sums into one .grad lost some
    w = ember.zeros(1_000_000, dtype=ember.float64, requires_grad=True)

    def work(i):
        for _ in range(6):
            (w * 1.0).sum().backward()

    _together(work)
    assert w.grad.numpy().min() == w.grad.numpy().max() == 4 * 6


def test_a_retained_gradient_adds_every_threads_backward():
    # (PyTorch loses some of these sums; its leaf gradients are exact, as Ember's)
    w = ember.zeros(1_000_000, dtype=ember.float64, requires_grad=True)
    h = w * 1.0
    h.retain_grad()

    def work(i):
        for _ in range(5):
            (h * 1.0).sum().backward(retain_graph=True)

    _together(work)
    assert h.grad.numpy().min() == h.grad.numpy().max() == 4 * 5
    assert w.grad.numpy().min() == w.grad.numpy().max() == 4 * 5


def test_a_graph_freed_by_another_threads_backward_midway_says_so():
    # A's backward pauses in a hook; B's goes through the shared part and frees it
    w = ember.ones(3, dtype=ember.float64, requires_grad=True)
    shared = (w * 3).exp()
    mid_a = shared * 1
    out_a, out_b = mid_a.sum(), (shared * 2).sum()

    def a(e1, e2):
        def pause(g):
            e1.set()
            e2.wait(TIMEOUT)
        mid_a.register_hook(pause)
        with pytest.raises(ember.errors.GradError, match="a second time"):
            out_a.backward()

    def b(e1, e2):
        e1.wait(TIMEOUT)
        try:
            out_b.backward()
        finally:
            e2.set()

    _two(a, b)
    np.testing.assert_allclose(w.grad.numpy(), 6 * np.exp(3.0))


@pytest.mark.parametrize("hooks", [False, True])
def test_training_in_threads_equals_training_in_turn(hooks):
    def train(seed):
        g = np.random.RandomState(seed)
        w = ember.tensor(g.randn(4, 1), requires_grad=True)
        x, y = ember.tensor(g.randn(8, 4)), ember.tensor(g.randn(8, 1))
        opt = ember.optim.SGD([w], lr=0.1)
        for _ in range(10):
            opt.zero_grad()
            if hooks:
                with ember.autograd.graph.save_on_cpu():
                    loss = ((x @ w).tanh() - y).pow(2).mean()
            else:
                loss = ((x @ w).tanh() - y).pow(2).mean()
            loss.backward()
            opt.step()
        return w.detach().numpy()

    alone = [train(s) for s in range(3)]
    together = [None] * 3
    threads = [threading.Thread(target=lambda s=s: together.__setitem__(s, train(s)))
               for s in range(3)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(TIMEOUT * 3)
    for a, b in zip(alone, together):
        np.testing.assert_array_equal(a, b)


def test_set_multithreading_enabled_is_a_per_thread_switch_as_in_pytorch():
    flag = ember.autograd.is_multithreading_enabled
    assert flag()
    with ember.autograd.set_multithreading_enabled(False):
        assert not flag() and _in_thread(flag)
    assert flag()
    ember.autograd.set_multithreading_enabled(False)  # called: switches at once
    try:
        assert not flag()
    finally:
        ember.autograd.set_multithreading_enabled(True)

    @ember.autograd.set_multithreading_enabled(False)
    def inside():
        return flag()

    assert flag() and not inside() and flag()
