"""Arithmetic as PyTorch's CPU kernels round it, bit for bit (:mod:`ember.ops.torch_steps`):
x ** 0.5, -0.5, 3 and -2 (float32/float64/bfloat16) as sqrt, 1/sqrt, x * x * x and
1 / (x * x), with their gradients at -0 and -inf; float16/bfloat16 floor division."""

import numpy as np
import pytest
import torch

import ember


def _values(n: int) -> np.ndarray:
    rng = np.random.default_rng(0)
    return np.concatenate([rng.uniform(0, 10, n), rng.uniform(1e3, 6e4, n // 4),
                           rng.standard_normal(n) * 1e-3])


@pytest.mark.parametrize("dtype", ["float32", "float64", "bfloat16"])
@pytest.mark.parametrize("exponent", [-0.5, 3, -2])
def test_pow_shortcuts_are_torchs_bit_for_bit(dtype, exponent):
    # (before: NumPy's power, an ulp off torch's for about one value in three)
    values = _values(4096)  # (a multiple of 32: torch's vector loop all through)
    t = torch.tensor(values).to(getattr(torch, dtype))
    e = ember.tensor(values).to(getattr(ember, dtype))
    want = (t ** exponent).double().numpy()
    np.testing.assert_array_equal((e ** exponent).to(ember.float64).numpy(), want)


@pytest.mark.parametrize("dtype", ["float32", "float64", "bfloat16"])
def test_pow_half_and_minus_half_at_signed_zero_and_minus_inf_as_torch(dtype):
    # (before: (-0) ** -0.5 was inf, torch's rsqrt -inf; (-inf) ** -0.5 0, torch's NaN)
    values = [-0.0, 0.0, -np.inf, np.inf, -4.0, 4.0, np.nan]
    for exponent in (0.5, -0.5):
        t = torch.tensor(values, dtype=torch.float64).to(getattr(torch, dtype)) ** exponent
        e = ember.tensor(values, dtype=ember.float64).to(getattr(ember, dtype)) ** exponent
        got, want = e.to(ember.float64).numpy(), t.double().numpy()
        np.testing.assert_array_equal(got, want)
        real = ~np.isnan(want)  # (a NaN's sign bit aside)
        np.testing.assert_array_equal(np.signbit(got[real]), np.signbit(want[real]))


def test_pow_half_gradient_at_minus_zero_and_minus_inf_as_torch():
    # (the gradient 0.5 * x ** -0.5 is torch's rsqrt too: -inf at -0, NaN at -inf)
    values = [-0.0, 0.0, -np.inf, 4.0, 0.25]
    for exponent in (0.5, 1.5, -1.0, 4.0):
        grads = []
        for lib in (torch, ember):
            x = lib.tensor(values, dtype=lib.float64, requires_grad=True)
            (x ** exponent).sum().backward()
            grads.append(np.asarray(x.grad.numpy()))
        np.testing.assert_array_equal(grads[1], grads[0])


@pytest.mark.parametrize("dtype", ["float16", "bfloat16"])
def test_half_floor_divide_rounds_each_step_as_torch(dtype):
    # (before: NumPy's float32 loop, rounded once: -3968 // 1.1318359375 was -3506 in
    # float16, torch's -3508; 1 result in 16 apart)
    rng = np.random.default_rng(1)
    a = np.concatenate([rng.uniform(-1e4, 1e4, 4096), [1.0, -1.0, 0.0, -0.0, 5.0, np.inf,
                                                         -np.inf, np.nan, 3.0, -3.0]])
    b = np.concatenate([rng.standard_normal(4096) * 3, [0.0, 0.0, 0.0, 2.0, -0.0, 2.0,
                                                         -3.0, 1.0, np.inf, np.inf]])
    ta, tb = (torch.tensor(v).to(getattr(torch, dtype)) for v in (a, b))
    ea, eb = (ember.tensor(v).to(getattr(ember, dtype)) for v in (a, b))
    pairs = [(ta // tb, ea // eb), (7.5 // tb, 7.5 // eb),
             (torch.div(ta, tb, rounding_mode="floor"), ember.div(ea, eb, rounding_mode="floor")),
             (ta[:6, None] // tb[:5], ea[:6, None] // eb[:5])]  # (broadcast)
    for want, got in pairs:
        assert got.dtype.name == dtype and tuple(got.shape) == tuple(want.shape)
        w, g = want.double().numpy(), got.to(ember.float64).numpy()
        np.testing.assert_array_equal(g, w)
        real = ~np.isnan(w)
        np.testing.assert_array_equal(np.signbit(g[real]), np.signbit(w[real]))


@pytest.mark.parametrize("dtype", ["float16", "bfloat16", "float32", "float64"])
def test_reciprocal_and_rsqrt_gradients_round_as_torch(dtype):
    # (before: -(g * y * y) for torch's -(g * (y * y)), and y * y * y for its pow(y, 3),
    # which float16 rounds once: an ulp apart at times, 2.0 / x's gradient too)
    rng = np.random.default_rng(0)
    v, g = np.abs(rng.standard_normal(4096)) + 0.01, rng.standard_normal(4096)
    grads = []
    for lib in (torch, ember):
        x = lib.tensor(v).to(getattr(lib, dtype)).requires_grad_()
        gg = lib.tensor(g).to(getattr(lib, dtype))
        grads.append([np.asarray(lib.autograd.grad(out, x, gg)[0].to(lib.float64).numpy())
                      for out in (x.reciprocal(), 2.0 / x, x.rsqrt())])
    for want, got in zip(*grads):
        np.testing.assert_array_equal(got, want)


@pytest.mark.parametrize("dtype", ["float16", "bfloat16"])
@pytest.mark.parametrize("n", [16, 1023, 5000])
def test_half_floor_divide_matches_torch_on_both_paths(dtype, n):
    # (below 1024 elements NumPy's result stands for small quotients and the rest take the
    # steps; from 1024 all do, in float32 rounded after each): zeros, infinities, NaN,
    # subnormals, quotients near the cut (256, 32) and past the half range
    rng = np.random.default_rng(n)
    specials = [0.0, -0.0, np.inf, -np.inf, np.nan, 1.0, -1.0, 6e-8]
    b = np.concatenate([rng.standard_normal(n) * rng.choice([1e-4, 1.0, 100.0], n),
                        rng.choice(specials, n)])
    q = rng.uniform(-400, 400, 2 * n)
    a = np.concatenate([q[:n] * b[:n] * (1 + rng.standard_normal(n) * 1e-3),
                        rng.choice(specials + [7e4, -3e38], n)])
    keep = rng.permutation(2 * n)[:n]
    ta, tb = (torch.tensor(v[keep]).to(getattr(torch, dtype)) for v in (a, b))
    ea, eb = (ember.tensor(v[keep]).to(getattr(ember, dtype)) for v in (a, b))
    w, g = (ta // tb).double().numpy(), (ea // eb).to(ember.float64).numpy()
    np.testing.assert_array_equal(g, w)
    real = ~np.isnan(w)
    np.testing.assert_array_equal(np.signbit(g[real]), np.signbit(w[real]))


def test_bfloat16_pow_minus_half_rounds_the_root_in_scalar_steps_as_torch():
    # (torch's loop takes 64 bfloat16 elements a vector step, 1 / sqrt rounded once, and the
    # rest of a contiguous run one at a time, its root rounded first: [1.1171875, 0.25195312]
    # ** -0.5 was [0.9453, 1.9922] where torch's is [0.9492, 2.0])
    rng = np.random.default_rng(3)
    layouts = [lambda x: x, lambda x: x[::2], lambda x: x.reshape(2, -1),
               lambda x: x.reshape(2, -1).T, lambda x: x.reshape(2, -1)[:, 1:],
               lambda x: x[None].expand(3, x.shape[0]), lambda x: x[0]]
    for _ in range(120):
        n = 2 * int(rng.integers(1, 151))
        v = np.abs(rng.standard_normal(n)) * rng.choice([1e-3, 1.0, 100.0], n)
        v[rng.random(n) < 0.05] = rng.choice([0.0, -0.0, np.inf, -np.inf, np.nan, -1.0])
        layout = layouts[int(rng.integers(len(layouts)))]
        t = layout(torch.tensor(v).to(torch.bfloat16)) ** -0.5
        e = layout(ember.tensor(v).to(ember.bfloat16)) ** -0.5
        np.testing.assert_array_equal(e.to(ember.float64).numpy(), t.double().numpy())


@pytest.mark.parametrize("dtype, exponent", [("bfloat16", -0.5), ("complex64", -2)])
def test_pow_scalar_steps_of_strided_and_broadcast_views_as_torch(dtype, exponent):
    # (torch lays a view's result out in the view's order and vectorizes an innermost run
    # along which the view is contiguous or broadcast; ember took x.T[:, :33]'s and
    # x[:, :1].expand's runs as all scalar: bfloat16 ** -0.5 off in ~1 element of 5)
    rng = np.random.default_rng(5)
    views = [lambda x: x.T[:, :33], lambda x: x.T[1:, ::2], lambda x: x[:, :1].expand(40, 100),
             lambda x: x.T[:, None, :7].expand(40, 3, 7), lambda x: x.permute(1, 0)[:20, :10]]
    for view in views:
        v = np.abs(rng.standard_normal((40, 40))) + 1j * rng.standard_normal((40, 40))
        v = v.real if dtype == "bfloat16" else v
        t = view(torch.tensor(v).to(getattr(torch, dtype)))
        e = view(ember.tensor(v).to(getattr(ember, dtype)))
        want = (t ** exponent).to(torch.complex128).numpy()
        np.testing.assert_array_equal((e ** exponent).to(ember.complex128).numpy(), want)


def _parts(z: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    return np.asarray(z.real), np.asarray(z.imag)


@pytest.mark.parametrize("dtype", ["complex64", "complex128"])
def test_complex_pow_shortcuts_are_torchs(dtype):
    # (before: ** -2 was NumPy's power, an ulp off torch's 1 / (z * z) in ~8% of complex64
    # values; (1e300+1j) ** -2 NaN where torch's is 0; 0.5, -0.5, -1 already matched)
    rng = np.random.default_rng(4)
    n = 4096
    v = (rng.standard_normal(n) + 1j * rng.standard_normal(n)) * \
        rng.choice([1.0, 1e-3, 1e3, 1e-30, 1e30, 1e-160, 1e160], n)
    v[rng.random(n) < 0.03] = rng.choice(
        [0, -0.0, np.inf, -np.inf, np.nan, 1e300 + 1j, complex(0, np.inf),
         complex(-0.0, -0.0), complex(np.inf, np.inf), complex(1, np.nan)])
    t, e = torch.tensor(v).to(getattr(torch, dtype)), ember.tensor(v).to(getattr(ember, dtype))
    with np.errstate(all="ignore"):
        for exponent in (0.5, -0.5, -1, -2, 2, 3):
            # (torch's scalar steps, past a contiguous run's last 128-byte step or strided,
            # fuse a product: -2's are NumPy's square, 2's and 3's are left)
            views = [lambda x: x, lambda x: x[:37], lambda x: x[::3], lambda x: x[7]]
            for view in views if exponent not in (2, 3) else views[:1]:
                want = _parts((view(t) ** exponent).numpy())
                got = _parts((view(e) ** exponent).numpy())
                for w, g in zip(want, got):
                    np.testing.assert_array_equal(g, w)


@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_pow_tensor_exponent_half_at_minus_zero_and_minus_inf_as_torch(dtype):
    # (before: NumPy's power takes sqrt for a one-element exponent 0.5: -0 and NaN at -0 and
    # -inf, where torch's (C's pow) are +0 and +inf)
    base = [-0.0, 0.0, -np.inf, np.inf, 4.0, -4.0, np.nan]
    for exponent in (0.5, [0.5], [[0.5]], [0.5, -0.5, 2.0, 3.0, 0.5, 1.0, 0.5]):
        got, want = (lib.pow(lib.tensor(base, dtype=getattr(lib, dtype)),
                             lib.tensor(exponent, dtype=getattr(lib, dtype))).double().numpy()
                     for lib in (ember, torch))
        np.testing.assert_array_equal(got, want)
        real = ~np.isnan(want)
        np.testing.assert_array_equal(np.signbit(got[real]), np.signbit(want[real]))
