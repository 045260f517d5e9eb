"""fake_quantize_per_tensor_affine / fake_quantize_per_channel_affine against PyTorch: values
(ties to even, clamping, NaN and infinities), straight-through gradients, errors."""

import numpy as np
import pytest
import torch

import ember
from ember.autograd.forward import jvp as forward_jvp
from ember.autograd.gradcheck import gradcheck, gradgradcheck


def _values(rng, n, scale):
    """Random values with exact ties (halves of ``scale``), far-out ones and zeros."""
    ties = (rng.integers(-300, 300, n) + 0.5) * scale
    return np.concatenate([rng.normal(0, 60 * scale, n), ties, [0.0, -0.0, 1e6, -1e6]])


def _same_values_and_gradients(x, rng, ember_op, torch_op):
    """``ember_op`` and ``torch_op`` of ``x`` (a NumPy array) agree, and so do the input
    gradients for a random output gradient."""
    tx = torch.from_numpy(x).requires_grad_()
    ex = ember.from_numpy(x).requires_grad_()
    ty, ey = torch_op(tx), ember_op(ex)
    assert ey.dtype == getattr(ember, str(x.dtype))
    np.testing.assert_array_equal(ey.detach().numpy(), ty.detach().numpy())
    g = rng.normal(size=x.shape).astype(x.dtype)
    ty.backward(torch.from_numpy(g))
    ey.backward(ember.from_numpy(g))
    np.testing.assert_array_equal(ex.grad.numpy(), tx.grad.numpy())


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("qrange,zero_point", [((-128, 127), 0), ((0, 255), 113),
                                               ((0, 127), 64), ((-8, 7), -3)])
def test_per_tensor_matches_torch(dtype, qrange, zero_point):
    rng = np.random.default_rng(0)
    for scale in (0.0625, 0.0213, 1.7, 3e-4):
        _same_values_and_gradients(
            _values(rng, 200, scale).astype(dtype), rng,
            lambda t, s=scale: ember.fake_quantize_per_tensor_affine(t, s, zero_point, *qrange),
            lambda t, s=scale: torch.fake_quantize_per_tensor_affine(t, s, zero_point, *qrange))


def test_per_tensor_ties_round_to_even_and_special_values():
    x = [0.5, 1.5, 2.5, -0.5, -2.5, 300.0, float("nan"), float("inf"), -float("inf")]
    t = torch.fake_quantize_per_tensor_affine(torch.tensor(x), 1.0, 0, -128, 127)
    e = ember.fake_quantize_per_tensor_affine(ember.tensor(x), 1.0, 0, -128, 127)
    assert e.tolist() == t.tolist() == [0.0, 2.0, 2.0, -0.0, -2.0, 127.0, -128.0, 127.0, -128.0]


def test_per_tensor_tensor_qparams_and_half():
    x = np.random.default_rng(1).normal(size=50).astype(np.float32)
    t = torch.fake_quantize_per_tensor_affine(torch.from_numpy(x).half(), torch.tensor([0.05]),
                                              torch.tensor([3], dtype=torch.int32), -128, 127)
    e = ember.fake_quantize_per_tensor_affine(ember.from_numpy(x).half(), ember.tensor([0.05]),
                                              ember.tensor([3], dtype=ember.int32), -128, 127)
    assert e.dtype == ember.float16
    np.testing.assert_array_equal(e.float().numpy(), t.float().numpy())


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("axis", [0, 1, 2])
@pytest.mark.parametrize("zp_dtype", ["int32", "float32"])
def test_per_channel_matches_torch(dtype, axis, zp_dtype):
    rng = np.random.default_rng(2)
    x = rng.normal(0, 3, size=(4, 5, 6)).astype(dtype)
    x.flat[::7] = (rng.integers(-50, 50, x.size)[::7] + 0.5) * 0.125  # ties
    c = x.shape[axis]
    scale = np.array([0.125, 0.02, 0.3, 0.07, 0.011, 0.5][:c], dtype=np.float32)
    zp = rng.integers(-20, 20, c).astype(zp_dtype)
    if zp_dtype == "float32":
        zp = zp + np.float32(0.5)
    _same_values_and_gradients(
        x, rng, lambda t: ember.fake_quantize_per_channel_affine(
            t, ember.from_numpy(scale), ember.from_numpy(zp), axis, -32, 31),
        lambda t: torch.fake_quantize_per_channel_affine(
            t, torch.from_numpy(scale), torch.from_numpy(zp), axis, -32, 31))


def test_per_channel_special_values():
    x = [float("nan"), float("inf"), -float("inf"), 1.0]
    args = (ember.ones(4), ember.zeros(4, dtype=ember.int32), 0, -128, 127)
    t = torch.fake_quantize_per_channel_affine(torch.tensor(x), torch.ones(4),
                                               torch.zeros(4, dtype=torch.int32), 0, -128, 127)
    assert ember.fake_quantize_per_channel_affine(ember.tensor(x), *args).tolist() == t.tolist()


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("zero_point", [2**31 - 1, -2**31, 5])
@pytest.mark.parametrize("per_channel", [False, True])
def test_32_bit_range_clamps_exactly_like_torch(dtype, zero_point, per_channel):
    # quant_max 2**31 - 1 is no float32: clamped in float32, x=0 at zero point 2**31 - 1 gave
    # one step (scale), not 0; per tensor the steps to 2**31 round to float32 before the scale
    # (2**24 and beyond), per channel the mask compares on int64
    rng = np.random.default_rng(5)
    x = np.concatenate([[0.0, 1.0, -1.0, -300.0, 5e9, -5e9], rng.normal(0, 3e3, 60)])
    x = x.astype(dtype)
    low, high = -2**31, 2**31 - 1
    for scale in (1.0, 1e-6, 1 / 3):
        s, z = np.full(x.size, scale, np.float32), np.full(x.size, zero_point, np.int32)
        if per_channel:
            ops = [lambda t, m=m, s=s, z=z: m.fake_quantize_per_channel_affine(
                t, m.from_numpy(s), m.from_numpy(z), 0, low, high) for m in (ember, torch)]
        else:
            ops = [lambda t, m=m, s=scale: m.fake_quantize_per_tensor_affine(
                t, s, zero_point, low, high) for m in (ember, torch)]
        _same_values_and_gradients(x, rng, *ops)


def test_per_channel_float_zero_points_fuse_the_multiply_add_like_torch():
    # PyTorch's kernel computes zero_point + x * inv_scale as one fused multiply-add; rounded
    # twice, q moved by one step near halves, seen over the 32-bit range where q is large
    rng = np.random.default_rng(6)
    n = 20000
    x = (rng.normal(size=n) * rng.choice([1e-3, 1, 100], size=n)).astype(np.float32)
    s = rng.choice([1.0, 0.1, 1 / 3, 1e-6, 1e6], size=n).astype(np.float32)
    z = (rng.normal(size=n) * 3).astype(np.float32)
    _same_values_and_gradients(
        x, rng, *[lambda t, m=m: m.fake_quantize_per_channel_affine(
            t, m.from_numpy(s), m.from_numpy(z), 0, -2**31, 2**31 - 1) for m in (ember, torch)])


def test_per_channel_float_zero_points_round_the_fused_sum_once_like_torch():
    # x * inv_scale is exact in float64, but adding a large zero point rounds there, and the
    # float32 cast rounded again: 0.75 (1 + 2**-17) / (1 + 2**-17) + 2**22 is a float32 tie
    # only after the first rounding
    scale = np.float32(1 + 2**-17)
    x = np.array([0.75 * scale, -0.75 * scale, 1.5 * scale], np.float32)
    outs = [m.fake_quantize_per_channel_affine(
        m.from_numpy(x), m.from_numpy(np.full(3, scale, np.float32)),
        m.from_numpy(np.full(3, 2.0**22, np.float32)), 0, -2**31, 2**31 - 1).numpy()
        for m in (ember, torch)]
    np.testing.assert_array_equal(*outs)


def _away_from_jumps(shape, scale):
    """float64 values a third of a step from every rounding jump, some beyond the clamp."""
    rng = np.random.default_rng(3)
    k = rng.integers(-12, 12, size=shape)
    return ember.tensor((k + rng.choice([-0.2, 0.2], size=shape)) * scale,
                        dtype=ember.float64, requires_grad=True)


def test_straight_through_rules_by_finite_differences():
    # fq is flat between rounding jumps, so its true derivative there is 0 and a plain gradcheck
    # cannot hold for torch's straight-through estimator; what FD can check: the function is
    # flat away from jumps, the gradient is the in-range mask, and the jvp and vjp rules
    # (linear in the tangent and cotangent, constant in x) by gradcheck/gradgradcheck
    x = _away_from_jumps((8,), 0.25)

    def fq(t):
        return ember.fake_quantize_per_channel_affine(
            t.reshape(2, 4), ember.full((2,), 0.25), ember.zeros(2, dtype=ember.int32), 0, -8, 7)

    base = fq(x.detach())
    for i in range(8):
        d = ember.zeros(8, dtype=ember.float64)
        d[i] = 1e-6
        assert (fq(x.detach() + d) - base).abs().max().item() == 0.0
    (g,) = ember.autograd.grad(fq(x).sum(), x)
    q = (x.detach() / 0.25).round()
    assert g.tolist() == ((q >= -8) & (q <= 7)).double().tolist()
    v = ember.randn(8, dtype=ember.float64, requires_grad=True)
    assert gradcheck(lambda v: forward_jvp(fq, (x.detach(),), (v,))[1], (v,))
    assert gradgradcheck(fq, (x,))


def test_errors_match_torch_cases():
    x = ember.randn(2, 4)
    with pytest.raises(RuntimeError, match="zero_point"):
        ember.fake_quantize_per_tensor_affine(x, 1.0, 200, -128, 127)
    with pytest.raises(RuntimeError, match="quant_min"):
        ember.fake_quantize_per_tensor_affine(x, 1.0, 0, 5, 1)
    with pytest.raises(ember.DTypeError, match="floating"):
        ember.fake_quantize_per_tensor_affine(x.int(), 1.0, 0, -128, 127)
    with pytest.raises(ember.ShapeError, match="shape"):
        ember.fake_quantize_per_channel_affine(x, ember.ones(2), ember.zeros(
            2, dtype=ember.int32), 1, -128, 127)
    with pytest.raises(ember.DTypeError, match="scale"):
        ember.fake_quantize_per_channel_affine(x, ember.ones(2).double(), ember.zeros(
            2, dtype=ember.int32), 0, -128, 127)
    with pytest.raises(ember.DTypeError, match="zero_point"):
        ember.fake_quantize_per_channel_affine(x, ember.ones(2), ember.zeros(2).long(), 0,
                                               -128, 127)
    with pytest.raises(IndexError, match="axis"):
        ember.fake_quantize_per_channel_affine(x, ember.ones(2), ember.zeros(
            2, dtype=ember.int32), 2, -128, 127)
    with pytest.raises(RuntimeError, match="zero_point"):
        ember.fake_quantize_per_channel_affine(x, ember.ones(4), ember.tensor(
            [0, 0, 0, 300], dtype=ember.int32), 1, -128, 127)
    with pytest.raises(RuntimeError, match="requires_grad"):
        ember.fake_quantize_per_tensor_affine(x, ember.tensor(1.0, requires_grad=True), 0,
                                              -128, 127)


def test_vmap_matches_a_loop():
    x = ember.randn(3, 4, 5)
    s = ember.rand(3, 4) * 0.2 + 0.05
    z = ember.randint(-5, 5, (3, 4), dtype=ember.int32)

    def per_channel(xi, si, zi):
        return ember.fake_quantize_per_channel_affine(xi, si, zi, 0, -16, 15)

    looped = ember.stack([per_channel(x[i], s[i], z[i]) for i in range(3)])
    assert ember.vmap(per_channel)(x, s, z).tolist() == looped.tolist()
    shared = ember.stack([per_channel(x[i], s[0], z[0]) for i in range(3)])
    assert ember.vmap(per_channel, (0, None, None))(x, s[0], z[0]).tolist() == shared.tolist()
    assert ember.vmap(lambda t: ember.fake_quantize_per_tensor_affine(t, 0.1, 0, -8, 7))(
        x).tolist() == ember.fake_quantize_per_tensor_affine(x, 0.1, 0, -8, 7).tolist()


def test_vmap_over_per_tensor_scales_and_zero_points():
    x = ember.randn(3, 4, 5, dtype=ember.float64)
    s = ember.tensor([0.1, 0.25, 0.03])
    z = ember.tensor([0, -3, 7], dtype=ember.int32)

    def per_tensor(xi, si, zi):
        return ember.fake_quantize_per_tensor_affine(xi, si, zi, -16, 15)

    looped = ember.stack([per_tensor(x[i], s[i], z[i]) for i in range(3)])
    assert ember.vmap(per_tensor)(x, s, z).tolist() == looped.tolist()
    assert ember.vmap(per_tensor, (None, 0, None))(x[0], s, z[1]).tolist() == ember.stack(
        [per_tensor(x[0], s[i], z[1]) for i in range(3)]).tolist()
    with pytest.raises(ember.errors.OpError, match="zero_point"):
        ember.vmap(per_tensor)(x, s, ember.tensor([0, 20, 0], dtype=ember.int32))


def test_a_0d_input_with_one_element_qparams_stays_0d_as_torch():
    x = ember.tensor(0.37, requires_grad=True)
    y = ember.fake_quantize_per_tensor_affine(x, ember.tensor([0.1]),
                                              ember.tensor([0], dtype=ember.int32), -128, 127)
    want = torch.fake_quantize_per_tensor_affine(
        torch.tensor(0.37), torch.tensor([0.1]), torch.tensor([0], dtype=torch.int32), -128, 127)
    assert y.shape == tuple(want.shape) == ()  # (was (1,))
    assert y.item() == want.item()
    y.backward()
    assert x.grad.item() == 1.0
