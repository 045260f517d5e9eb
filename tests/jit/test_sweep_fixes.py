"""Regressions found by the compiled-vs-eager differential sweep (/work/fuzz/jit_sweep)."""

import numpy as np
import pytest

import ember


def test_differentiable_call_returning_only_views_of_its_argument():
    # (no output of the graph's own: the call made an autograd node with no outputs, which
    # raised "TracedCall.forward must return a tensor")
    f = ember.jit.compile(lambda x: (x[0], x.t()))
    for _ in range(3):
        x = ember.randn(3, 4, requires_grad=True)
        row, t = f(x)
        assert row.grad_fn is not None and np.shares_memory(t._data, x._data)
        (row.sum() + 2 * t.sum()).backward()
        np.testing.assert_array_equal(x.grad.numpy()[0], np.full(4, 3.0, np.float32))
        np.testing.assert_array_equal(x.grad.numpy()[1:], np.full((2, 4), 2.0, np.float32))


def test_enable_grad_inside_a_call_under_no_grad_keeps_the_outputs_differentiable():
    def f(x):
        y = x * 2
        with ember.enable_grad():
            z = x * 3
        return y, z

    fast = ember.jit.compile(f)
    x = ember.randn(3, requires_grad=True)
    for calls in range(1, 4):
        with ember.no_grad():
            y, z = fast(x)
        assert not y.requires_grad and z.requires_grad  # as eager's
        z.sum().backward()
        np.testing.assert_array_equal(x.grad.numpy(), np.full(3, 3.0 * calls, np.float32))


def test_a_step_with_backward_inside_returns_the_same_kind_of_loss_on_every_call():
    model = ember.nn.Linear(4, 2)
    opt = ember.optim.SGD(model.parameters(), lr=0.1)

    @ember.jit.compile
    def step(x):
        loss = model(x).square().mean()
        loss.backward()
        opt.step()
        opt.zero_grad()
        return loss, x

    x = ember.randn(5, 4)

    @ember.jit.compile
    def twice(x):
        loss = model(x).sum()
        loss.backward()
        return loss, loss

    for _ in range(2):  # (the same tensor returned twice stays one tensor)
        loss, again = twice(x)
        assert loss is again and not loss.requires_grad
    kinds = []
    for _ in range(3):
        loss, same = step(x)
        kinds.append((loss.requires_grad, loss.grad_fn is None, same is x))
    assert kinds == [(False, True, True)] * 3  # (the trace's loss was eager's, with history)


def test_element_write_into_a_clone_keeps_the_clones_layout():
    # (index_put's copy was row-major: a clone of a transposed argument, written into, came
    # back transposed from the trace and row-major from later calls)
    def f(x):
        y = x.clone()
        y[0] = 2.5
        y[1:, ::2] = x[1:, ::2] * 2
        return y

    fast = ember.jit.compile(f)
    x = ember.from_numpy(np.arange(12, dtype=np.float32).reshape(4, 3).T)
    for _ in range(3):
        with ember.no_grad():
            want, got = f(x), fast(x)
        assert got.stride() == want.stride() == (1, 3)
        np.testing.assert_array_equal(got.numpy(), want.numpy())


def test_write_needing_grad_through_a_view_of_an_argument_that_views_the_callers_tensor():
    # (eager's autograd read the caller's base while writing: the trace met it as a constant
    # and dropped the write, so later calls left `base` untouched; a silent wrong answer)
    def step(x, y):
        x[1:].copy_(y * 2)
        (y * y).sum().backward()
        return x.sum()

    fast = ember.jit.compile(step)
    for call in range(1, 4):
        results = []
        for f in (step, fast):
            base = ember.zeros(4, 4)
            y = ember.full((2, 4), float(call), requires_grad=True)
            total = f(base[:3], y)
            results.append((base.detach().numpy().copy(), float(total), y.grad.numpy().copy()))
        (want_base, want_total, want_grad), (got_base, got_total, got_grad) = results
        np.testing.assert_array_equal(got_base, want_base)
        assert got_total == want_total == 16.0 * call
        np.testing.assert_array_equal(got_grad, want_grad)


def test_an_argument_returned_beside_a_view_of_a_value_not_returned_is_the_argument():
    # (a view of an unreturned value made the call wrap every output afresh: later calls
    # returned a copy of x instead of x, so writing into it no longer changed x)
    def f(x, y):
        d = y - x
        return d[1], x, x[:, 1:]

    fast = ember.jit.compile(f)
    for _ in range(3):
        base = ember.zeros(4, 4)
        x = base[:3]
        with ember.no_grad():
            row, same, cols = fast(x, ember.ones(3, 4))
        assert same is x and np.shares_memory(cols._data, base._data)
        assert row._base is not None and row.tolist() == [1.0] * 4
        cols.fill_(5.0)
        assert float(base[:3, 1:].sum()) == 45.0


def test_writing_a_number_through_a_bool_mask_compiles_as_where():
    # (x[mask] = v went through nonzero, whose size depends on the data: a TraceError)
    def f(x, v):
        y = x * 1
        y[x > 0] = v
        y[y[:, 0] < -0.5] = -1.0
        return y.sum(), y

    fast = ember.jit.compile(f)
    for seed in range(3):
        x = ember.from_numpy(np.random.default_rng(seed).standard_normal((4, 3), np.float32))
        results = []
        for fn in (f, fast):
            v = ember.tensor(2.0, requires_grad=True)
            total, y = fn(x, v)
            total.backward()
            results.append((y.detach().numpy(), float(v.grad)))
        np.testing.assert_array_equal(results[1][0], results[0][0])
        assert results[1][1] == results[0][1]


def test_einsum_of_one_operand_owns_its_memory_eagerly_and_compiled():
    # (NumPy's einsum returned 'ii->i' and 'ij->ji' as writable views of the operand: eager's
    # result shared x's memory behind autograd's back, later compiled calls did not)
    fast = ember.jit.compile(lambda x, eq: ember.einsum(eq, x), static_argnums=(1,))
    for equation in ("ii->i", "ij->ji", "ij"):
        for fn in (ember.einsum, lambda eq, x: fast(x, eq), lambda eq, x: fast(x, eq)):
            x = ember.arange(9.0).reshape(3, 3)
            out = fn(equation, x)
            out.add_(100.0)
            assert float(x.sum()) == 36.0 and not np.shares_memory(out._data, x._data)


def test_fused_kernel_over_a_transposed_operand_and_a_broadcast_one_keeps_eagers_layout():
    # (the kernel wrote in the transposed operand's layout; NumPy orders that result by the
    # broadcast operand's strides too: cosine_similarity of a transposed input came back
    # with other strides than eager's)
    fast = ember.jit.compile(lambda a, b: (a * 2 + 1) / (b + 3))
    a = ember.from_numpy(np.random.default_rng(0).random((4, 3, 2), np.float32).T)
    x = ember.from_numpy(np.random.default_rng(1).random((2, 5, 6, 3), np.float32)
                         .transpose(0, 3, 1, 2))  # channels-last
    for first, second in [(a, ember.ones(2, 3, 1)), (x, ember.ones(1, 3, 1, 1))]:
        for _ in range(2):
            with ember.no_grad():
                want, got = (first * 2 + 1) / (second + 3), fast(first, second)
            assert got.stride() == want.stride()
            np.testing.assert_array_equal(got.numpy(), want.numpy())


def test_filling_an_argument_twice_with_one_value_traces():
    # (the second fill's value, an expand of the same small constant, was marked stale by
    # its own write: a TraceError 'a view is read after an in-place write')
    def f(x, y):
        y.fill_(0.25)
        y.fill_(0.25)
        x.copy_(x.t().t() * 2)
        return x, y

    fast = ember.jit.compile(f)
    for _ in range(2):
        x, y = ember.ones(3, 4), ember.zeros(3, 4)
        with ember.no_grad():
            a, b = fast(x, y)
        assert a is x and b is y
        assert x.tolist() == [[2.0] * 4] * 3 and y.tolist() == [[0.25] * 4] * 3


@pytest.mark.parametrize("fn", [
    lambda a, b: (a * 2 + b) * b, lambda a, b: ((a - b) * a).sum(-1),
    lambda a, b: (b + a).exp() * a, lambda a, b: ember.where(b > 0.5, a, -a) + b,
    lambda a, b: ember.where(a > 0.5, a * b, b - 1), lambda a, b: (a * b).relu() + a])
def test_fused_kernels_over_operands_in_different_layouts_keep_eagers_layout(fn):
    # (eager orders such results as torch, by the first operand that tells two dims apart;
    # the kernels' fallback made NumPy's C order, and a sum after it added in another order)
    rng = np.random.default_rng(0)
    c = ember.from_numpy(rng.random((2, 3, 4, 5), np.float32))
    cl = c.contiguous(memory_format=ember.channels_last) * 1.5
    t = ember.from_numpy(rng.random((2, 3, 5, 4), np.float32)).transpose(2, 3)
    bias = ember.from_numpy(rng.random((1, 3, 5, 4), np.float32)).transpose(2, 3)
    fast = ember.jit.compile(fn)
    for first, second in [(cl, c), (c, cl), (t, cl), (cl, bias), (bias, t), (c, bias)]:
        for _ in range(2):
            with ember.no_grad():
                want, got = fn(first, second), fast(first, second)
            assert got.stride() == want.stride()
            assert got.numpy().tobytes() == want.numpy().tobytes()
