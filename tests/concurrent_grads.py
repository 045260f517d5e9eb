"""A test helper: many ``ember.autograd.grad`` calls over one retained graph, from several
threads at once that switch often, each compared with the answer of one call alone."""

import sys
import threading

import numpy as np

import ember


def grads_agree_in_threads(y, params, threads: int = 4, calls: int = 15) -> None:
    """Asserts that ``threads`` threads each computing ``grad(y, params)`` ``calls`` times
    (``retain_graph``) raise nothing and get the gradients one call alone gets."""
    want = [g.numpy().copy() for g in ember.autograd.grad(y, params, retain_graph=True)]
    errors, right = [], []

    def work():
        try:
            for _ in range(calls):
                got = ember.autograd.grad(y, params, retain_graph=True)
                right.append(all(np.allclose(a.numpy(), b) for a, b in zip(got, want)))
        except Exception as e:  # noqa: BLE001 (collected, asserted below)
            errors.append(repr(e))

    previous = sys.getswitchinterval()
    sys.setswitchinterval(1e-6)  # (a switch between any two steps a backward takes)
    try:
        running = [threading.Thread(target=work) for _ in range(threads)]
        for t in running:
            t.start()
        for t in running:
            t.join()
    finally:
        sys.setswitchinterval(previous)
    assert errors == [] and len(right) == threads * calls and all(right)
