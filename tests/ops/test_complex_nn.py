"""Complex tensors in nn and random sampling, against PyTorch: convolutions, linear layers
and their complex initialisation, normalize, logsumexp, logcumsumexp, pairwise_distance,
l1_loss, the inverse trigonometric and hyperbolic functions, prod, cumprod, pow, sinc,
vander, complex normal sampling; the refusals PyTorch shares (dropout, mse_loss); silu, where
Ember also differentiates what torch only evaluates."""

import numpy as np
import pytest
import torch

import ember
import ember.nn.functional as F
from tests.ops.optable import complex_case as case
from tests.ops.optable import op_tests

CASES = [
    case("conv1d", lambda m, x, w, b: m.nn.functional.conv1d(x, w, b, padding=1, stride=2),
         (2, 2, 5), (3, 2, 3), (3,), gradgrad=False),
    case("conv2d_groups", lambda m, x, w: m.nn.functional.conv2d(x, w, padding=1, groups=2),
         (1, 4, 3, 3), (2, 2, 2, 2), gradgrad=False),
    case("conv3d", lambda m, x, w: m.nn.functional.conv3d(x, w), (1, 1, 3, 3, 3),
         (2, 1, 2, 2, 2), gradgrad=False),
    case("conv_transpose2d", lambda m, x, w, b: m.nn.functional.conv_transpose2d(
        x, w, b, stride=2, output_padding=1), (1, 2, 3, 3), (2, 2, 2, 2), (2,), gradgrad=False),
    case("linear", lambda m, x, w, b: m.nn.functional.linear(x, w, b), (2, 3), (4, 3), (4,),
         gradgrad=False),
    case("normalize", lambda m, x: (m.nn.functional.normalize(x),
                                    m.nn.functional.normalize(x, p=1, dim=0),
                                    m.nn.functional.normalize(x, p=3)), (2, 3),
         gradgrad=False),
    case("logsumexp", lambda m, x: m.logsumexp(x, 1), (2, 3)),
    case("pairwise_distance", lambda m, x, y: tuple(
        m.nn.functional.pairwise_distance(x, y, p=p) for p in (2.0, 1.0, 3.0, float("inf"))),
        (2, 3), (2, 3)),
    case("logcumsumexp", lambda m, x: (m.logcumsumexp(x, 1), m.logcumsumexp(x, 0)), (2, 3)),
    case("l1_loss", lambda m, x, y: (m.nn.functional.l1_loss(x, y),
                                     m.nn.functional.l1_loss(x, y, reduction="none")),
         (2, 3), (2, 3), gradgrad=False),
    case("inverse_trig", lambda m, x: m.stack([m.asin(x), m.acos(x), m.atan(x), m.asinh(x),
                                               m.acosh(x), m.atanh(x)]), (3,)),
    case("prod_cumprod", lambda m, x: (x.prod(1), x.prod(), x.cumprod(1)), (2, 3),
         gradgrad=False),
    case("pow_sinc_vander", lambda m, x, y: (x ** y, m.sinc(x), m.linalg.vander(x[0])),
         (2, 3), (2, 3), gradgrad=False),
]

test_forward, test_backward, test_gradcheck, test_gradgradcheck, test_jvp = op_tests(CASES)


@pytest.mark.parametrize("dtype", ["complex64", "complex128"])
def test_complex_samples_follow_torch(dtype):
    n = 50_000
    z = ember.randn(n, dtype=getattr(ember, dtype))
    assert z.dtype.name == dtype == str(torch.randn(1, dtype=getattr(torch, dtype)).dtype)[6:]
    parts = ember.view_as_real(z).numpy()  # standard complex normal: each part N(0, 1/2)
    np.testing.assert_allclose(parts.var(axis=0), [0.5, 0.5], atol=0.02)
    np.testing.assert_allclose(parts.mean(axis=0), [0.0, 0.0], atol=0.02)
    u = ember.view_as_real(ember.rand(n, dtype=getattr(ember, dtype))).numpy()
    assert u.min() >= 0 and u.max() < 1 and abs(u.mean() - 0.5) < 0.01
    w = ember.view_as_real(ember.zeros(n, dtype=getattr(ember, dtype)).normal_(1.0, 2.0)).numpy()
    np.testing.assert_allclose(w.mean(axis=0), [1.0, 1.0], atol=0.05)  # as torch's normal_
    np.testing.assert_allclose(w.var(axis=0), [2.0, 2.0], rtol=0.05)
    v = ember.view_as_real(ember.empty(n, dtype=getattr(ember, dtype)).uniform_(-1, 3)).numpy()
    assert v.min() >= -1 and v.max() < 3 and abs(v.mean() - 1) < 0.05
    assert ember.randn_like(z[:2]).dtype is z.dtype
    assert ember.rand(2, dtype=getattr(ember, dtype), requires_grad=True).requires_grad


def test_linear_and_conv_layers_of_complex_dtype():
    ember.manual_seed(0)  # (the spread check below reads a handful of random weights)
    layers = ((ember.nn.Linear, (3, 2), (4, 3)), (ember.nn.Conv2d, (2, 3, 3), (1, 2, 4, 4)))
    for cls, args, x in layers:
        layer = cls(*args, dtype=ember.complex64)
        ref = getattr(torch.nn, cls.__name__)(*args, dtype=torch.complex64)
        assert layer.weight.dtype is ember.complex64 and layer.bias.dtype is ember.complex64
        bound = 1 / (layer.weight[0].numel() ** 0.5)  # kaiming_uniform_(a=√5): U(-b, b) parts
        parts = ember.view_as_real(layer.weight).detach().numpy()
        assert np.abs(parts).max() <= bound and parts[..., 1].std() > bound / 4
        with torch.no_grad(), ember.no_grad():
            ref.weight.copy_(torch.from_numpy(layer.weight.detach().numpy()))
            ref.bias.copy_(torch.from_numpy(layer.bias.detach().numpy()))
        data = np.random.default_rng(0).normal(size=x) + 1j
        y = layer(ember.tensor(data, dtype=ember.complex64))
        np.testing.assert_allclose(y.detach().numpy(),
                                   ref(torch.tensor(data, dtype=torch.complex64)).detach().numpy(),
                                   atol=1e-5)
        y.abs().sum().backward()
        assert layer.weight.grad.dtype is ember.complex64


@pytest.mark.parametrize("fn", [
    lambda m, z: m.nn.functional.dropout(z, 0.5),
    lambda m, z: m.nn.functional.mse_loss(z, z),
    lambda m, z: m.nn.functional.gelu(z),
    lambda m, z: m.nn.functional.softmax(z, 0),
    lambda m, z: m.nn.functional.layer_norm(z, (3,)),
], ids=["dropout", "mse_loss", "gelu", "softmax", "layer_norm"])
def test_what_torch_refuses_for_complex_input_ember_refuses(fn):
    z = np.array([1 + 2j, 3 - 1j, 0.5j])
    with pytest.raises((RuntimeError, NotImplementedError)):
        fn(torch, torch.tensor(z))
    with pytest.raises(ember.DTypeError, match="complex"):
        fn(ember, ember.tensor(z))


def test_silu_of_a_complex_tensor_matches_torch_and_has_the_holomorphic_gradient():
    z = ember.tensor([1 + 2j, -0.5 + 0.3j, 2j], dtype=ember.complex128, requires_grad=True)
    t = torch.tensor(z.detach().numpy(), requires_grad=True)
    y = F.silu(z)
    np.testing.assert_allclose(y.detach().numpy(), torch.nn.functional.silu(t.detach()).numpy(),
                               rtol=1e-12)
    w = np.array([0.3 - 1j, 2 + 0.5j, -1j])
    (y * ember.tensor(w)).real.sum().backward()
    (t * torch.sigmoid(t) * torch.tensor(w)).real.sum().backward()  # torch's silu: no grad
    np.testing.assert_allclose(z.grad.numpy(), t.grad.numpy(), rtol=1e-12)
    assert ember.autograd.gradcheck(F.silu, (z,))
    assert ember.autograd.gradgradcheck(F.silu, (z,))


def test_conjugate_and_negative_bits_answer_as_torch_for_materialised_tensors():
    z = np.array([1 + 2j, -3j])
    for lib in (torch, ember):
        t = lib.tensor(z)
        physical = lib.conj_physical(t)
        assert not lib.is_conj(physical) and not lib.is_neg(physical.imag)
        assert not t.is_conj() and not t.is_neg() and not lib.ones(2).conj().is_conj()
        assert not t.conj().resolve_conj().is_conj() and not t.resolve_neg().is_neg()
        np.testing.assert_array_equal(t.conj().resolve_conj().numpy(), z.conj())
    # the difference (documented): Ember's conj is physical, so it sets no bit
    assert torch.tensor(z).conj().is_conj() and not ember.tensor(z).conj().is_conj()
    assert torch.tensor(z).conj().imag.is_neg() and not ember.tensor(z).conj().imag.is_neg()


@pytest.mark.parametrize("p", [float("inf"), float("-inf"), 0, -1.0, 3.0])
@pytest.mark.parametrize("dtype", [np.float64, np.complex128])
def test_normalize_with_any_order_matches_torch(p, dtype):
    data = np.array([[3.0, -4.0, 1.0], [0.5, 2.0, -1.0]]).astype(dtype)
    if dtype is np.complex128:
        data = data + 1j * data[::-1]
    x, t = ember.tensor(data, requires_grad=True), torch.tensor(data, requires_grad=True)
    y, ref = F.normalize(x, p=p, dim=1), torch.nn.functional.normalize(t, p=p, dim=1)
    np.testing.assert_allclose(y.detach().numpy(), ref.detach().numpy(), rtol=1e-12)
    y.abs().sum().backward()
    ref.abs().sum().backward()
    np.testing.assert_allclose(x.grad.numpy(), t.grad.numpy(), rtol=1e-9, atol=1e-12)


@pytest.mark.parametrize("init", ["trunc_normal_", "orthogonal_"])
def test_initialisers_torch_refuses_for_complex_tensors_refuse(init):
    with pytest.raises((RuntimeError, NotImplementedError)):
        getattr(torch.nn.init, init)(torch.empty(3, 3, dtype=torch.complex64))
    with pytest.raises(ember.DTypeError, match=init):
        getattr(ember.nn.init, init)(ember.empty(3, 3, dtype=ember.complex64))


def test_pow_exponent_gradient_at_a_zero_base_follows_torch():
    # PyTorch zeroes it only for a real non-negative exponent; otherwise log(0) gives NaN
    base = np.zeros(4, dtype=np.complex128)
    exponent = np.array([2.0, 0.0, 2 + 1j, 0.5j])
    grads = []
    for lib in (torch, ember):
        a, b = lib.tensor(base, requires_grad=True), lib.tensor(exponent, requires_grad=True)
        (a ** b)[[0, 2, 3]].abs().sum().backward()
        grads.append(b.grad.numpy())
    np.testing.assert_array_equal(np.isnan(grads[1]), np.isnan(grads[0]))
    np.testing.assert_array_equal(np.nan_to_num(grads[1]), np.nan_to_num(grads[0]))


@pytest.mark.parametrize("bias_dtype", ["float32", "float64"])
def test_linear_refuses_a_bias_of_another_dtype_as_torch(bias_dtype):
    z = np.array([[1 + 2j, -1j]], dtype=np.complex64)
    for lib, error in ((torch, RuntimeError), (ember, ember.DTypeError)):
        x = lib.tensor(z) if bias_dtype == "float32" else lib.tensor(z.real)
        with pytest.raises(error, match="dtype" if lib is torch else "linear: .*bias"):
            lib.nn.functional.linear(x, x, lib.ones(1, dtype=getattr(lib, bias_dtype)))


@pytest.mark.parametrize("make", [
    lambda m: m.randint(0, 3, (2,), dtype=m.complex64),
    lambda m: m.randint_like(m.zeros(2, dtype=m.complex64), 3),
], ids=["randint", "randint_like"])
def test_random_integers_refuse_a_complex_dtype_as_torch(make):
    with pytest.raises(RuntimeError, match="integral, floating-point and boolean"):
        make(torch)
    with pytest.raises(ember.DTypeError, match="randint: .*complex64"):
        make(ember)


@pytest.mark.parametrize("draw, means", [
    (lambda m: m.normal(m.full((40_000,), 1 + 2j, dtype=m.complex128), 3.0), (1, 2)),
    (lambda m: m.normal(m.full((40_000,), 1 + 2j, dtype=m.complex128),
                        m.full((40_000,), 3.0, dtype=m.float64)), (1, 2)),
    (lambda m: m.normal(1.0, 3.0, (40_000,), dtype=m.complex128), (1, 1)),
], ids=["tensor_mean", "tensor_mean_and_std", "numbers_and_size"])
def test_complex_normal_draws_each_part_with_half_the_variance_as_torch(draw, means):
    for lib in (torch, ember):
        x = draw(lib)
        assert x.dtype == lib.complex128
        for part, mean in zip((x.real.numpy(), x.imag.numpy()), means):
            assert abs(part.mean() - mean) < 0.05 and abs(part.var() - 4.5) < 0.15


def test_complex_normal_refuses_a_gradient_and_a_complex_std_as_torch():
    mean = ember.zeros(3, dtype=ember.complex128, requires_grad=True)
    std = ember.ones(3, dtype=ember.float64, requires_grad=True)
    for lib, m, s in [(torch, torch.tensor(mean.detach().numpy(), requires_grad=True),
                       torch.tensor(std.detach().numpy(), requires_grad=True)),
                      (ember, mean, std)]:
        with pytest.raises(RuntimeError, match="complex"):
            lib.normal(m, s)
        with lib.no_grad():
            assert lib.normal(m, 1.0).dtype == lib.complex128
    with pytest.raises(RuntimeError, match="non-complex"):
        torch.normal(torch.zeros(2), torch.ones(2, dtype=torch.complex64))
    with pytest.raises(ember.DTypeError, match="normal: std must be real"):
        ember.normal(ember.zeros(2), ember.ones(2, dtype=ember.complex64))
