"""extend54's differential sweep of ember.library against torch 2.13: what a setup_context
declares on its ctx, and the opcheck test names a torch user passes."""

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
