"""``ember._fake_quantize_learnable_per_tensor_affine`` / ``..._per_channel_affine`` (LSQ) against
PyTorch 2.13: outputs and the gradients of input, scale and zero point."""

import numpy as np
import pytest
import torch

import ember

RNG = np.random.default_rng(0)
TIES = np.array([-2.5, -1.5, -0.5, 0.5, 1.5, 2.5, 100, -100, 0.05, 0.15, 0.25, 2.9, 3.0],
                np.float32)


def run(lib, x, s, z, qmin, qmax, factor, axis=None):
    xt = lib.tensor(x, requires_grad=True)
    st = lib.tensor(np.asarray(s, np.float32), requires_grad=True)
    zt = lib.tensor(np.asarray(z, np.float32), requires_grad=True)
    if axis is None:
        y = lib._fake_quantize_learnable_per_tensor_affine(xt, st, zt, qmin, qmax, factor)
    else:
        y = lib._fake_quantize_learnable_per_channel_affine(xt, st, zt, axis, qmin, qmax, factor)
    y.backward(lib.tensor(np.cos(np.arange(x.size, dtype=np.float32)).reshape(x.shape)))
    return [a.detach().numpy() for a in (y, xt.grad, st.grad, zt.grad)]


@pytest.mark.parametrize("s, z, qmin, qmax", [(0.1, 0.0, 0, 255), (0.3, 3.0, 0, 255),
                                               (0.2, 2.6, 0, 15), (0.1, -3.4, -128, 127),
                                               (0.5, 2.5, 0, 15), (0.25, 300.0, 0, 255)])
@pytest.mark.parametrize("factor", [1.0, 0.5])
def test_per_tensor_as_torch(s, z, qmin, qmax, factor):
    x = np.concatenate([TIES, RNG.standard_normal(30).astype(np.float32) * 3])
    e, t = run(ember, x, [s], [z], qmin, qmax, factor), run(torch, x, [s], [z], qmin, qmax,
                                                            factor)
    np.testing.assert_array_equal(e[0], t[0])
    np.testing.assert_array_equal(e[1], t[1])
    np.testing.assert_allclose(e[2], t[2], rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(e[3], t[3], rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("axis", [0, 1, 2])
@pytest.mark.parametrize("qmin, qmax", [(0, 255), (-128, 127), (0, 15)])
def test_per_channel_as_torch(axis, qmin, qmax):
    x = (RNG.standard_normal((3, 4, 5)) * 3).astype(np.float32)
    n = x.shape[axis]
    s = np.linspace(0.05, 0.5, n)
    z = np.array([2.6, -0.4, 1.5, 2.5, 0.0][:n]) + (qmin + qmax) // 4
    e = run(ember, x, s, z, qmin, qmax, 0.5, axis)
    t = run(torch, x, s, z, qmin, qmax, 0.5, axis)
    for a, b in zip(e, t, strict=True):
        np.testing.assert_allclose(a, b, rtol=1e-5, atol=1e-5)


def test_forward_mode_is_the_transpose_of_the_reverse_rule():
    from ember.autograd import forward_ad as fwad

    x = RNG.standard_normal((3, 4)).astype(np.float32) * 2
    s, z = np.array([0.1, 0.2, 0.3], np.float32), np.array([1.0, 2.4, 0.6], np.float32)
    dx, ds, dz = (RNG.standard_normal(a.shape).astype(np.float32) for a in (x, s, z))
    cot = RNG.standard_normal((3, 4)).astype(np.float32)
    _, gx, gs, gz = run_cot(x, s, z, cot)
    with fwad.dual_level():
        y = ember._fake_quantize_learnable_per_channel_affine(
            fwad.make_dual(ember.tensor(x), ember.tensor(dx)),
            fwad.make_dual(ember.tensor(s), ember.tensor(ds)),
            fwad.make_dual(ember.tensor(z), ember.tensor(dz)), 0, 0, 255, 0.7)
        tangent = fwad.unpack_dual(y).tangent.numpy()
    assert np.isclose((tangent * cot).sum(), (gx * dx).sum() + (gs * ds).sum() + (gz * dz).sum(),
                      rtol=1e-4)


def run_cot(x, s, z, cot):
    xt, st, zt = (ember.tensor(a, requires_grad=True) for a in (x, s, z))
    y = ember._fake_quantize_learnable_per_channel_affine(xt, st, zt, 0, 0, 255, 0.7)
    y.backward(ember.tensor(cot))
    return y, xt.grad.numpy(), st.grad.numpy(), zt.grad.numpy()


@pytest.mark.parametrize("call, error", [
    (lambda x: ember._fake_quantize_learnable_per_tensor_affine(
        x, ember.tensor([0.1, 0.2]), ember.tensor([0.0, 0.0]), 0, 255), ember.errors.ShapeError),
    (lambda x: ember._fake_quantize_learnable_per_tensor_affine(
        x, ember.tensor([0.1]), ember.tensor([0]), 0, 255), ember.errors.DTypeError),
    (lambda x: ember._fake_quantize_learnable_per_tensor_affine(
        x, ember.tensor([0.1]), ember.tensor([0.0]), 9, 2), ember.errors.OpError),
    (lambda x: ember._fake_quantize_learnable_per_channel_affine(
        x, ember.ones(3), ember.zeros(3), 2, 0, 255), IndexError),
    (lambda x: ember._fake_quantize_learnable_per_channel_affine(
        x, ember.ones(3), ember.zeros(3), 1, 0, 255), ember.errors.ShapeError),
])
def test_bad_arguments_are_clear_errors(call, error):
    with pytest.raises(error, match="_fake_quantize_learnable_per_"):
        call(ember.ones(4, 2))


@pytest.mark.parametrize("axis", [None, 1])
@pytest.mark.parametrize("batched_params", [False, True])
def test_vmap_matches_a_loop(axis, batched_params):
    # values and parameter gradients under vmap equal one call per sample
    from ember.func import grad, vmap
    g = np.random.default_rng(0)
    x = ember.tensor(g.normal(0, 3, (4, 3, 5)).astype(np.float32))
    n = 1 if axis is None else 5
    scale = ember.tensor(g.uniform(0.2, 1.0, (4, n) if batched_params else (n,)).astype(np.float32))
    zero = ember.tensor(g.uniform(-2, 2, (4, n) if batched_params else (n,)).astype(np.float32))

    def fq(x, s, z):
        if axis is None:
            return ember._fake_quantize_learnable_per_tensor_affine(x, s, z, -8, 7)
        return ember._fake_quantize_learnable_per_channel_affine(x, s, z, axis, -8, 7)

    dims = (0, 0, 0) if batched_params else (0, None, None)
    got = vmap(fq, in_dims=dims)(x, scale, zero)
    d_scale = vmap(grad(lambda x, s, z: fq(x, s, z).sum(), argnums=1), in_dims=dims)(x, scale,
                                                                                     zero)
    for i in range(4):
        s, z = (scale[i], zero[i]) if batched_params else (scale, zero)
        np.testing.assert_array_equal(got[i].numpy(), fq(x[i], s, z).numpy())
        s = s.detach().requires_grad_()
        fq(x[i], s, z).sum().backward()
        np.testing.assert_allclose(d_scale[i].numpy(), s.grad.numpy(), rtol=1e-6)


def scale_grads(lib, x, s, z, qmin, qmax, axis):
    st = lib.tensor(np.asarray(s, np.float32), requires_grad=True)
    zt = lib.tensor(np.asarray(z, np.float32), requires_grad=True)
    if axis is None:
        y = lib._fake_quantize_learnable_per_tensor_affine(lib.tensor(x), st, zt, qmin, qmax)
    else:
        y = lib._fake_quantize_learnable_per_channel_affine(lib.tensor(x), st, zt, axis, qmin,
                                                            qmax)
    y.sum().backward()
    return st.grad.numpy(), zt.grad.numpy()


@pytest.mark.parametrize("s", [0.3, 0.1, 0.7, 1 / 3])
@pytest.mark.parametrize("z, qmin, qmax", [(2.02, -8, 7), (0.0, 0, 255), (-3.4, -128, 127),
                                           (3.0, -128, 127), (2.5, 0, 15)])
def test_scale_gradient_at_exact_ties_as_torch(s, z, qmin, qmax):
    # torch rounds x * (1 / scale) + z once (a fused multiply-add) before nearbyint, per tensor
    # and per channel; rounding the product first, or adding z after rint, flips the sign of
    # scale.grad at x / scale = k + 0.5 (review54a)
    x = ((np.arange(-9, 9) + 0.5) * np.float32(s)).astype(np.float32)
    for one in x:  # per tensor, one element at a time so no sum hides a flipped sign
        for a, b in zip(scale_grads(ember, one[None], [s], [z], qmin, qmax, None),
                        scale_grads(torch, one[None], [s], [z], qmin, qmax, None), strict=True):
            np.testing.assert_allclose(a, b, atol=1e-6, err_msg=f"x={one}")
    n = x.size  # per channel: one element per channel, so scale.grad is per element
    for a, b in zip(scale_grads(ember, x[:, None], np.full(n, s), np.full(n, z), qmin, qmax, 0),
                    scale_grads(torch, x[:, None], np.full(n, s), np.full(n, z), qmin, qmax, 0),
                    strict=True):
        np.testing.assert_allclose(a, b, atol=1e-6)
