"""Independent pieces of a computation spread over the BLAS thread count."""

import os
import threading
import time

import numpy as np
import pytest
import torch

import ember
from ember.backend import parallel
from tests.backend.forked import in_forked_child

pytestmark = pytest.mark.usefixtures("threads_restored")  # they set 1, 2 or 4


def test_every_piece_runs_once_on_as_many_threads_as_blas_has():
    ember.set_num_threads(2)
    out = np.zeros(10)
    names = set()
    both = threading.Barrier(2, timeout=30)

    def piece(i):
        name = threading.current_thread().name
        if name not in names:  # each thread's first piece waits until the other has one
            names.add(name)
            both.wait()
        out[i] += i

    parallel.run([lambda i=i: piece(i) for i in range(10)])
    np.testing.assert_array_equal(out, np.arange(10))
    assert len(names) == 2


def test_the_caller_runs_the_pieces_a_busy_pool_thread_does_not_take():
    ember.set_num_threads(2)
    parallel.run([lambda: None] * 2)  # (the pool exists)
    release, busy = threading.Event(), threading.Event()
    parallel._pool[0].submit(lambda: busy.set() or release.wait(30))
    busy.wait(30)
    try:
        names = []
        parallel.run([lambda: names.append(threading.current_thread().name)] * 4)
        assert names == [threading.current_thread().name] * 4  # not waiting for the pool
    finally:
        release.set()


def test_one_piece_runs_in_the_caller_without_the_queue(monkeypatch):
    """Every caller (erf's blocks, conv, batch norm, spmm...) that hands over one piece
    skips the queue and its lock (~3 µs); an error comes out as it would."""
    ember.set_num_threads(2)

    def no_queue(pieces):
        raise AssertionError("one piece went through the queue")

    monkeypatch.setattr(parallel, "_Queue", no_queue)
    names = []
    parallel.run([lambda: names.append(threading.current_thread().name)])
    assert names == [threading.current_thread().name]
    with pytest.raises(ZeroDivisionError):
        parallel.run([lambda: 1 / 0])
    x = ember.linspace(-0.99, 0.99, 1000)
    np.testing.assert_allclose(ember.special.erfinv(x).numpy(), torch.special.erfinv(
        torch.from_numpy(x.numpy())).numpy(), rtol=1e-6, atol=1e-7)


def test_no_pieces_is_nothing_to_run():
    ember.set_num_threads(2)
    parallel.run([])


def test_one_thread_runs_everything_in_the_caller():
    ember.set_num_threads(1)
    try:
        names = set()
        parallel.run([lambda: names.add(threading.current_thread().name)] * 4)
        assert names == {threading.current_thread().name}
    finally:
        ember.set_num_threads(2)


@pytest.mark.parametrize("n", [2, 4])
def test_an_exception_in_a_piece_is_raised_after_all_finish(n):
    ember.set_num_threads(n)
    done = []

    def fail():
        raise ValueError("piece 1 failed")

    def slow(i):
        time.sleep(0.05)
        done.append(i)

    pieces = [lambda: done.append(0), fail, *(lambda i=i: slow(i) for i in range(2, 8))]
    try:
        with pytest.raises(ValueError, match="piece 1 failed"):
            parallel.run(pieces)
        # the pieces that had started had finished (nothing runs on after run raised), and
        # those not started by the failure were skipped: each thread started at most one
        # slow piece and piece 0
        finished = len(done)
        time.sleep(0.1)
        assert len(done) == finished <= n
    finally:
        ember.set_num_threads(2)


def test_a_piece_may_itself_run_pieces():
    # two nested calls in each share: the second must still run inside its share (a pool
    # worker waiting on the pool would wait forever)
    ember.set_num_threads(2)
    out = np.zeros((4, 4))

    def row(r):
        parallel.run([lambda c=c: out.__setitem__((r, c), r * 4 + c) for c in range(4)])

    parallel.run([lambda r=r: row(r) for r in range(4)])
    np.testing.assert_array_equal(out.ravel(), np.arange(16))


def test_inside_is_true_in_a_piece_of_several_and_false_in_a_lone_piece():
    # a lone piece runs in the caller as plain code (9c2e770e): the pool is free, so what it
    # calls (a matmul, a nested run) may use it; inside a piece of a lone piece of a piece,
    # the outer piece's flag holds
    ember.set_num_threads(2)
    seen = []
    parallel.run([lambda: seen.append(parallel.inside())] * 2)
    parallel.run([lambda: seen.append(parallel.inside())])
    parallel.run([lambda: parallel.run([lambda: seen.append(parallel.inside())]), lambda: None])
    assert seen == [True, True, False, True] and not parallel.inside()


@pytest.mark.skipif(not hasattr(os, "fork"), reason="fork")
def test_a_forked_child_runs_pieces_after_the_parent_did():
    # the child inherits the pool object but not its thread (a DataLoader worker, say)
    ember.set_num_threads(2)
    parallel.run([lambda: None] * 2)

    def child():
        out = []
        parallel.run([lambda: out.append(1)] * 4)
        return out == [1] * 4

    in_forked_child(child, 30)


@pytest.mark.parametrize("n,count", [(10, 3), (2, 2), (7, 1), (3, 4)])
def test_blocks_cover_the_range_in_order_with_near_equal_sizes(n, count):
    found = parallel.blocks(n, count)
    assert len(found) == count and found[0][0] == 0 and found[-1][1] == n
    assert all(a[1] == b[0] for a, b in zip(found, found[1:]))
    sizes = [hi - lo for lo, hi in found]
    assert max(sizes) - min(sizes) <= 1


def test_share_count_gives_each_piece_at_least_its_least():
    saved = ember.get_num_threads()
    ember.set_num_threads(4)
    try:
        assert parallel.share_count(10, 100) == 1  # too little work: the caller alone
        assert parallel.share_count(250, 100) == 2
        assert parallel.share_count(1_000, 100) == 10
        assert parallel.share_count(10_000, 100) == 16  # no more than four per worker
    finally:
        ember.set_num_threads(saved)


@pytest.mark.parametrize("rows,least,calls", [(10, 100, 1), (10, 4, 2), (9, 1, 9), (40, 1, 12)])
def test_over_rows_gives_each_call_a_block_of_every_array(monkeypatch, rows, least, calls):
    monkeypatch.setattr(parallel, "workers", lambda: 3)
    x = np.arange(rows * 2, dtype=np.float64).reshape(rows, 2)
    out = np.zeros_like(x)
    seen = []

    def kernel(a, b, scale):
        seen.append(len(a))
        np.multiply(a, scale, out=b)
    parallel.over_rows(kernel, (x, out), least, 2.0)
    assert len(seen) == calls and sum(seen) == rows
    np.testing.assert_array_equal(out, x * 2)
