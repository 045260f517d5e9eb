"""Helpers of the ember.export (torch.export) tests: outputs and gradients of an exported
module against the eager model."""

from __future__ import annotations

import numpy as np

import ember


def outputs_and_grads(module, x):
    """The output of ``module(x)`` and the gradients of its sum by ``x`` and by each
    parameter (in ``named_parameters`` order); the parameters' ``.grad`` is cleared first."""
    for p in module.parameters():
        p.grad = None
    x = x.detach().clone().requires_grad_(True)
    out = module(x)
    out.sum().backward()
    grads = [x.grad.numpy()] + [p.grad.numpy() for _, p in module.named_parameters()]
    return out.detach().numpy(), grads


def assert_same_as_eager(model, exported, x, atol=1e-5):
    """``exported(x)`` gives the eager ``model(x)``'s output and gradients."""
    want, want_grads = outputs_and_grads(model, x)
    got, got_grads = outputs_and_grads(exported, x)
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=atol)
    assert len(got_grads) == len(want_grads)
    for g, w in zip(got_grads, want_grads):
        np.testing.assert_allclose(g, w, rtol=1e-4, atol=atol)


def buffers(module):
    return {k: b.numpy().copy() for k, b in module.named_buffers()}


__all__ = ["assert_same_as_eager", "buffers", "outputs_and_grads", "ember"]
