"""Two tensors a compiled function reaches where one views the other (``V = U[1]``, both
captured): a write into either is seen through the other, as in eager code. The graph read
``V`` as state of its own at the start of the call, so after ``U.add_(1)`` it gave ``V``'s
value from before the write (1, 1, 2 where eager gives 1, 2, 3); likewise through
``T.data = V``."""

from __future__ import annotations

import functools

import pytest
from tests.jit.helpers import eager_then_compiled

import ember

CALLS = 3


def _base_written_view_read(s, x):
    s["U"].add_(1.0)
    return x * s["V"]


def _view_read_base_written_view_read(s, x):
    y = x * s["V"]
    s["U"].mul_(2.0)
    return y + s["V"]


def _view_written_base_read(s, x):
    s["V"].add_(1.0)
    return x * s["U"][1]


def _data_set_view_written_base_read(s, x):
    s["T"].data = s["V"]
    s["T"].add_(1.0)
    return x * s["U"][1]


def _data_set_view_base_written(s, x):
    s["T"].data = s["V"]
    s["U"].add_(1.0)
    return x * s["T"]


@pytest.mark.parametrize("body", [_base_written_view_read, _view_read_base_written_view_read,
                                  _view_written_base_read, _data_set_view_written_base_read,
                                  _data_set_view_base_written])
def test_state_that_views_other_state_matches_eager(body):
    def make():
        U = ember.ones(2, 3)
        held = {"T": ember.zeros(3), "U": U, "V": U[1]}
        return functools.partial(body, held), lambda out: (out.tolist(), U.tolist())

    eager, compiled, f = eager_then_compiled(make, CALLS)
    assert compiled == eager
    of_state = body in (_data_set_view_written_base_read, _data_set_view_base_written)
    assert (f.last.eager or "").startswith("runs eagerly: it sets .data") == of_state
