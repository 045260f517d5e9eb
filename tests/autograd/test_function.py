"""Custom autograd Functions."""

import weakref

import numpy as np
import pytest
import torch

import ember
from ember.autograd import Function, gradcheck, gradgradcheck, once_differentiable
from ember.errors import GradError
from tests.gc_off import gc_off


class Cube(Function):
    @staticmethod
    def forward(ctx, x, scale):
        ctx.save_for_backward(x)
        ctx.scale = scale
        return x * x * x * scale

    @staticmethod
    def backward(ctx, g):
        (x,) = ctx.saved_tensors
        return g * 3.0 * x * x * ctx.scale, None


class NumpyExp(Function):
    @staticmethod
    def forward(ctx, x):
        out = ember.from_numpy(np.exp(x.detach().numpy()))
        ctx.save_for_backward(out)
        return out

    @staticmethod
    @once_differentiable
    def backward(ctx, g):
        (out,) = ctx.saved_tensors
        return ember.from_numpy(g.detach().numpy() * out.numpy())


class SplitSign(Function):
    """Two outputs, one of them non-differentiable."""

    @staticmethod
    def forward(ctx, x):
        positive = ember.from_numpy((x.detach().numpy() > 0).astype(np.float64))
        ctx.mark_non_differentiable(positive)
        return x * 2.0, positive

    @staticmethod
    def backward(ctx, g, g_positive):
        assert ctx.needs_input_grad == (True,)
        return g * 2.0


def x64(*values):
    return ember.tensor(list(values), dtype=ember.float64, requires_grad=True)


def test_custom_function_gradients_to_second_order():
    x = x64(0.5, -1.0, 2.0)
    assert gradcheck(lambda t: Cube.apply(t, 1.5), (x,))
    assert gradgradcheck(lambda t: Cube.apply(t, 1.5), (x,))


def test_once_differentiable_gives_first_order_and_refuses_second():
    x = x64(0.1, 0.2)
    assert gradcheck(NumpyExp.apply, (x,))
    (g,) = ember.autograd.grad(NumpyExp.apply(x), x, ember.ones(2, dtype=ember.float64),
                               create_graph=True)
    with pytest.raises(GradError, match="once_differentiable"):
        ember.autograd.grad(g, x, ember.ones(2, dtype=ember.float64))


def test_non_differentiable_output_and_needs_input_grad():
    x = x64(-1.0, 3.0)
    doubled, positive = SplitSign.apply(x)
    assert doubled.requires_grad and not positive.requires_grad
    doubled.backward(ember.ones(2, dtype=ember.float64))
    np.testing.assert_allclose(x.grad.numpy(), [2.0, 2.0])
    assert "SplitSignBackward" in repr(doubled)


def test_saved_tensor_modified_in_place_is_reported():
    x = x64(1.0, 2.0)
    h = x * 1.0
    y = Cube.apply(h, 1.0)
    h += 1.0
    with pytest.raises(GradError, match="Cube: saved tensor 0"):
        y.backward(ember.ones(2, dtype=ember.float64))


def test_no_graph_when_no_input_requires_grad():
    out = Cube.apply(ember.ones(2), 2.0)
    assert not out.requires_grad and out.grad_fn is None


def square_in_place(lib, returned=True):
    """x *= x in forward, marked dirty; saves x before the change (torch keeps what forward
    leaves, so backward reads the squared values)."""
    class SquareInPlace(lib.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            ctx.save_for_backward(x)
            x.mul_(x)
            ctx.mark_dirty(x)
            return x if returned else x * 1

        @staticmethod
        def backward(ctx, g):
            (y,) = ctx.saved_tensors
            return 2 * y.sqrt() * g
    return SquareInPlace


@pytest.mark.parametrize("lib", [ember, torch])
def test_mark_dirty_gives_the_input_the_functions_history(lib):
    a = lib.tensor([1.0, 2.0, 3.0], dtype=lib.float64, requires_grad=True)
    b = a * 1
    v = b[1:]
    y = square_in_place(lib).apply(v)
    assert y is v
    (g,) = lib.autograd.grad((b * lib.tensor([1.0, 10.0, 100.0], dtype=lib.float64)).sum(),
                             a, create_graph=True)
    np.testing.assert_allclose(g.detach().numpy(), [1.0, 40.0, 600.0])  # through b's view
    (h,) = lib.autograd.grad(g.sum(), a)
    np.testing.assert_allclose(h.numpy(), [0.0, 20.0, 200.0])


def test_a_dirty_tensor_saved_for_backward_dies_with_its_last_reference():
    # ctx keeps it as a saved output, as PyTorch does, not as the tensor itself (which has the
    # node's history: a cycle tensor -> node -> ctx -> tensor, freed only by the gc)
    with gc_off():
        y = square_in_place(ember).apply(x64(1.0, 2.0) * 1)
        refs = weakref.ref(y), weakref.ref(y.grad_fn)
        del y
        assert all(r() is None for r in refs)


def test_mark_dirty_refuses_leaves_and_tensors_not_returned():
    with pytest.raises(GradError, match="SquareInPlace: a leaf tensor that requires grad"):
        square_in_place(ember).apply(x64(1.0, 2.0))
    with pytest.raises(GradError, match="did not return it"):
        square_in_place(ember, returned=False).apply(x64(1.0, 2.0) * 1)
    plain = ember.tensor([3.0])
    assert square_in_place(ember).apply(plain) is plain and plain.tolist() == [9.0]


def exp_saving_output(lib, compute=lambda x: x.exp()):
    """PyTorch's double-backward tutorial: backward reads the saved output, whose history is
    this Function's node, so it differentiates again."""
    class Exp(lib.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            out = compute(x)
            ctx.save_for_backward(out)
            return out

        @staticmethod
        def backward(ctx, g):
            (out,) = ctx.saved_tensors
            return g * out
    return Exp


@pytest.mark.parametrize("lib", [ember, torch])
def test_a_saved_output_differentiates_again_through_the_functions_node(lib):
    x = lib.tensor([0.5, -1.0, 2.0], dtype=lib.float64, requires_grad=True)
    exp = exp_saving_output(lib)
    (g,) = lib.autograd.grad(exp.apply(x).sum(), x, create_graph=True)
    (h,) = lib.autograd.grad((g * g).sum(), x)
    np.testing.assert_allclose(h.numpy(), 2 * np.exp(2 * np.array([0.5, -1.0, 2.0])))
    assert lib.autograd.gradgradcheck(exp.apply, (x,))


def pair_and_count(lib):
    """Returns a tensor pair and a Python int; backward gets None for the int."""
    class PairAndCount(lib.autograd.Function):
        @staticmethod
        def forward(ctx, a, b):
            return a + b, a * b, 7

        @staticmethod
        def backward(ctx, g_sum, g_prod, g_count):
            assert g_count is None
            return g_sum + g_prod, g_sum
    return PairAndCount


@pytest.mark.parametrize("lib", [ember, torch])
def test_non_tensor_outputs_pass_through(lib):
    a = lib.tensor([1.0, 2.0], requires_grad=True)
    total, product, count = pair_and_count(lib).apply(a, lib.ones(2))
    assert count == 7 and type(count) is int and total.grad_fn is product.grad_fn
    (total + product).sum().backward()
    np.testing.assert_allclose(a.grad.numpy(), [2.0, 2.0])


@pytest.mark.parametrize("lib", [ember, torch])
def test_backward_returning_more_gradients_than_inputs_is_refused_unless_none(lib):
    class Twice(lib.autograd.Function):
        """Returns one gradient too many: ``extra(g)``."""

        @staticmethod
        def forward(ctx, x, extra):
            ctx.extra = extra
            return x * 2

        @staticmethod
        def backward(ctx, g):
            return g * 2, None, ctx.extra(g)

    x = lib.tensor([1.0, 2.0], requires_grad=True)
    Twice.apply(x, lambda g: None).sum().backward()
    np.testing.assert_allclose(x.grad.numpy(), [2.0, 2.0])
    with pytest.raises(RuntimeError, match="gradients"):
        Twice.apply(x, lambda g: g).sum().backward()


@pytest.mark.parametrize("lib", [ember, torch])
def test_a_saved_input_returned_as_is_keeps_the_inputs_history(lib):
    # forward returns (and saves) x itself: in backward it is the input, not the output
    # (PyTorch returns a view of it), so the second derivative is d(g * x)/dx = g
    identity = exp_saving_output(lib, compute=lambda x: x)
    x = lib.tensor([2.0, 3.0], dtype=lib.float64, requires_grad=True)
    (g,) = lib.autograd.grad(identity.apply(x).sum(), x, create_graph=True)
    (h,) = lib.autograd.grad(g.sum(), x)
    np.testing.assert_allclose(g.detach().numpy(), [2.0, 3.0])
    np.testing.assert_allclose(h.numpy(), [1.0, 1.0])


def _scaled_function(lib, *, backward=None, vjp=None):
    body = {"forward": staticmethod(lambda ctx, x: x * 2)}
    if backward is not None:
        body["backward"] = staticmethod(backward)
    if vjp is not None:
        body["vjp"] = staticmethod(vjp)
    return type("Scaled", (lib.autograd.Function,), body)


def test_vjp_is_an_alias_of_backward_as_in_torch():
    grads = []
    for lib in (torch, ember):
        x = lib.tensor([1.0, -2.0], dtype=lib.float64, requires_grad=True)
        _scaled_function(lib, vjp=lambda ctx, g: g * 5).apply(x).sum().backward()
        grads.append(x.grad.tolist())
    assert grads[1] == grads[0] == [5.0, 5.0]


@pytest.mark.parametrize("defined", [{}, {"backward": lambda ctx, g: g, "vjp": lambda ctx, g: g}])
def test_a_function_needs_exactly_one_of_backward_and_vjp(defined):
    for lib, err in ((torch, (NotImplementedError, RuntimeError)), (ember, GradError)):
        x = lib.tensor([1.0], requires_grad=True)
        with pytest.raises(err, match="backward.*vjp|vjp.*backward"):
            _scaled_function(lib, **defined).apply(x).sum().backward()


def test_calling_a_function_instance_says_to_use_apply():
    with pytest.raises(RuntimeError, match=r"Cube\.apply"):  # (torch: "Legacy autograd…")
        Cube()(ember.ones(2))


@pytest.mark.parametrize("out", ["number", "list", "pair"])
def test_forward_returning_no_tensor_passes_through_as_torch(out):
    # torch returns what forward returned, unrecorded; Ember raised "must return a tensor"
    def run(lib):
        class NoTensor(lib.autograd.Function):
            @staticmethod
            def forward(ctx, x):
                ctx.save_for_backward(x)
                return {"number": 5, "list": [x * 2], "pair": (5, None)}[out]

            @staticmethod
            def backward(ctx, *grads):
                return None

        return NoTensor.apply(lib.ones(2, requires_grad=True))

    t, e = run(torch), run(ember)
    if out == "list":
        assert type(e) is list and e[0].tolist() == t[0].tolist() and not e[0].requires_grad
    else:
        assert e == t


@pytest.mark.parametrize("grad", ["no input needs grad", "under no_grad", "recorded"])
def test_mark_dirty_moves_the_version_on_recorded_or_not(grad):
    # torch bumps a dirty tensor's version always; Ember only where it recorded a node
    def run(lib):
        class AddOne(lib.autograd.Function):
            @staticmethod
            def forward(ctx, x):
                x.add_(1)
                ctx.mark_dirty(x)
                return x

            @staticmethod
            def backward(ctx, g):
                return g

        a = lib.ones(3, requires_grad=grad != "no input needs grad") * 1
        if grad == "under no_grad":
            with lib.no_grad():
                AddOne.apply(a)
        else:
            AddOne.apply(a)
        return a._version

    assert run(ember) == run(torch) == 2
