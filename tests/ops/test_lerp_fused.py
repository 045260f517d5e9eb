"""lerp of float32, float16 and bfloat16: PyTorch's values bit for bit (one rounding of
``input + w·diff``, as its fused multiply-add), in numba's loop and in NumPy's float64 twin;
PyTorch's gradients, tangents, broadcasting, in-place and ``out=`` forms."""

import numpy as np
import pytest
import torch

import ember

DTYPES = ["float32", "float16", "bfloat16"]
NUMBERS = [0.3, 0.7, -0.6, 0.5, -0.5, 0.49999997, 1.0, 0.0, -0.0, 2.5, -3.0, 1 / 3, 0.1]
SPECIAL = [0.0, -0.0, np.inf, -np.inf, np.nan, 1e30, -1e-30, 3e38, -3e38, 1e-40, 65504.0]
_BITS = {"float32": torch.int32, "float16": torch.int16, "bfloat16": torch.int16}


def _values(rng, shape, dtype):
    x = rng.standard_normal(shape) * np.exp(rng.uniform(-8, 8, shape))
    flat = x.reshape(-1)
    flat[: len(SPECIAL)] = SPECIAL[: flat.size]
    return torch.tensor(x, dtype=getattr(torch, dtype))


def _ember(t):
    return ember.tensor(t.float().numpy()).to(getattr(ember, str(t.dtype).split(".")[1]))


def _assert_same_bits(got, want):
    assert str(got.dtype).split(".")[-1] == str(want.dtype).split(".")[-1]
    g = torch.from_numpy(got.float().numpy()).to(want.dtype)  # (exact: the values are the dtype's)
    both_nan = g.isnan() & want.isnan()
    bits = _BITS[str(want.dtype).split(".")[1]]
    differ = (g.view(bits) != want.view(bits)) & ~both_nan
    assert not differ.any(), (f"{int(differ.sum())} of {differ.numel()} differ, e.g. "
                              f"{g[differ][:4].tolist()} vs {want[differ][:4].tolist()}")


@pytest.mark.parametrize("dtype", DTYPES)
def test_number_weights_match_torch_bit_for_bit(numba_or_numpy, dtype):
    rng = np.random.default_rng(0)
    a, b = _values(rng, (5003,), dtype), _values(rng, (5003,), dtype)
    for w in NUMBERS:
        _assert_same_bits(ember.lerp(_ember(a), _ember(b), w), torch.lerp(a, b, w))


@pytest.mark.parametrize("dtype", DTYPES)
def test_tensor_weights_match_torch_bit_for_bit(numba_or_numpy, dtype):
    rng = np.random.default_rng(1)
    a, b = _values(rng, (4099,), dtype), _values(rng, (4099,), dtype)
    w = torch.tensor(np.concatenate([NUMBERS, [np.nan, np.inf, -np.inf],
                                     rng.standard_normal(4099 - len(NUMBERS) - 3) * 1.5]),
                     dtype=getattr(torch, dtype))
    _assert_same_bits(ember.lerp(_ember(a), _ember(b), _ember(w)), torch.lerp(a, b, w))


@pytest.mark.parametrize("dtype", DTYPES)
def test_broadcasting_and_layouts_match_torch(numba_or_numpy, dtype):
    rng = np.random.default_rng(2)
    a, b, w = (_values(rng, s, dtype) for s in [(6, 1, 5), (7, 5), (5,)])
    _assert_same_bits(ember.lerp(_ember(a), _ember(b), _ember(w)), torch.lerp(a, b, w))
    _assert_same_bits(ember.lerp(_ember(b), _ember(a), 0.8), torch.lerp(b, a, 0.8))
    x, y = _values(rng, (9, 8), dtype), _values(rng, (8, 9), dtype)
    got = ember.lerp(_ember(x).T, _ember(y), 0.25)
    _assert_same_bits(got, torch.lerp(x.T, y, 0.25))
    assert got.stride() == torch.lerp(x.T, y, 0.25).stride()
    cl, c = _values(rng, (2, 3, 4, 5), dtype), _values(rng, (2, 3, 4, 5), dtype)
    e_cl = _ember(cl).contiguous(memory_format=ember.channels_last)
    got = ember.lerp(e_cl, _ember(c), _ember(c))
    want = torch.lerp(cl.contiguous(memory_format=torch.channels_last), c, c)
    _assert_same_bits(got, want)
    assert got.stride() == want.stride()


@pytest.mark.parametrize("dtype", DTYPES)
def test_in_place_and_out_match_torch(numba_or_numpy, dtype):
    rng = np.random.default_rng(3)
    a, b, w = (_values(rng, (4, 6), dtype) for _ in range(3))
    e = _ember(a)
    e.lerp_(_ember(b), 0.7)
    _assert_same_bits(e, a.clone().lerp_(b, 0.7))
    e = _ember(a)
    e.lerp_(_ember(b), _ember(w[0]))
    _assert_same_bits(e, a.clone().lerp_(b, w[0]))
    out = ember.empty(4, 6, dtype=getattr(ember, dtype))
    ember.lerp(_ember(a), _ember(b), _ember(w), out=out)
    _assert_same_bits(out, torch.lerp(a, b, w))


def test_large_arrays_shared_among_threads_match_torch():
    rng = np.random.default_rng(4)
    a, b, w = (torch.from_numpy(rng.standard_normal(5_000_001).astype(np.float32))
               for _ in range(3))
    _assert_same_bits(ember.lerp(_ember(a), _ember(b), 0.6), torch.lerp(a, b, 0.6))
    _assert_same_bits(ember.lerp(_ember(a), _ember(b), _ember(w)), torch.lerp(a, b, w))


@pytest.mark.parametrize("weight", [0.3, 0.8, "tensor"])
def test_gradients_and_second_order_match_torch(numba_or_numpy, weight):
    rng = np.random.default_rng(5)
    arrays = [rng.standard_normal(s).astype(np.float32) for s in [(3, 1, 4), (5, 4), (4,)]]
    results = []
    for lib in (torch, ember):
        a, b, w = (lib.tensor(x, requires_grad=True) for x in arrays)
        out = lib.lerp(a, b, w if weight == "tensor" else weight)
        leaves = [a, b, w] if weight == "tensor" else [a, b]
        grads = lib.autograd.grad((out * out).sum(), leaves, create_graph=True)
        second = lib.autograd.grad(sum((g * g).sum() for g in grads), leaves)
        results.append([t.detach().numpy() for t in (*grads, *second)])
    for got, want in zip(results[1], results[0], strict=True):
        np.testing.assert_allclose(got, want, rtol=2e-6, atol=1e-6)


@pytest.mark.parametrize("weight", [0.3, 0.8, "tensor"])
def test_forward_mode_matches_torch(weight):
    rng = np.random.default_rng(6)
    primals = [rng.standard_normal(s).astype(np.float32) for s in [(3, 4), (3, 4), (4,)]]
    tangents = [rng.standard_normal(p.shape).astype(np.float32) for p in primals]
    count = 3 if weight == "tensor" else 2
    results = []
    for lib, jvp in ((torch, torch.func.jvp), (ember, ember.func.jvp)):
        def fn(*xs, lib=lib):
            return lib.lerp(xs[0], xs[1], xs[2] if count == 3 else weight)

        _, tangent = jvp(fn, tuple(lib.tensor(p) for p in primals[:count]),
                         tuple(lib.tensor(t) for t in tangents[:count]))
        results.append(tangent.numpy())
    np.testing.assert_allclose(results[1], results[0], rtol=1e-6, atol=1e-6)


def test_gradcheck_float32_rules_and_float64():
    rng = np.random.default_rng(7)
    a, b, w = (ember.tensor(rng.standard_normal(s).astype(np.float32), requires_grad=True)
               for s in [(2, 3), (3,), (2, 3)])
    # (lerp is linear in input and end and bilinear with the weight: float32 central
    # differences are exact but for rounding)
    options = {"eps": 1e-2, "atol": 2e-2, "rtol": 1e-2}
    assert ember.autograd.gradcheck(lambda x, y, z: ember.lerp(x, y, z), (a, b, w), **options)
    assert ember.autograd.gradcheck(lambda x, y: ember.lerp(x, y, 0.7), (a, b), **options)
    assert ember.autograd.gradgradcheck(lambda x, y, z: ember.lerp(x, y, z), (a, b, w),
                                        **options)
    a64, b64, w64 = (ember.tensor(t.detach().numpy().astype(np.float64), requires_grad=True)
                     for t in (a, b, w))
    assert ember.autograd.gradcheck(lambda x, y, z: ember.lerp(x, y, z), (a64, b64, w64))
    assert ember.autograd.gradcheck(lambda x, y: ember.lerp(x, y, 0.7), (a64, b64))
    assert ember.autograd.gradgradcheck(lambda x, y, z: ember.lerp(x, y, z), (a64, b64, w64))


def test_vmap_and_meta():
    rng = np.random.default_rng(8)
    a, b = (ember.tensor(rng.standard_normal((4, 5)).astype(np.float32)) for _ in range(2))
    w = ember.tensor(rng.standard_normal(5).astype(np.float32))
    got = ember.func.vmap(lambda x, y: ember.lerp(x, y, w))(a, b)
    np.testing.assert_array_equal(got.numpy(), ember.lerp(a, b, w).numpy())
    got = ember.func.vmap(lambda x: ember.lerp(a[0], x, 0.9))(b)
    np.testing.assert_array_equal(got.numpy(), ember.lerp(a[0], b, 0.9).numpy())
    m = ember.lerp(ember.empty(3, 1, device="meta"), ember.empty(4, device="meta"), 0.2)
    assert m.shape == (3, 4) and m.device.type == "meta"


def test_float64_complex_and_mixed_dtypes_keep_the_composite():
    a, b = ember.tensor([1.0, 2.0], dtype=ember.float64), ember.tensor([3.0, -2.0],
                                                                        dtype=ember.float64)
    assert ember.lerp(a, b, 0.25).tolist() == [1.5, 1.0]
    z = ember.lerp(a.to(ember.complex64), b.to(ember.complex64), 0.5)
    assert z.dtype == ember.complex64 and z.tolist() == [2 + 0j, 0j]
    mixed = ember.lerp(a.float(), b.float(), ember.tensor(0.5, dtype=ember.float64))
    assert mixed.tolist() == [2.0, 0.0]
    assert ember.lerp(a.float(), b.float(), True).tolist() == [3.0, -2.0]


def _near_ties(rng, n):
    """Inputs whose float64 sum ``input + w·diff`` falls on a float32 tie in about 1 entry in
    16 (w about half an ulp of ``input`` over ``diff``), where rounding twice goes wrong."""
    a = (rng.uniform(1, 2, n) * np.exp2(rng.integers(-20, 20, n))).astype(np.float32)
    b = (a * rng.uniform(-4, 4, n)).astype(np.float32)
    half_ulp = np.spacing(a) / np.float32(2)
    w = (half_ulp / (b - a) * (1 + rng.uniform(-1e-7, 1e-7, n))).astype(np.float32)
    return a, b, w


def test_one_rounding_where_the_float64_sum_is_a_float32_tie(numba_or_numpy):
    a = torch.full((64,), 2 + 2.0 ** -22)
    b, w = torch.full((64,), 4.0), float(np.float32(2.0 ** -24 * (1 + 2.0 ** -23)))
    _assert_same_bits(ember.lerp(_ember(a), _ember(b), w), torch.lerp(a, b, w))
    a, b, w = (torch.from_numpy(x) for x in _near_ties(np.random.default_rng(5), 20011))
    _assert_same_bits(ember.lerp(_ember(a), _ember(b), _ember(w)), torch.lerp(a, b, w))
    _assert_same_bits(ember.lerp(_ember(a[::3]), _ember(b[::3]), _ember(w[::3])),
                      torch.lerp(a[::3], b[::3], w[::3]))
    for weight in w[:40].tolist():  # (number weights)
        _assert_same_bits(ember.lerp(_ember(a), _ember(b), weight), torch.lerp(a, b, weight))


@pytest.mark.parametrize("dtype", DTYPES)
def test_0d_weight_of_another_float_dtype_is_torchs(numba_or_numpy, dtype):
    rng = np.random.default_rng(7)
    a, b = _values(rng, (10007,), dtype), _values(rng, (10007,), dtype)
    for wdt in ["float64", "float32", "float16", "bfloat16"]:
        for v in (0.3, 0.999, 1 / 3, -0.7):
            w = torch.tensor(v, dtype=getattr(torch, wdt))
            got = ember.lerp(_ember(a), _ember(b), _ember(w))
            _assert_same_bits(got, torch.lerp(a, b, w))
    results = []  # (the gradients, the weight's in its own dtype)
    for lib in (torch, ember):
        x, y = (lib.tensor(t.float().numpy()[:50]).to(getattr(lib, dtype)) for t in (a, b))
        x, y = (t.clamp(-100, 100).requires_grad_() for t in (x, y))
        w = lib.tensor(0.3, dtype=lib.float32, requires_grad=True)
        lib.lerp(x, y, w).float().square().sum().backward()
        assert str(w.grad.dtype).endswith("float32") and str(x.grad.dtype).endswith(dtype)
        results.append([t.grad.float().numpy() for t in (x, y, w)])
    for got, want in zip(results[1], results[0], strict=True):
        np.testing.assert_allclose(got, want, rtol=2e-2 if dtype != "float32" else 1e-6)


@pytest.mark.parametrize("weight_kind", ["number", "tensor"])
def test_float64_infinities_and_signed_zeros_match_torch(weight_kind):
    # float64 took the composite: the where between its two forms gave NaN gradients where
    # PyTorch's rules give ±inf (end=inf, w=0: d/dw = g·(end - input) = -inf), and
    # ``end - diff·(1 - w)`` gave +0 where PyTorch's ``end + (w - 1)·diff`` gives -0 (dist53)
    # (each pair 16 times: torch's sign of a zero result differs in its scalar tail, +0 where
    # its vectorized body gives -0; 576 entries leave no tail)
    vals = [0.0, -0.0, 1.0, -2.0, np.inf, -np.inf]
    a, b = (np.repeat(v, 16) for v in zip(*[(x, y) for x in vals for y in vals]))
    g = np.linspace(-1, 1, a.size)
    for w in [0.0, 0.25, 1.0, 2.0, np.inf, -1.0]:
        ta, tb = (torch.tensor(x, requires_grad=True) for x in (a, b))
        ea, eb = (ember.tensor(x, requires_grad=True) for x in (a, b))
        tw, ew = w, w
        if weight_kind == "tensor":
            tw = torch.full_like(ta, w, requires_grad=True)
            ew = ember.full_like(ea, w, requires_grad=True)
        want, got = torch.lerp(ta, tb, tw), ember.lerp(ea, eb, ew)
        want.backward(torch.tensor(g))
        got.backward(ember.tensor(g))
        pairs = [(got, want), (ea.grad, ta.grad), (eb.grad, tb.grad)]
        if weight_kind == "tensor":
            pairs.append((ew.grad, tw.grad))
        for e, t in pairs:
            e, t = e.detach().numpy(), t.detach().numpy()
            np.testing.assert_array_equal(e, t, err_msg=f"w={w}")
            same_nan = np.isnan(e) == np.isnan(t)
            assert same_nan.all() and (np.signbit(e) == np.signbit(t))[~np.isnan(t)].all(), w


@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_a_broadcast_input_leaves_the_layout_to_the_others_as_torch(dtype):
    # (the primitive kept NumPy's C order: (60, 20, 5, 1) where torch gives channels-last)
    for weight in ("number", "tensor"):
        strides = []
        for m in (ember, torch):
            dt = getattr(m, dtype)
            a = m.ones(3, 1, 1, dtype=dt)
            b = m.ones(2, 3, 4, 5, dtype=dt).contiguous(memory_format=m.channels_last)
            w = 0.3 if weight == "number" else m.full((2, 3, 4, 5), 0.3, dtype=dt)
            strides.append(m.lerp(a, b, w).stride())
        assert strides[0] == strides[1], weight


def test_tangent_ignores_a_constant_weight_between_infinities_as_torch():
    # A weight with no tangent adds nothing; its zero tangent times end - input (inf - inf)
    # made the tangent NaN, e.g. quantile's over a row holding -inf.
    inf = float("inf")
    a = np.array([-inf, 1.0, inf, -inf])
    b = np.array([-inf, 2.0, inf, 3.0])
    for weight in ("tensor", "number"):
        got = []
        for m, jvp in ((torch, torch.func.jvp), (ember, ember.func.jvp)):
            w = m.tensor([0.3, 0.7, 0.5, 0.2], dtype=m.float64) if weight == "tensor" else 0.3
            _, t = jvp(lambda x, y, m=m, w=w: m.lerp(x, y, w), (m.tensor(a), m.tensor(b)),
                       (m.ones(4, dtype=m.float64), m.full((4,), 2.0, dtype=m.float64)))
            got.append(t.numpy())
        np.testing.assert_array_equal(got[1], got[0])
    got = []
    for m, jvp in ((torch, torch.func.jvp), (ember, ember.func.jvp)):
        x = m.tensor([[-inf], [0.5], [inf]], dtype=m.float64)
        _, t = jvp(lambda v, m=m: m.quantile(v, 0.3, dim=1), (x,), (m.ones_like(x),))
        got.append(t.numpy())
    np.testing.assert_array_equal(got[1], got[0])


@pytest.mark.parametrize("ends", ["float32", "float16", "bfloat16", "int8", "uint8"])
@pytest.mark.parametrize("weight", [("uint8", 118), ("int64", 300), ("bool", True),
                                    ("float64", 0.3), ("float16", 0.7)])
def test_zero_dim_weight_joins_the_result_dtype_as_torch(ends, weight):
    """A 0-d weight of another dtype is promoted with the ends, as PyTorch's: a uint8 118
    weight gave -12288 for float32 ends (1 - 118 wrapped in uint8), int8 ends with a float
    weight were refused (sweep58e)."""
    wdtype, w = weight
    if ends in ("int8", "uint8") and wdtype not in ("float64", "float16"):
        pytest.skip("integer ends and weight: refused by both")
    out = []
    for lib in (torch, ember):
        a = lib.tensor([1.0, -2.5, 3.25, 100.0]).to(getattr(lib, ends))
        b = lib.tensor([4.0, 7.5, -1.0, 90.0]).to(getattr(lib, ends))
        r = lib.lerp(a, b, lib.tensor(w, dtype=getattr(lib, wdtype)))
        out.append((str(r.dtype).split(".")[-1], r.float().tolist()))
    assert out[1] == out[0]


def test_zero_dim_float64_weight_gradient_keeps_its_dtype():
    w = ember.tensor(0.3, dtype=ember.float64, requires_grad=True)
    ember.lerp(ember.zeros(3), ember.ones(3), w).sum().backward()
    assert w.grad.dtype is ember.float64 and w.grad.item() == 3.0
