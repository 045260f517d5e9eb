"""Divergences from PyTorch found by the autograd API sweep, each checked against torch."""

import numpy as np
import pytest
import torch

import ember


def _run_both(fn):
    """``fn(lib)`` for torch and ember, as lists of NumPy arrays (None kept)."""
    def arrays(out):
        return [None if o is None else np.asarray(o.detach().numpy()) for o in out]
    return arrays(fn(torch)), arrays(fn(ember))


def _assert_same(fn):
    expected, got = _run_both(fn)
    assert len(expected) == len(got)
    for t, e in zip(expected, got):
        if t is None:
            assert e is None
        else:
            np.testing.assert_allclose(e, t, rtol=1e-6, atol=1e-12)


def test_inplace_on_a_view_of_a_dual_keeps_the_rest_of_its_tangent():
    def fn(lib):
        fw = lib.autograd.forward_ad
        with fw.dual_level():
            x = lib.arange(4.0).reshape(2, 2)
            d = fw.make_dual(x, lib.ones(2, 2))
            d[0].mul_(10)
            d[1].copy_(fw.make_dual(lib.zeros(2), lib.full((2,), 5.0)))
            return [fw.unpack_dual(d).tangent, fw.unpack_dual(d * 2).tangent]
    _assert_same(fn)


def test_the_primal_of_a_dual_gets_no_tangent_from_writes_through_the_dual():
    def fn(lib):
        fw = lib.autograd.forward_ad
        with fw.dual_level():
            x = lib.ones(2, 3, dtype=lib.float64)
            d = fw.make_dual(x, lib.full((2, 3), 2.0, dtype=lib.float64))
            d[0].mul_(3)
            d.t()[1:].add_(fw.make_dual(lib.ones(2, 2, dtype=lib.float64),
                                        lib.ones(2, 2, dtype=lib.float64)))
            x.add_(1)
            return [fw.unpack_dual(x * 3).tangent, *fw.unpack_dual(d)]
    _assert_same(fn)


def test_writing_the_primal_of_a_dual_keeps_its_tangent():
    def fn(lib):
        fw = lib.autograd.forward_ad
        with fw.dual_level():
            x = lib.arange(4.0).reshape(2, 2)
            d = fw.make_dual(x, lib.ones(2, 2))
            x[1].mul_(3)
            return list(fw.unpack_dual(d))
    _assert_same(fn)


def _wrong_jvp(lib):
    """Doubles; its backward is right, its jvp triples."""
    class Double(lib.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            return x * 2

        @staticmethod
        def backward(ctx, g):
            return g * 2

        @staticmethod
        def jvp(ctx, t):
            return t * 3
    return Double


@pytest.mark.parametrize("options", [
    {"check_forward_ad": True}, {"check_forward_ad": True, "check_backward_ad": False},
    {"check_batched_grad": True}, {"check_grad_dtypes": True}, {"nondet_tol": 1e-8},
    {"fast_mode": True}, {"check_undefined_grad": False}, {"masked": False}])
def test_gradcheck_takes_torchs_options(options):
    def check(lib, f):
        x = lib.tensor([0.3, -1.2, 2.0], dtype=lib.float64, requires_grad=True)
        y = lib.tensor([1.5, 0.5, -0.7], dtype=lib.float64, requires_grad=True)
        return lib.autograd.gradcheck(f(lib), (x, y), raise_exception=False, **options)
    right = lambda lib: lambda x, y: (x.sin() * y, (x * y).sum())  # noqa: E731
    assert check(ember, right) is check(torch, right) is True
    wrong = lambda lib: lambda x, y: _wrong_jvp(lib).apply(x) * y  # noqa: E731
    assert check(ember, wrong) is check(torch, wrong)


@pytest.mark.parametrize("options", [
    {"check_fwd_over_rev": True}, {"check_batched_grad": True},
    {"gen_non_contig_grad_outputs": True}, {"nondet_tol": 1e-8}, {"fast_mode": True}])
def test_gradgradcheck_takes_torchs_options(options):
    def check(lib):
        x = lib.tensor([0.3, -1.2, 2.0], dtype=lib.float64, requires_grad=True)
        return lib.autograd.gradgradcheck(lambda x: (x.sin() * x, x.exp().sum()), (x,),
                                          **options)
    assert check(ember) is check(torch) is True


def _function(lib, backward):
    """x * k (k a float) with the given backward; forward keeps x and k on the ctx."""
    class Scale(lib.autograd.Function):
        @staticmethod
        def forward(ctx, x, k):
            ctx.k = k
            ctx.save_for_backward(x)
            return x * k

    Scale.backward = staticmethod(backward)
    return Scale


def test_a_backward_returning_a_broadcast_gradient_is_summed_to_the_input():
    def fn(lib):
        f = _function(lib, lambda ctx, g: (g.expand(2, 3) * ctx.k, None))
        x = lib.tensor([1.0, 2.0, 3.0], dtype=lib.float64, requires_grad=True)
        f.apply(x, 2.0).sum().backward()
        return [x.grad]
    _assert_same(fn)


@pytest.mark.parametrize("lib", [torch, ember])
def test_a_backward_returning_a_gradient_of_another_shape_is_refused(lib):
    f = _function(lib, lambda ctx, g: (lib.ones(4, dtype=lib.float64), None))
    x = lib.tensor([1.0, 2.0, 3.0], dtype=lib.float64, requires_grad=True)
    with pytest.raises((RuntimeError, ember.errors.ShapeError), match=r"shape"):
        f.apply(x, 2.0).sum().backward()


def test_a_gradient_for_a_non_tensor_argument_is_refused():
    for lib in (torch, ember):
        f = _function(lib, lambda ctx, g: (g * ctx.k, g))
        x = lib.tensor([1.0, 2.0], dtype=lib.float64, requires_grad=True)
        with pytest.raises(RuntimeError, match="not a (Variable|tensor)"):
            f.apply(x, 2.0).sum().backward()


def test_save_for_backward_refuses_a_non_tensor_clearly():
    for lib in (torch, ember):
        class Bad(lib.autograd.Function):
            @staticmethod
            def forward(ctx, x):
                ctx.save_for_backward(x, 3)
                return x * 2

            @staticmethod
            def backward(ctx, g):
                return g * 2
        with pytest.raises(TypeError, match="argument 1"):
            Bad.apply(lib.ones(2, requires_grad=True))


def test_a_functions_grad_fn_reads_its_ctx_and_every_node_has_metadata():
    def fn(lib):
        f = _function(lib, lambda ctx, g: (g * ctx.k, None))
        x = lib.tensor([1.0, 2.0], dtype=lib.float64, requires_grad=True)
        y = f.apply(x, 3.0)
        y.grad_fn.metadata["tag"] = 1
        z = y * 2
        assert y.grad_fn.k == 3.0
        assert y.grad_fn.metadata == {"tag": 1} and z.grad_fn.metadata == {}
        return [*y.grad_fn.saved_tensors]
    _assert_same(fn)


def test_a_dirty_functions_jvp_gets_the_tangent_its_input_had():
    def fn(lib):
        class Double_(lib.autograd.Function):
            @staticmethod
            def forward(ctx, x):
                ctx.mark_dirty(x)
                return x.mul_(2)

            @staticmethod
            def backward(ctx, g):
                return g * 2

            @staticmethod
            def jvp(ctx, t):
                return t.mul_(2)
        fw = lib.autograd.forward_ad
        with fw.dual_level():
            d = fw.make_dual(lib.tensor([1.0, 2.0], dtype=lib.float64),
                             lib.tensor([1.0, -3.0], dtype=lib.float64)) * 1
            y = Double_.apply(d)
            return [*fw.unpack_dual(y), fw.unpack_dual(d).tangent]
    _assert_same(fn)


def _exp_function(lib):
    class Exp(lib.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            r = x.exp()
            ctx.save_for_backward(x, r)
            return r

        @staticmethod
        def backward(ctx, g):
            x, r = ctx.saved_tensors
            return g * r * (x == x)
    return Exp


def test_saved_tensors_hooks_see_what_a_function_saves():
    def fn(lib):
        seen = []
        x = lib.tensor([0.5, 1.5], dtype=lib.float64, requires_grad=True)
        h = x.sin()
        with lib.autograd.graph.saved_tensors_hooks(lambda t: seen.append(t.clone()) or t,
                                                    lambda t: t * 1):
            y = _exp_function(lib).apply(h)
        (g,) = lib.autograd.grad(y.sum(), x, create_graph=True)
        return [*seen, g, *lib.autograd.grad(g.sum(), x)]
    _assert_same(fn)


def test_a_function_saving_in_a_checkpoint_is_recomputed_and_checked_for_writes():
    x = ember.tensor([0.5, 1.5], dtype=ember.float64, requires_grad=True)
    exp = _exp_function(ember)
    y = ember.utils.checkpoint.checkpoint(lambda a: exp.apply(a.sin()), x, use_reentrant=False)
    ctx = y.grad_fn
    assert ctx._saved == ()  # kept by the checkpoint's hooks (recomputed), not by the ctx
    y.sum().backward()
    np.testing.assert_allclose(x.grad.numpy(), np.exp(np.sin([0.5, 1.5])) * np.cos([0.5, 1.5]))
    h = x * 2
    with ember.autograd.graph.saved_tensors_hooks(lambda t: t, lambda t: t):
        y = exp.apply(h)
    h.add_(1)
    with pytest.raises(RuntimeError, match="modified in place"):
        y.sum().backward()


def test_unpack_duals_primal_carries_no_tangent():
    # the primal is a view of the dual's memory; it took the dual's tangent, so an op on it
    # and the dual counted the tangent twice (18, 36 for 9, 18)
    def fn(lib):
        fw = lib.autograd.forward_ad
        with fw.dual_level():
            x = fw.make_dual(lib.tensor([1.0, 2.0], dtype=lib.float64),
                             lib.tensor([1.0, 1.0], dtype=lib.float64))
            y = x * 3
            p = fw.unpack_dual(y).primal
            q = fw.unpack_dual(x).primal
            return [fw.unpack_dual(p * y).tangent, fw.unpack_dual(q * x).tangent,
                    fw.unpack_dual(p).tangent]
    expected, got = _run_both(fn)
    assert got[2] is None and expected[2] is None
    for e, g in zip(expected[:2], got[:2], strict=True):
        np.testing.assert_allclose(g, e)


def test_views_of_unpack_duals_primal_carry_no_tangent():
    # a view of the primal took the dual's tangent through the memory's owner (a silently
    # wrong derivative); the dual's own views keep theirs
    def fn(lib):
        fw = lib.autograd.forward_ad
        out = []
        with fw.dual_level():
            x = fw.make_dual(lib.tensor([1.0, 2.0, 3.0], dtype=lib.float64),
                             lib.tensor([1.0, 1.0, 1.0], dtype=lib.float64))
            y = x * 3
            p, q = fw.unpack_dual(y).primal, fw.unpack_dual(x).primal
            for v in (p[0], p.view(3, 1), p[1:], q[0], q.view(1, 3)):
                out.append(fw.unpack_dual(v).tangent)
            out += [fw.unpack_dual(p[1:] * y[1:]).tangent, fw.unpack_dual(y[0:2]).tangent,
                    fw.unpack_dual(x[1:]).tangent]
        return out
    expected, got = _run_both(fn)
    assert got[:5] == expected[:5] == [None] * 5
    for e, g in zip(expected[5:], got[5:], strict=True):
        np.testing.assert_allclose(g, e)
