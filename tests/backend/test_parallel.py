"""Independent pieces of a computation spread over the BLAS thread count."""

import threading

import numpy as np
import pytest

import ember
from ember.backend import parallel


def test_every_piece_runs_once_on_as_many_threads_as_blas_has():
    ember.set_num_threads(2)
    out = np.zeros(10)
    names = set()

    def piece(i):
        names.add(threading.current_thread().name)
        out[i] += i

    parallel.run([lambda i=i: piece(i) for i in range(10)])
    np.testing.assert_array_equal(out, np.arange(10))
    assert len(names) == 2


def test_one_thread_runs_everything_in_the_caller():
    ember.set_num_threads(1)
    try:
        names = set()
        parallel.run([lambda: names.add(threading.current_thread().name)] * 4)
        assert names == {threading.current_thread().name}
    finally:
        ember.set_num_threads(2)


def test_an_exception_in_a_piece_is_raised_after_all_finish():
    ember.set_num_threads(2)
    done = []

    def fail():
        raise ValueError("piece 3 failed")

    pieces = [lambda: done.append(0), lambda: done.append(1), lambda: done.append(2), fail]
    with pytest.raises(ValueError, match="piece 3 failed"):
        parallel.run(pieces)
    assert sorted(done) == [0, 1, 2]
