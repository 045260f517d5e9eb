"""A custom autograd.Function without a vmap rule (PyTorch's generate_vmap_rule=True),
differentiated from outside the vmap: grad(vmap(F.apply)), backward of vmap's result,
jvp(vmap(F.apply)) go through the Function's own backward and jvp, as in torch. Ember lost
the gradient (zeros from grad, a result that did not require grad) and took forward's
derivative instead of jvp."""

import numpy as np
import pytest
import torch

import ember


def functions(lib):
    class Scaled(lib.autograd.Function):  # backward and jvp on purpose not forward's derivative
        generate_vmap_rule = True

        @staticmethod
        def forward(a, w):
            return (a * w).sin(), a.sum()

        @staticmethod
        def setup_context(ctx, inputs, output):
            ctx.save_for_backward(*inputs)
            ctx.save_for_forward(*inputs)

        @staticmethod
        def backward(ctx, g, g_sum):
            a, w = ctx.saved_tensors
            return g * w * 10 + g_sum, g * a * 3

        @staticmethod
        def jvp(ctx, da, dw):
            a, w = ctx.saved_tensors
            return da * w * 5 + dw, da.sum()

    return Scaled


def data(lib, *shape, k=7):
    return lib.tensor(np.sin(np.arange(float(np.prod(shape))).reshape(shape) * k),
                      dtype=lib.float64)


def both(fn):
    return [np.asarray(fn(lib, functions(lib)).tolist()) for lib in (torch, ember)]


CASES = {
    "grad_vmap": lambda L, F: L.func.grad(
        lambda a, w: sum(o.pow(2).sum() for o in L.func.vmap(F.apply, in_dims=(0, None))(a, w)),
        argnums=1)(data(L, 3, 2), data(L, 2, k=3)),
    "grad_vmap_in_dims_1": lambda L, F: L.func.grad(
        lambda a: L.func.vmap(F.apply, in_dims=(1, None))(a, data(L, 2))[0].pow(2).sum())(
        data(L, 2, 3)),
    "grad_nested_vmap": lambda L, F: L.func.grad(
        lambda a: L.func.vmap(L.func.vmap(F.apply))(a, a * 2)[0].pow(2).sum())(data(L, 2, 3, 2)),
    "jacrev_vmap": lambda L, F: L.func.jacrev(lambda a: L.func.vmap(F.apply)(a, a)[0])(
        data(L, 2, 2)),
    "jvp_vmap": lambda L, F: L.func.jvp(lambda a: L.func.vmap(F.apply)(a, a * 2)[0],
                                        (data(L, 3, 2),), (data(L, 3, 2, k=2),))[1],
}


@pytest.mark.parametrize("name", CASES)
def test_derivatives_from_outside_vmap_go_through_the_functions_rules(name):
    theirs, ours = both(CASES[name])
    np.testing.assert_allclose(ours, theirs, rtol=1e-12, atol=1e-12)


def test_backward_of_vmaps_result_reaches_batched_and_unbatched_inputs():
    grads = []
    for lib in (torch, ember):
        a, w = data(lib, 3, 2).requires_grad_(), data(lib, 2, k=3).requires_grad_()
        out, sums = lib.func.vmap(functions(lib).apply, in_dims=(0, None))(a, w)
        assert out.requires_grad
        (out.pow(2).sum() + sums.sum()).backward()
        grads.append([a.grad.tolist(), w.grad.tolist()])
    np.testing.assert_allclose(grads[1][0], grads[0][0], rtol=1e-12)
    np.testing.assert_allclose(grads[1][1], grads[0][1], rtol=1e-12)
