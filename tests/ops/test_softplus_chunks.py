"""softplus on a large float32 array (softplus32: L2-sized chunks shared among the cores):
correctly rounded, PyTorch's beta/threshold, and mish and logsigmoid built on it."""

import math

import numpy as np
import pytest
import torch
import torch.nn.functional as F

import ember

SPECIAL = [-1e30, -88.0, -0.0, 0.0, 1e-8, 16.5, 20.0, 20.5, 90.0, 1e30, np.inf, -np.inf]


def _values(n: int) -> np.ndarray:
    rng = np.random.default_rng(0)
    return np.concatenate([rng.standard_normal(n) * 20, SPECIAL]).astype(np.float32)


def test_large_float32_softplus_is_correctly_rounded_over_the_chunks_and_threads():
    values = _values(600_000)  # (over 2**18 per share: two pieces of parallel.run)
    exact = np.logaddexp(0, values.astype(np.longdouble))
    got = ember.softplus(ember.tensor(values), threshold=math.inf).numpy()
    finite = np.isfinite(exact)
    ulps = np.abs((got[finite] - exact[finite]) / np.spacing(np.abs(got[finite])))
    assert ulps.max() <= 0.5 + 1e-6
    assert (got[~finite] == exact[~finite]).all()
    # the default threshold (20) changes no value at beta 1: softplus(x > 16) rounds to x
    assert np.array_equal(ember.softplus(ember.tensor(values)).numpy(), got)
    assert np.isnan(ember.softplus(ember.tensor(np.full(5000, np.nan, np.float32))).numpy()).all()


@pytest.mark.parametrize("beta,threshold", [(1.0, 20.0), (1.5, 4.0), (0.5, 1.0), (2.0, -3.0)])
def test_large_float32_softplus_matches_torch_with_beta_and_threshold(beta, threshold):
    values = _values(300_000)
    x = ember.tensor(values, requires_grad=True)
    t = torch.tensor(values, requires_grad=True)
    a, b = ember.softplus(x, beta=beta, threshold=threshold), F.softplus(t, beta, threshold)
    np.testing.assert_allclose(a.detach().numpy(), b.detach().numpy(), rtol=1e-6, atol=1e-37)
    scaled = values * np.float32(beta)  # the linear side is the input itself, bit for bit
    assert np.array_equal(a.detach().numpy()[scaled > threshold], values[scaled > threshold])
    g = np.random.default_rng(1).standard_normal(values.shape).astype(np.float32)
    a.backward(ember.tensor(g))
    b.backward(torch.tensor(g))
    np.testing.assert_allclose(x.grad.numpy(), t.grad.numpy(), rtol=1e-6, atol=1e-30)


def test_large_float32_softplus_keeps_its_shape_and_reads_a_strided_input():
    values = _values(20_000)[:20_000].reshape(100, 200)
    view = ember.tensor(values).transpose(0, 1)  # (not contiguous)
    got = ember.softplus(view, beta=2.0, threshold=5.0)
    want = F.softplus(torch.tensor(values).T, 2.0, 5.0)
    assert tuple(got.shape) == (200, 100)
    np.testing.assert_allclose(got.numpy(), want.numpy(), rtol=1e-6, atol=1e-37)


def test_large_float32_mish_matches_torch():
    values = _values(100_000)[np.isfinite(_values(100_000))]
    x, t = ember.tensor(values, requires_grad=True), torch.tensor(values, requires_grad=True)
    a, b = ember.mish(x), F.mish(t)
    np.testing.assert_allclose(a.detach().numpy(), b.detach().numpy(), rtol=2e-6, atol=1e-37)
    a.sum().backward()
    b.sum().backward()
    np.testing.assert_allclose(x.grad.numpy(), t.grad.numpy(), rtol=1e-5,
                               atol=1e-7)  # (near its zero crossings)


def test_float64_softplus_gradcheck():
    x = ember.tensor(np.random.default_rng(2).standard_normal(64) * 4, requires_grad=True)
    assert ember.autograd.gradcheck(lambda v: ember.softplus(v, beta=1.5, threshold=3.0), (x,))


@pytest.mark.parametrize("size", [50, 300_000])
def test_softplus_grad_gives_the_composites_bits(size):
    # softplus_grad (one op, chunked on the cores when large) against the Ember ops it
    # replaced: where(beta·x > threshold, v, v · sigmoid(beta·x))
    values = _values(size)
    v = np.random.default_rng(3).standard_normal(values.shape).astype(np.float32)
    x = ember.tensor(values, requires_grad=True)
    ember.softplus(x, beta=1.5, threshold=4.0).backward(ember.tensor(v))
    scaled = ember.tensor(values) * 1.5
    want = ember.where(scaled > 4.0, ember.tensor(v), ember.tensor(v) * ember.sigmoid(scaled))
    assert np.array_equal(x.grad.numpy(), want.numpy(), equal_nan=True)


@pytest.mark.parametrize("beta,threshold", [(1.0, 20.0), (1.5, 0.5)])
def test_softplus_second_order_gradcheck_and_torch(beta, threshold):
    rng = np.random.default_rng(4)
    a = rng.standard_normal(40) * 3
    x = ember.tensor(a, requires_grad=True)
    f = lambda v: ember.softplus(v, beta=beta, threshold=threshold)  # noqa: E731
    assert ember.autograd.gradgradcheck(f, (x,))
    t = torch.tensor(a, requires_grad=True)
    w = rng.standard_normal(40)
    gx = ember.autograd.grad((f(x) * ember.tensor(w)).sum(), x, create_graph=True)[0]
    (gx ** 2).sum().backward()
    gt = torch.autograd.grad((F.softplus(t, beta, threshold) * torch.tensor(w)).sum(), t,
                             create_graph=True)[0]
    (gt ** 2).sum().backward()
    np.testing.assert_allclose(gx.detach().numpy(), gt.detach().numpy(), rtol=1e-12)
    np.testing.assert_allclose(x.grad.numpy(), t.grad.numpy(), rtol=1e-10, atol=1e-14)
    # forward mode over the backward
    d = ember.tensor(rng.standard_normal(40))
    _, tangent = ember.func.jvp(lambda u: ember.func.grad(lambda z: (f(z) * ember.tensor(w)
                                                                     ).sum())(u), (x.detach(),),
                                (d,))
    want = torch.func.jvp(torch.func.grad(lambda z: (F.softplus(z, beta, threshold)
                                                     * torch.tensor(w)).sum()),
                          (t.detach(),), (torch.tensor(d.numpy()),))[1]
    np.testing.assert_allclose(tangent.numpy(), want.numpy(), rtol=1e-10, atol=1e-14)


def test_half_softplus_gradient_matches_torch():
    values = _values(5000)[:5000]
    values = values[np.abs(values) < 60]
    x = ember.tensor(values, dtype=ember.float16, requires_grad=True)
    t = torch.tensor(values, dtype=torch.float16, requires_grad=True)
    ember.softplus(x).sum().backward()
    F.softplus(t).sum().backward()
    np.testing.assert_allclose(x.grad.numpy().astype(np.float32),
                               t.grad.numpy().astype(np.float32), rtol=1e-3, atol=1e-3)


def test_softplus_gradient_under_vmap_matches_torch():
    a = np.random.default_rng(5).standard_normal((3, 7)) * 4
    f = lambda z: ember.softplus(z, beta=2.0, threshold=3.0).sum()  # noqa: E731
    got = ember.func.vmap(ember.func.grad(f))(ember.tensor(a))
    want = torch.func.vmap(torch.func.grad(lambda z: F.softplus(z, 2.0, 3.0).sum()))(
        torch.tensor(a))
    np.testing.assert_allclose(got.numpy(), want.numpy(), rtol=1e-12)


def test_large_softplus_keeps_a_channels_last_layout_and_mixed_layout_gradients():
    a = np.random.default_rng(6).standard_normal((2, 8, 32, 32)).astype(np.float32) * 4
    x = ember.tensor(a).to(memory_format=ember.channels_last).requires_grad_()
    y, m = ember.softplus(x, beta=2.0, threshold=3.0), ember.mish(x)
    assert y.is_contiguous(memory_format=ember.channels_last)
    assert m.is_contiguous(memory_format=ember.channels_last)
    t = torch.tensor(a, requires_grad=True)
    z = F.softplus(t, 2.0, 3.0)
    np.testing.assert_allclose(y.detach().numpy(), z.detach().numpy(), rtol=1e-6, atol=1e-37)
    g = np.random.default_rng(7).standard_normal(a.shape).astype(np.float32)
    y.backward(ember.tensor(g))  # (a C-ordered gradient against a channels-last input)
    z.backward(torch.tensor(g))
    np.testing.assert_allclose(x.grad.numpy(), t.grad.numpy(), rtol=1e-6, atol=1e-30)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("n", [100, 5000])
def test_softplus_and_mish_of_an_expanded_input_are_c_ordered_as_torch(dtype, n):
    # NumPy lays a copy of a broadcast array out F-like (its zero stride sorts last)
    row = np.random.default_rng(8).standard_normal((1, n)).astype(dtype) * 4
    e, t = ember.tensor(row).expand(4, n), torch.tensor(row).expand(4, n)
    for ours, theirs in ((ember.softplus(e), F.softplus(t)), (ember.mish(e), F.mish(t))):
        assert ours.stride() == theirs.stride() == (n, 1)
        np.testing.assert_allclose(ours.numpy(), theirs.numpy(), rtol=2e-6, atol=1e-37)


@pytest.mark.parametrize("channels_last", [False, True])
@pytest.mark.parametrize("reduce", ["sum0", "sum"])
def test_softplus_gradient_of_a_broadcast_cotangent_has_torchs_strides(channels_last, reduce):
    # y.sum(0) with a vector cotangent: a zero stride on dim 0 only (its other dims are C's,
    # so torch gives C); y.sum(): zero strides everywhere (x's layout)
    a = np.random.default_rng(9).standard_normal((2, 8, 32, 32)).astype(np.float32) * 4
    w = np.random.default_rng(10).standard_normal((8, 32, 32)).astype(np.float32)
    x, t = ember.tensor(a), torch.tensor(a)
    if channels_last:
        x, t = x.to(memory_format=ember.channels_last), t.to(memory_format=torch.channels_last)
    x, t = x.requires_grad_(), t.requires_grad_()
    y, z = ember.softplus(x, beta=2.0, threshold=3.0), F.softplus(t, 2.0, 3.0)
    if reduce == "sum0":
        got = ember.autograd.grad(y.sum(0), x, ember.tensor(w))[0]
        want = torch.autograd.grad(z.sum(0), t, torch.tensor(w))[0]
    else:
        got, want = ember.autograd.grad(y.sum(), x)[0], torch.autograd.grad(z.sum(), t)[0]
    assert got.stride() == tuple(want.stride())
    np.testing.assert_allclose(got.numpy(), want.numpy(), rtol=1e-6, atol=1e-30)


def test_softplus_grad_reads_a_broadcast_cotangent_without_copying_it_whole():
    import tracemalloc

    from ember.ops.primitive import apply
    from ember.ops.softplus_mish import SoftplusGrad

    a = np.random.default_rng(11).standard_normal((256, 4096)).astype(np.float32) * 4
    w = np.random.default_rng(12).standard_normal(4096).astype(np.float32)
    x, v = ember.tensor(a), ember.tensor(w).expand(256, 4096)  # (a zero stride on dim 0)
    want = apply(SoftplusGrad, ember.tensor(np.broadcast_to(w, a.shape).copy()), x,
                 beta=2.0, threshold=3.0).numpy()
    tracemalloc.start()
    got = apply(SoftplusGrad, v, x, beta=2.0, threshold=3.0)
    peak = tracemalloc.get_traced_memory()[1]
    tracemalloc.stop()
    assert peak < 1.5 * a.nbytes  # the result, and no full-size copy of v (2x before)
    assert np.array_equal(got.numpy(), want)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("beta,threshold", [(2.0, 3.0), (0.5, 1.0), (1.0, math.nan)])
def test_softplus_second_derivative_at_the_threshold_matches_torch(dtype, beta, threshold):
    # torch multiplies by beta·x < threshold: 0 at equality (x = 1.5 at beta 2, threshold 3)
    # and everywhere for a NaN threshold
    a = np.tile(np.array([1.5, 2.0, 0.5, 40.0, -3.0], dtype), 1200)  # (large: chunked)
    x, t = ember.tensor(a, requires_grad=True), torch.tensor(a, requires_grad=True)
    g = ember.autograd.grad(ember.softplus(x, beta=beta, threshold=threshold).sum(), x,
                            create_graph=True)[0]
    h = ember.autograd.grad(g.sum(), x)[0]
    tg = torch.autograd.grad(F.softplus(t, beta, threshold).sum(), t, create_graph=True)[0]
    th = torch.autograd.grad(tg.sum(), t)[0]
    np.testing.assert_allclose(h.numpy(), th.numpy(), rtol=1e-5, atol=1e-7)


def _twin(values: np.ndarray, beta: float, threshold: float) -> np.ndarray:
    """The NumPy twin's steps (and the old implementation's values): ``beta·x`` in float32,
    ``max(s, 0) + log1p(exp(-|s|))`` in float64 rounded once, ``/ beta`` in float32."""
    scaled = values * np.float32(beta)
    wide = scaled.astype(np.float64)
    with np.errstate(over="ignore", invalid="ignore"):
        soft = (np.maximum(wide, 0) + np.log1p(np.exp(-np.abs(wide)))).astype(np.float32)
    soft = soft / np.float32(beta)
    return np.where(scaled > np.float32(threshold), values, soft)


def _same_bits(got: np.ndarray, want: np.ndarray) -> bool:
    """Equal bit for bit (a nan's sign and payload aside; -0.0 is not 0.0)."""
    both_nan = np.isnan(got) & np.isnan(want)
    return bool(((got.view(np.uint32) == want.view(np.uint32)) | both_nan).all())


@pytest.mark.parametrize("beta,threshold", [(1.0, math.inf), (1.0, 20.0), (1.5, 4.0),
                                            (0.3, 0.1), (2.0, -3.0)])
def test_float32_softplus_is_the_twins_bit_for_bit_with_numba_and_without(
        numba_or_numpy, beta, threshold):
    # every 4099th float32 bit pattern (nan, ±inf, subnormals, ±0 among them), in one chunk,
    # in many (over the cores), below the small-array size, and strided
    bits = np.arange(0, 2**32, 4099, dtype=np.uint64).astype(np.uint32)
    values = np.concatenate([bits.view(np.float32), np.float32(SPECIAL)])
    for x in (values, values[:16_000], values[:1000], values[:9]):
        got = ember.softplus(ember.tensor(x), beta=beta, threshold=threshold).numpy()
        assert _same_bits(got, _twin(x, beta, threshold))
    strided = values[:40_000].reshape(200, 200)[:, ::3]
    got = ember.softplus(ember.tensor(strided), beta=beta, threshold=threshold).numpy()
    assert _same_bits(got, _twin(strided, beta, threshold))


def test_float32_softplus_numba_kernel_matches_the_correctly_rounded_value():
    numba = pytest.importorskip("numba")  # noqa: F841  (the kernel's own module needs it)
    from ember.backend import compiled
    from ember.ops import softplus_numba

    x = np.linspace(-120, 30, 200_001, dtype=np.float32)
    out = np.empty_like(x)
    compiled.ready(softplus_numba.softplus32)(x, out, np.float32(1), np.float32(np.inf))
    exact = np.logaddexp(0, x.astype(np.longdouble))
    ulps = np.abs((out - exact) / np.spacing(np.float32(exact)))
    assert ulps.max() <= 0.5 + 1e-6


@pytest.mark.parametrize("dtype", ["float32", "float64", "float16", "bfloat16"])
@pytest.mark.parametrize("size", [7, 300, 40000])
def test_logsigmoid_is_one_op_with_the_composite_s_bits(numba_or_numpy, dtype, size):
    """logsigmoid is one softplus application at beta = -1 (it was -softplus(-x): three ops,
    three tape nodes); the same bits in values and gradients, numba's passes and NumPy's."""
    rng = np.random.default_rng(1)
    values = np.concatenate([rng.standard_normal(size) * 10, [0.0, -0.0, np.inf, -np.inf,
                                                             np.nan, 1e-40, -100.0, 88.0]])
    x = ember.tensor(values, dtype=getattr(ember, dtype), requires_grad=True)
    g = ember.tensor(rng.standard_normal(values.size), dtype=getattr(ember, dtype))
    y = ember.logsigmoid(x)
    assert y.grad_fn.next_functions[0][0].name() == "torch::autograd::AccumulateGrad"
    (got,) = ember.autograd.grad(y, x, g)
    composite = -ember.softplus(-x, threshold=math.inf)
    (want,) = ember.autograd.grad(composite, x, g)
    for a, b in ((y.detach(), composite.detach()), (got, want)):  # (bits; a NaN's sign aside)
        a, b = a.float().numpy() if dtype == "bfloat16" else a.numpy(), \
            b.float().numpy() if dtype == "bfloat16" else b.numpy()
        assert (np.isnan(a) == np.isnan(b)).all()
        assert a[~np.isnan(a)].tobytes() == b[~np.isnan(b)].tobytes()
