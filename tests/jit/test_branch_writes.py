"""A branch of ``ember.cond`` that makes a tensor and writes it in place computes what eager
does (the branch graph held the tensor's memory as its constant, so the traced write and the
replayed one both landed: ``zeros(3).add_(1)`` gave 2); one that writes into memory from
outside it (``ember.from_numpy(G)`` of a global array) is refused, as PyTorch refuses a
branch's side effects (the branch is traced once: the array moved once)."""

from __future__ import annotations

import numpy as np
import pytest
from tests.jit.helpers import counts_into

import ember
from ember import jit
from ember.errors import OpError


def _other(x):
    return x.clone()


def _made(x):
    b = ember.zeros(3)
    b.add_(1.0)
    return x * b


def _local_array(x):
    b = ember.from_numpy(np.zeros(3, dtype=np.float32))
    b.add_(1.0)
    return x * b


def _through_views(x):
    b = ember.zeros(2, 3)
    b[0].add_(2.0)
    y = x * b[0]
    b.mul_(3.0)
    return y + b[0]


@pytest.mark.parametrize("branch", [_made, _local_array, _through_views])
def test_branch_that_writes_what_it_makes_matches_eager(branch):
    x = ember.arange(3.0)
    want = branch(x).tolist()
    assert ember.cond(ember.tensor(True), branch, _other, (x,)).tolist() == want
    compiled = jit.compile(lambda x: ember.cond(x.sum() > 0, branch, _other, (x,)))
    assert [compiled(x).tolist() for _ in range(3)] == [want] * 3


MEMORY = np.zeros(3, dtype=np.float32)


def _writes_global(x):
    return counts_into(MEMORY, x)


def test_branch_writing_memory_from_outside_is_refused():
    with pytest.raises(OpError, match=r"cond: true_fn writes in place into a tensor it makes "
                                      r"over memory that outlives the call.*Hint"):
        ember.cond(ember.tensor(True), _writes_global, _other, (ember.ones(3),))
