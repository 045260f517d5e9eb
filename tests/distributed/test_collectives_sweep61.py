"""What sweep61b found in the collectives (2 ranks, against torch 2.13's gloo): a collective
whose result tensor is read-only (an expand() view) raised NumPy's "assignment destination is
read-only"; it now says what and why, and the ranks stay in step."""

from tests.distributed.harness import needs_mpi, reports, run_ranks

pytestmark = needs_mpi

CODE = """
import ember
import ember.distributed as dist
from tests.distributed.harness import report

dist.init_process_group("mpi")
rank = dist.get_rank()


def attempt(fn):
    try:
        fn()
        return "ok"
    except ValueError as exc:
        return [type(exc).__name__, "expand()" in str(exc) and "clone()" in str(exc),
                "assignment destination" in str(exc)]


report(attempt(lambda: dist.broadcast(ember.ones(1).expand(3), src=0)))
report(attempt(lambda: dist.all_reduce(ember.ones(1).expand(3))))
outs = [ember.zeros(1).expand(2), ember.zeros(2)]
report(attempt(lambda: dist.all_gather(outs, ember.ones(2))))
t = ember.ones(2) * (rank + 1)
dist.all_reduce(t)                  # the ranks are still in step
report(t.tolist())
"""


def test_a_read_only_result_tensor_gets_a_clear_error():
    done = run_ranks(CODE, 2, timeout=60)
    refused = ["ArgumentError", True, False]
    assert reports(done) == {r: [refused, refused, refused, [3.0, 3.0]] for r in range(2)}


def test_only_read_only_memory_is_reported_as_read_only():
    # (a size mismatch is the caller's bug, not read-only memory: it keeps NumPy's error)
    import numpy as np
    import pytest

    import ember
    from ember.distributed.buffers import write

    t = ember.zeros(2, 3)
    with pytest.raises(ValueError, match="cannot reshape"):
        write(t, np.ones(5, np.float32))
    with pytest.raises(ValueError, match="read-only"):
        write(ember.zeros(3).expand(2, 3), np.ones(6, np.float32))
