"""Reflect and replicate padding by slices (pad_fold.py): values and gradients against
PyTorch, the gradient's own gradient (pad_gather), float64 gradcheck, vmap and jvp."""

import numpy as np
import pytest
import torch
import torch.nn.functional as F

import ember
import ember.nn.functional as EF

CASES = [((1, 1, 9, 11), (3, 2, 1, 4)), ((2, 3, 5, 6), (0, 0, 4, 0)),
         ((2, 4, 7), (6, 1)), ((1, 2, 3, 4, 5), (1, 2, 0, 3, 2, 1)), ((0, 2, 4, 4), (1, 1, 1, 1))]


@pytest.mark.parametrize("mode", ["reflect", "replicate"])
@pytest.mark.parametrize("shape,pads", CASES)
def test_pad_by_slices_values_and_gradient_match_torch(mode, shape, pads):
    rng = np.random.default_rng(0)
    a = rng.standard_normal(shape).astype(np.float32)
    x, t = ember.tensor(a, requires_grad=True), torch.tensor(a, requires_grad=True)
    y, z = EF.pad(x, pads, mode=mode), F.pad(t, pads, mode=mode)
    assert np.array_equal(y.detach().numpy(), z.detach().numpy())
    g = rng.standard_normal(tuple(z.shape)).astype(np.float32)
    y.backward(ember.tensor(g))
    z.backward(torch.tensor(g))
    np.testing.assert_allclose(x.grad.numpy(), t.grad.numpy(), rtol=1e-6, atol=1e-6)


@pytest.mark.parametrize("mode", ["reflect", "replicate"])
def test_pad_by_slices_gradcheck_and_second_order(mode):
    rng = np.random.default_rng(1)
    x = ember.tensor(rng.standard_normal((2, 3, 5, 6)), requires_grad=True)
    assert ember.autograd.gradcheck(lambda v: EF.pad(v, (2, 3, 4, 1), mode=mode), (x,))
    assert ember.autograd.gradgradcheck(lambda v: EF.pad(v, (2, 3, 4, 1), mode=mode) ** 2, (x,))
    # the gradient of the gradient (pad_fold's own vjp, pad_gather) against torch
    t = torch.tensor(x.detach().numpy(), requires_grad=True)
    w = rng.standard_normal((2, 3, 10, 11))
    gx = ember.autograd.grad((EF.pad(x, (2, 3, 4, 1), mode=mode) ** 2 * ember.tensor(w)).sum(),
                             x, create_graph=True)[0]
    (gx ** 2).sum().backward()
    gt = torch.autograd.grad((F.pad(t, (2, 3, 4, 1), mode=mode) ** 2 * torch.tensor(w)).sum(),
                             t, create_graph=True)[0]
    (gt ** 2).sum().backward()
    np.testing.assert_allclose(x.grad.numpy(), t.grad.numpy(), rtol=1e-10)


def test_pad_by_slices_under_vmap_and_jvp():
    rng = np.random.default_rng(2)
    a = ember.tensor(rng.standard_normal((3, 2, 5, 6)))
    pad = lambda v: EF.pad(v, (1, 2, 3, 1), mode="reflect")  # noqa: E731
    grads = ember.func.vmap(ember.func.grad(lambda v: (pad(v) ** 3).sum()))(a)
    t = torch.tensor(a.numpy(), requires_grad=True)
    (F.pad(t, (1, 2, 3, 1), mode="reflect") ** 3).sum().backward()
    np.testing.assert_allclose(grads.numpy(), t.grad.numpy(), rtol=1e-12)
    d = ember.tensor(rng.standard_normal((3, 2, 5, 6)))
    _, tangent = ember.func.jvp(lambda v: ember.func.vjp(pad, v)[1](pad(v))[0], (a,), (d,))
    want = torch.func.jvp(lambda v: torch.func.vjp(lambda u: F.pad(u, (1, 2, 3, 1),
                                                                 mode="reflect"), v)[1](
        F.pad(v, (1, 2, 3, 1), mode="reflect"))[0], (t.detach(),),
        (torch.tensor(d.numpy()),))[1]
    np.testing.assert_allclose(tangent.numpy(), want.numpy(), rtol=1e-12)


@pytest.mark.parametrize("mode", ["reflect", "replicate"])
@pytest.mark.parametrize("shape,pads", [((1, 1, 4), (1, 2)), ((1, 2, 4, 5), (2, 1, 0, 3))])
def test_pad_by_slices_gradient_of_negative_zeros_is_positive_zero_as_torch(mode, shape, pads):
    # PyTorch adds the padded gradient into zeros: -0.0 everywhere sums to +0.0
    x, t = ember.zeros(*shape, requires_grad=True), torch.zeros(*shape, requires_grad=True)
    y, z = EF.pad(x, pads, mode=mode), F.pad(t, pads, mode=mode)
    y.backward(ember.tensor(-np.zeros(tuple(z.shape), np.float32)))
    z.backward(-torch.zeros(z.shape))
    assert np.array_equal(np.signbit(x.grad.numpy()), np.signbit(t.grad.numpy()))
    assert not np.signbit(x.grad.numpy()).any()
