"""extend54's differential sweep of ember.library against torch 2.13: what a setup_context
declares on its ctx, the opcheck test names a torch user passes, complex inputs."""

import numpy as np
import torch

import ember


def _define_two_outputs(lib, T, name):
    @lib.custom_op(f"sweep54::{name}", mutates_args=())
    def f(x: T.Tensor) -> tuple[T.Tensor, T.Tensor]:
        return x * 2, x * 3

    def setup_context(ctx, inputs, output):
        ctx.mark_non_differentiable(output[1])

    def backward(ctx, ga, gb):
        return ga * 2 + gb * 3  # (gb: zeros, since output 1 has no gradient)

    f.register_autograd(backward, setup_context=setup_context)
    return f


def test_mark_non_differentiable_in_setup_context_detaches_that_output_as_torch():
    results = []
    for lib, T in ((torch.library, torch), (ember.library, ember)):
        f = _define_two_outputs(lib, T, "nondiff")
        x = T.tensor([0.5, -1.0, 2.0], dtype=T.float64, requires_grad=True)
        a, b = f(x)
        (a.sum() + b.sum()).backward()
        results.append((a.requires_grad, b.requires_grad, b.grad_fn is None,
                        x.grad.tolist(), b.tolist()))
    assert results[1] == results[0] == (True, False, True, [2.0, 2.0, 2.0], [1.5, -3.0, 6.0])


def _define_scale(lib, T, name, factor):
    @lib.custom_op(f"sweep54::{name}", mutates_args=())
    def f(x: T.Tensor) -> T.Tensor:
        return x * 2

    f.register_fake(lambda x: T.empty_like(x))
    f.register_autograd(lambda ctx, g: g * factor)
    return f


def test_opcheck_takes_torchs_aot_dispatch_test_names():
    # torch's default checks include test_aot_dispatch_dynamic; code that names it (alone or
    # with the others) must run in Ember too, where it checks the ember.jit-compiled op
    names = ("test_schema", "test_faketensor", "test_aot_dispatch_dynamic",
             "test_aot_dispatch_static")
    for lib, T in ((torch.library, torch), (ember.library, ember)):
        f = _define_scale(lib, T, "twice", 2.0)
        x = T.tensor([0.5, -1.0, 2.0], dtype=T.float64, requires_grad=True)
        assert lib.opcheck(f, (x,), test_utils=names) == dict.fromkeys(names, "SUCCESS")


def test_opcheck_aot_dispatch_compares_the_compiled_gradient_with_eager():
    calls = []

    @ember.library.custom_op("sweep54::drifting_grad", mutates_args=())
    def f(x: ember.Tensor) -> ember.Tensor:
        return x * 2

    f.register_fake(lambda x: ember.empty_like(x))
    def backward(ctx, g):  # (a different factor at each call: compiled and eager differ)
        calls.append(1)
        return g * (1.0 + len(calls))

    f.register_autograd(backward)
    x = ember.tensor([0.5, -1.0], dtype=ember.float64, requires_grad=True)
    result = ember.library.opcheck(f, (x,), test_utils="test_aot_dispatch_dynamic",
                                   raise_exception=False)
    assert "gradient" in str(result["test_aot_dispatch_dynamic"])
    assert ember.library.opcheck(f, (x.detach(),), test_utils="test_aot_dispatch_dynamic") == \
        {"test_aot_dispatch_dynamic": "SUCCESS"}  # (no input requires grad: forward only)


def test_a_custom_op_on_complex_tensors_runs_its_backward_as_torch():
    grads = []
    for lib, T in ((torch.library, torch), (ember.library, ember)):
        @lib.custom_op("sweep54::csquare", mutates_args=())
        def f(x: T.Tensor) -> T.Tensor:
            return x * x

        def setup_context(ctx, inputs, output):
            ctx.save_for_backward(inputs[0])

        def backward(ctx, g):  # (PyTorch's convention: the conjugate Wirtinger derivative)
            (x,) = ctx.saved_tensors
            return g * 2 * x.conj()

        f.register_autograd(backward, setup_context=setup_context)
        x = T.tensor([1 + 1j, 2 - 1j, -0.5 + 3j], dtype=T.complex128, requires_grad=True)
        f(x).abs().sum().backward()
        grads.append(x.grad.numpy())
    np.testing.assert_allclose(grads[1], grads[0], rtol=1e-12)
