"""Wrong answers a differential fuzz of ``ember.jit.compile`` against eager found (jit48)."""

from __future__ import annotations

import numpy as np

import ember


def test_a_new_layout_of_an_argument_traces_again():
    # traced on a transposed x, contiguous() copies it; a row-major x is its own contiguous()
    # in eager code, so the write into x shows in t: the old graph would return the copy
    def f(x):
        t = x.contiguous()
        x.zero_()
        return t

    fast = ember.jit.compile(f)
    with ember.no_grad():
        fast(ember.randn(4, 3).t())
        x = ember.randn(3, 4)
        out = fast(x)
    assert out is x or np.shares_memory(out.numpy(), x.numpy())
    assert (out == 0).all().item()
    assert "argument x: layout strides (1, 3) -> row-major" in ember.jit.explain()[-1]


def test_reshape_of_a_row_major_argument_is_its_view_after_a_transposed_trace():
    fast = ember.jit.compile(lambda x: x.reshape(-1))
    with ember.no_grad():
        fast(ember.randn(4, 3).t())
        x = ember.randn(3, 4)
        out = fast(x)
        out.add_(1)
    assert np.shares_memory(out.numpy(), x.numpy())
    np.testing.assert_array_equal(x.reshape(-1).numpy(), out.numpy())


def test_size_one_dimensions_strides_do_not_trace_again():
    fast = ember.jit.compile(lambda x: x * 2)
    fast(ember.randn(3, 1))
    fast(ember.randn(1, 3).t())  # (the same layout: a size-1 dimension's stride is any)
    assert fast.traces == 1


W = ember.randn(3, 3)


def test_a_reached_tensor_given_another_layout_traces_again():
    # `W.data = ` a transposed array of the same shape: reshape copies it, where it viewed the
    # row-major one, so the write into W after it no longer shows in v (eager's answer)
    def f(x):
        v = W.reshape(-1)
        W.add_(1)
        return v + x

    fast = ember.jit.compile(f)
    x = ember.zeros(9)
    with ember.no_grad():
        fast(x)
        base = ember.randn(3, 3)
        W.data = base.t().contiguous().t()
        out = fast(x)
    np.testing.assert_allclose(out.numpy(), base.reshape(-1).numpy())
    assert ember.jit.explain()[-1] == "f: traced again: W: layout row-major -> strides (1, 3)"


def test_an_output_viewing_another_still_does_beside_a_view_of_a_value_not_returned():
    # t5 views t4, which the function does not return: the graph returns the outputs as they
    # come, and each later call copied t3, eager's view of t1, as if the passes had made it
    def f(x0, x1):
        t1 = ember.cat([x1, x0], dim=0)
        t3 = t1.reshape(-1)
        t4 = x1 * 1.5
        t5 = t4[0]
        t4[-1:].copy_(ember.ones_like(t4[-1:]))
        return t5, t3, t1

    fast = ember.jit.compile(f)
    with ember.no_grad():
        for _ in range(3):
            t5, t3, t1 = fast(ember.randn(3, 4), ember.randn(3, 4))
            t3[0] = 7.0
            assert t1[0, 0].item() == 7.0
            assert not np.shares_memory(t5.numpy(), t1.numpy())


def test_equal_outputs_the_passes_merged_stay_two_arrays():
    fast = ember.jit.compile(lambda x: (x * 2, x * 2))
    with ember.no_grad():
        for _ in range(2):
            a, b = fast(ember.ones(3))
            a.add_(1)
            assert b.tolist() == [2.0, 2.0, 2.0]


def test_an_output_viewing_another_shares_its_version_counter():
    def f(x0, x1):
        t1 = ember.cat([x1, x0], dim=0)
        t4 = x1 * 1.5
        t4[-1:].zero_()
        return t4[0], t1.reshape(-1), t1

    fast = ember.jit.compile(f)
    with ember.no_grad():
        for _ in range(2):
            _, t3, t1 = fast(ember.randn(3, 4), ember.randn(3, 4))
            version = t1._version
            t3.add_(1)
            assert t1._version > version
