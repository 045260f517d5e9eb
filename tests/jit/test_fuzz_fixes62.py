"""What a differential fuzz of ``ember.jit.compile`` against eager found (sweep62g)."""

from __future__ import annotations

import numpy as np

import ember


def test_a_write_into_an_empty_view_leaves_earlier_views_readable():
    # x[1:] of a one-row x is empty: writing it changes no memory, so v (stale since the
    # write through x.t(), made again from x's variable) is still readable; the trace raised
    def f(x):
        v = x.t()
        x.t().add_(1)
        x[1:].sub_(0.5)
        return v * 1

    fast = ember.jit.compile(f)
    for rows in (1, 2, 1):
        want, got = f(ember.ones(rows, 3)), fast(ember.ones(rows, 3))
        np.testing.assert_array_equal(got.numpy(), want.numpy())


def test_the_transpose_of_a_0d_tensor_compiles_with_simplify_off():
    # x.t() of a 0-d x is a permute with no dims; the layout pass read its last one
    fast = ember.jit.compile(lambda x: x.t() * 2, passes={"simplify": False})
    assert fast(ember.tensor(3.0)).item() == 6.0
