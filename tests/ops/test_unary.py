"""Unary math against PyTorch and finite differences (see optable.py), plus dtype rules, erf's
accuracy, edge values and in-place forms."""

import math

import numpy as np
import pytest
import torch

import ember
from tests.ops.optable import OpCase, S, arg, op_tests


def samples(low: float = -2.0, high: float = 2.0) -> list:
    return [S(arg(3, 4, low=low, high=high)), S(arg(low=low, high=high)),
            S(arg(0, 3, low=low, high=high)), S(arg(2, 3, low=low, high=high, noncontig=True))]


def case(name: str, low: float = -2.0, high: float = 2.0, **kw) -> OpCase:
    return OpCase(name, getattr(ember, name), getattr(torch, name), samples(low, high), **kw)


CASES = [
    case("exp"), case("exp2"), case("expm1"),
    case("log", 0.2, 3.0), case("log2", 0.2, 3.0), case("log10", 0.2, 3.0),
    case("log1p", -0.8, 2.0),
    case("sqrt", 0.2, 3.0), case("rsqrt", 0.2, 3.0), case("reciprocal", 0.3, 2.0),
    case("sin"), case("cos"), case("tan", -1.2, 1.2),
    case("asin", -0.9, 0.9), case("acos", -0.9, 0.9), case("atan"),
    case("sinh"), case("cosh"), case("tanh"),
    case("asinh"), case("acosh", 1.2, 3.0), case("atanh", -0.9, 0.9),
    case("sigmoid", -4.0, 4.0), case("erf"),
    case("abs"), case("square"), case("frac", -3.0, 3.0),
    # zero gradients: no second-order graph to check
    case("sign", gradgrad=False), case("floor", -3.0, 3.0, gradgrad=False),
    case("ceil", -3.0, 3.0, gradgrad=False), case("trunc", -3.0, 3.0, gradgrad=False),
    OpCase("round", ember.round, torch.round, samples(-3.0, 3.0), gradgrad=False),
    OpCase("round_decimals", lambda x: ember.round(x, decimals=1),
           lambda x: torch.round(x, decimals=1), samples(-3.0, 3.0)[:2], gradgrad=False),
    OpCase("neg_reciprocal", lambda x: ember.reciprocal(x), torch.reciprocal,
           [S(arg(3, low=-2.0, high=-0.3))]),
    OpCase("method_exp", lambda x: x.exp(), lambda x: x.exp(), [S(arg(2, 3))]),
    OpCase("abs_operator", lambda x: abs(x), lambda x: abs(x), [S(arg(2, 3))]),
]

test_forward, test_backward, test_gradcheck, test_gradgradcheck, test_jvp = op_tests(CASES)

FLOAT_MATH = ["exp", "exp2", "expm1", "log", "log2", "log10", "log1p", "sqrt", "rsqrt",
              "reciprocal", "sin", "cos", "tan", "asin", "acos", "atan", "sinh", "cosh", "tanh",
              "asinh", "acosh", "atanh", "sigmoid", "erf"]
SAME_DTYPE = ["abs", "sign", "square", "floor", "ceil", "round", "trunc"]
INTEGER_INPUTS = [np.array([1, -2, 3, 0]), np.array([1, 2, 250], dtype=np.uint8),
                  np.array([True, False])]


@pytest.mark.parametrize("name", FLOAT_MATH + SAME_DTYPE + ["frac", "sgn", "fix"])
@pytest.mark.parametrize("values", INTEGER_INPUTS, ids=["int64", "uint8", "bool"])
def test_integer_and_bool_inputs_match_torch(name, values):
    def run(fn, x):
        try:
            return fn(x)
        except (TypeError, RuntimeError, NotImplementedError, ValueError) as exc:
            return exc

    mine = run(getattr(ember, name), ember.from_numpy(values))
    ref = run(getattr(torch, name), torch.from_numpy(values))
    if isinstance(ref, Exception):
        assert isinstance(mine, ember.EmberError), f"{name}: torch raises, Ember gave {mine}"
        return
    assert not isinstance(mine, Exception), f"{name}: {mine}"
    assert mine.dtype.name == str(ref.dtype).removeprefix("torch.")
    np.testing.assert_allclose(mine.numpy().astype(np.float64), ref.numpy().astype(np.float64),
                               rtol=1e-6, equal_nan=True)


def test_float_math_keeps_the_default_dtype_setting():
    ember.set_default_dtype(ember.float64)
    try:
        assert ember.sin(ember.tensor([1, 2])).dtype is ember.float64
    finally:
        ember.set_default_dtype(ember.float32)


@pytest.mark.parametrize("dtype", ["float16", "bfloat16", "float32"])
@pytest.mark.parametrize("name", ["exp", "log", "sqrt", "sin", "tanh", "sigmoid", "erf", "abs",
                                  "floor", "round", "rsqrt", "expm1", "reciprocal"])
def test_low_precision_dtypes_match_torch(name, dtype):
    values = np.linspace(0.1, 4.0, 41) if name in ("log", "sqrt", "rsqrt") else \
        np.linspace(-12.0, 12.0, 41)
    t = torch.tensor(values, dtype=getattr(torch, dtype))
    mine = getattr(ember, name)(ember.tensor(values, dtype=getattr(ember, dtype)))
    ref = getattr(torch, name)(t)
    assert mine.dtype.name == dtype
    tol = {"float16": 2e-3, "bfloat16": 1.6e-2, "float32": 2e-6}[dtype]
    np.testing.assert_allclose(mine.float().numpy(), ref.float().numpy(), rtol=tol, atol=tol)


def test_erf_is_accurate_in_float64():
    x = np.concatenate([np.linspace(-7, 7, 200001), np.geomspace(1e-300, 6, 2000),
                        -np.geomspace(1e-300, 6, 2000)])
    mine = ember.erf(ember.from_numpy(x)).numpy()
    ref = torch.erf(torch.from_numpy(x)).numpy()
    ulps = np.abs(mine - ref) / np.spacing(np.abs(ref))
    assert ulps.max() <= 8, ulps.max()


def test_erf_special_values():
    x = ember.tensor([0.0, -0.0, math.inf, -math.inf, math.nan], dtype=ember.float64)
    out = ember.erf(x).numpy()
    assert out[0] == 0 and np.signbit(out[1]) and out[2] == 1 and out[3] == -1
    assert np.isnan(out[4])


def test_edge_values_match_torch():
    values = [0.0, -0.0, math.inf, -math.inf, math.nan, 1e-30, -1e-30, 1e30, -1.0, 0.5, -0.5,
              1.5, 2.5, -2.5]
    for name in FLOAT_MATH + SAME_DTYPE:
        mine = getattr(ember, name)(ember.tensor(values, dtype=ember.float64)).numpy()
        ref = getattr(torch, name)(torch.tensor(values, dtype=torch.float64)).numpy()
        np.testing.assert_allclose(mine, ref, rtol=1e-12, atol=0, equal_nan=True,
                                   err_msg=name)


def test_rounding_ops_have_zero_gradient():
    x = ember.tensor([0.3, 1.7, -2.5], requires_grad=True)
    for fn in (ember.floor, ember.ceil, ember.round, ember.trunc, ember.sign):
        out = fn(x)
        assert out.requires_grad
        (g,) = ember.autograd.grad(out, x, ember.ones(3))
        assert not g.numpy().any()


def test_derivatives_at_zero_match_torch():
    for name in ["abs", "sqrt", "sign", "frac"]:
        x = ember.tensor([0.0, 0.0], dtype=ember.float64, requires_grad=True)
        t = torch.tensor([0.0, 0.0], dtype=torch.float64, requires_grad=True)
        (g,) = ember.autograd.grad(getattr(ember, name)(x), x, ember.ones(2, dtype=ember.float64))
        (r,) = torch.autograd.grad(getattr(torch, name)(t), t, torch.ones(2, dtype=torch.float64))
        np.testing.assert_array_equal(g.numpy(), r.numpy(), err_msg=name)


def test_inplace_forms():
    x = ember.tensor([1.0, 4.0])
    y = x.sqrt_()
    assert y is x and x.tolist() == [1.0, 2.0]
    x.exp_().log_()
    np.testing.assert_allclose(x.numpy(), [1.0, 2.0], rtol=1e-6)
    z = ember.tensor([-1.5, 2.5])
    z.abs_()
    z.floor_()
    assert z.tolist() == [1.0, 2.0]
    with pytest.raises(ember.DTypeError, match="cannot be cast"):
        ember.tensor([1, 2]).exp_()


@pytest.mark.parametrize("name", ["abs_", "absolute_"])
def test_inplace_abs_of_a_complex_tensor_is_refused_as_torch(name):
    # (it stored the real modulus back into the complex tensor: [3+4j] became [5+0j])
    with pytest.raises(RuntimeError, match="not supported for complex"):
        getattr(torch.tensor([3 + 4j]), name)()
    x = ember.tensor([3 + 4j])
    with pytest.raises(ember.DTypeError, match=f"{name}: in-place abs is not supported for "
                                               "complex tensors"):
        getattr(x, name)()
    assert x.tolist() == [3 + 4j]
    with pytest.raises(ember.DTypeError, match="abs_: in-place abs"):
        ember.abs_(ember.tensor([1j]))


def test_inplace_keeps_the_graph():
    a = ember.tensor([0.5, 1.0], requires_grad=True)
    b = a * 1
    b.exp_()  # exp's rule reads its output, not the overwritten input
    b.backward(ember.ones(2))
    np.testing.assert_allclose(a.grad.numpy(), np.exp([0.5, 1.0]), rtol=1e-6)


def test_an_in_place_op_keeps_the_old_value_its_backward_reads_like_torch():
    grads = []
    for lib in (ember, torch):
        a = lib.tensor([0.5, 1.0], requires_grad=True)
        b = a * 1
        b.sin_()  # (sin's rule reads the value it just overwrote: PyTorch keeps a copy)
        b.pow_(3)
        b.backward(lib.ones(2))
        grads.append(a.grad.tolist())
    np.testing.assert_allclose(grads[0], grads[1], rtol=1e-6)


def test_an_in_place_write_over_an_earlier_ops_input_fails_clearly():
    a = ember.tensor([0.5, 1.0], requires_grad=True)
    b = a * 1
    c = b.sin()
    b.mul_(2)  # sin saved b, which is now changed
    with pytest.raises(ember.GradError, match="backward of sin: input 0 of sin"):
        c.backward(ember.ones(2))


def test_zero_dim_results_are_writable_arrays():
    x = ember.exp(ember.tensor(0.0))
    x += 1
    assert x.item() == 2.0 and isinstance(x._data, np.ndarray)


def test_tensor_methods_and_aliases():
    x = ember.tensor([0.25, 0.5])
    for name in ["exp", "log", "sigmoid", "tanh", "arcsin", "arctanh", "absolute", "sgn",
                 "fix", "square", "reciprocal", "rsqrt", "frac"]:
        np.testing.assert_allclose(getattr(x, name)().numpy(),
                                   getattr(torch.tensor([0.25, 0.5]), name)().numpy(),
                                   rtol=1e-6, err_msg=name)
    assert ember.arcsin is ember.asin and ember.fix is ember.trunc


def test_bool_errors_are_clear():
    with pytest.raises(ember.DTypeError, match="abs: not defined for bool"):
        ember.abs(ember.tensor([True]))
    with pytest.raises(ember.DTypeError, match="frac: needs a floating tensor"):
        ember.frac(ember.tensor([1]))
    with pytest.raises(ember.DTypeError, match="round: decimals=2"):
        ember.round(ember.tensor([1]), decimals=2)


def test_second_derivative_of_sigmoid_and_tanh():
    x = ember.tensor([0.3, -1.2], dtype=ember.float64, requires_grad=True)
    t = torch.tensor([0.3, -1.2], dtype=torch.float64, requires_grad=True)
    for name in ["sigmoid", "tanh", "erf", "rsqrt"]:
        xe = x.abs() if name == "rsqrt" else x
        tt = t.abs() if name == "rsqrt" else t
        (g,) = ember.autograd.grad(getattr(ember, name)(xe), x,
                                   ember.ones(2, dtype=ember.float64), create_graph=True)
        (gg,) = ember.autograd.grad(g, x, ember.ones(2, dtype=ember.float64))
        (r,) = torch.autograd.grad(getattr(torch, name)(tt), t,
                                   torch.ones(2, dtype=torch.float64), create_graph=True)
        (rr,) = torch.autograd.grad(r, t, torch.ones(2, dtype=torch.float64))
        np.testing.assert_allclose(gg.numpy(), rr.numpy(), rtol=1e-10, err_msg=name)


@pytest.mark.parametrize("dtype", ["float32", "float64", "float16", "bfloat16"])
@pytest.mark.parametrize("repeats", [1, 500])  # (large float32 arrays take another kernel)
def test_sign_of_nan_inf_and_signed_zeros_as_torch(dtype, repeats):
    values = [math.nan, -math.nan, math.inf, -math.inf, 0.0, -0.0, 1e-30, -1e-30, 2.0,
              -2.0] * repeats
    got = ember.tensor(values).to(getattr(ember, dtype)).sign().float().numpy()
    want = torch.tensor(values).to(getattr(torch, dtype)).sign().float().numpy()
    np.testing.assert_array_equal(got, want)
    np.testing.assert_array_equal(np.signbit(got), np.signbit(want))


@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_expm1_slope_is_exp_without_cancellation(dtype):
    # the backward was y + 1, which cancels for x < 0: float32 slope 0 at -20 (exp(-20) is
    # 2e-9); now exp(x). torch keeps y + 1, so it agrees only where that does not cancel
    xs = [-100.0, -20.0, -5.0, -1e-8, 0.0, 1e-8, 0.5, 3.0, 20.0]
    x = ember.tensor(xs, dtype=getattr(ember, dtype)).requires_grad_()
    (g,) = ember.autograd.grad(ember.expm1(x).sum(), [x])
    tol = 2e-7 if dtype == "float32" else 1e-15
    np.testing.assert_allclose(g.numpy(), np.exp(np.array(xs)).astype(dtype), rtol=tol, atol=0)
    t = torch.tensor(xs, dtype=getattr(torch, dtype), requires_grad=True)
    (tg,) = torch.autograd.grad(torch.expm1(t).sum(), [t])
    np.testing.assert_allclose(g.numpy(), tg.numpy(), rtol=tol, atol=1e-6)  # (-20, -100:
    #                                                                         torch's 0 or off)
    # the jvp is the same product, and float64 finite differences agree (also complex)
    with ember.autograd.forward_ad.dual_level():
        dual = ember.autograd.forward_ad.make_dual(x.detach(), ember.ones_like(x))
        tangent = ember.autograd.forward_ad.unpack_dual(ember.expm1(dual)).tangent
    np.testing.assert_array_equal(tangent.numpy(), g.numpy())
    z = ember.tensor([-3.0 + 0.5j, 1e-9 - 2j], dtype=ember.complex128).requires_grad_()
    assert ember.autograd.gradcheck(ember.expm1, (z,))
    assert ember.autograd.gradgradcheck(ember.expm1, (x.detach().double().requires_grad_(),))


@pytest.mark.parametrize("decimals", [2.7, 2.0, "2", True, None])
def test_round_decimals_that_are_not_ints_are_refused_as_torch(decimals):
    # fftspecial54: int(decimals) truncated 2.7 to 2 and read "2" as 2, silently
    with pytest.raises(TypeError):
        torch.round(torch.tensor([1.23456]), decimals=decimals)
    for f in (ember.round, ember.special.round, ember.Tensor.round):
        with pytest.raises(TypeError, match=r"^round: decimals must be an int, got "):
            f(ember.tensor([1.23456]), decimals=decimals)


def test_frac_is_one_op_with_torch_s_bits_layout_and_gradient(numba_or_numpy):
    """frac is a primitive (one node, FracBackward0 as PyTorch's; it was ``x - trunc(x)``, two
    ops): numba's one pass over 16384 elements, NumPy's calls below, PyTorch's bits, strides
    and gradient (the upstream gradient itself)."""
    rng = np.random.default_rng(0)
    a = (rng.standard_normal((64, 40, 30)) * 100).astype(np.float32)
    a.flat[:8] = [np.nan, -0.0, 0.0, np.inf, -np.inf, 1e-45, -2.5, 16777215.5]
    channels_last = np.ascontiguousarray(a.transpose(0, 2, 1)).transpose(0, 2, 1)
    for x in (a, channels_last, a[:, ::2], a.astype(np.float64), a[:2, :3]):
        xe = ember.from_numpy(x).requires_grad_()
        xt = torch.from_numpy(x.copy(order="K")).requires_grad_()
        y, want = ember.frac(xe), torch.frac(xt)
        assert (y.detach().numpy().tobytes(), y.stride()) == \
            (want.detach().numpy().tobytes(), want.stride())
        assert y.grad_fn.name() == want.grad_fn.name() == "FracBackward0"
        assert y.grad_fn.next_functions[0][0].name() == want.grad_fn.next_functions[0][0].name()
        g = rng.standard_normal(x.shape).astype(x.dtype)
        y.backward(ember.from_numpy(g))
        want.backward(torch.from_numpy(g))
        np.testing.assert_array_equal(xe.grad.numpy(), xt.grad.numpy())


def test_rsqrt_pass_gives_numpy_s_two_calls_bits(numba_or_numpy):
    """rsqrt over 16384 elements takes numba's one pass (relu_numba.rsqrt): the bits of
    ``reciprocal(sqrt(a))`` (random bit patterns: NaN, ±0, ±inf, subnormals), PyTorch's
    strides."""
    from ember.ops.relu_kernel import rsqrt_array

    rng = np.random.default_rng(0)
    for dtype, bits in ((np.float32, np.uint32), (np.float64, np.uint64)):
        a = rng.integers(0, np.iinfo(bits).max, 40000, dtype=bits).view(dtype)
        a[:6] = [0.0, -0.0, np.inf, -np.inf, np.nan, 1e-45]
        with np.errstate(all="ignore"):
            want = np.reciprocal(np.sqrt(a))
            got = rsqrt_array(np, a)
        nan = np.isnan(want)
        assert (np.isnan(got) == nan).all()
        assert got[~nan].tobytes() == want[~nan].tobytes()
    x = np.abs(rng.standard_normal((64, 40, 30))).astype(np.float32)
    for v in (x, np.ascontiguousarray(x.transpose(0, 2, 1)).transpose(0, 2, 1), x[:, ::2]):
        y, t = ember.rsqrt(ember.from_numpy(v)), torch.rsqrt(torch.from_numpy(v.copy(order="K")))
        assert y.stride() == t.stride()
        np.testing.assert_allclose(y.numpy(), t.numpy(), rtol=2e-7)


def test_large_float32_sign_pass_gives_the_comparisons_bits(numba_or_numpy):
    """sign of a float32 array over 16384 elements takes numba's pass (relu_numba.sign): the
    bits of ``(a > 0) - (a < 0)`` (+0.0 at ±0 and NaN, as PyTorch), PyTorch's bits and layout."""
    a = np.random.default_rng(0).standard_normal((64, 40, 30)).astype(np.float32)
    a.flat[:6] = [np.nan, -0.0, 0.0, np.inf, -np.inf, 1e-45]
    channels_last = np.ascontiguousarray(a.transpose(0, 2, 1)).transpose(0, 2, 1)
    for x in (a, channels_last, a[:, ::2]):
        y = ember.sign(ember.from_numpy(x))
        comparisons = (x > 0).astype(np.float32) - (x < 0)
        assert y.numpy().tobytes() == comparisons.tobytes()
        want = torch.sign(torch.from_numpy(x.copy(order="K")))
        assert (y.numpy().tobytes(), y.stride()) == (want.numpy().tobytes(), want.stride())


@pytest.mark.parametrize("repeats", [1, 10])  # (over 16384 elements: numba's pass)
@pytest.mark.parametrize("dtype", ["float16", "bfloat16"])
def test_half_rsqrt_rounds_once_as_torch(dtype, repeats):
    """rsqrt of float16/bfloat16 is computed in float32 and rounded once, as PyTorch's vector
    loop (NumPy's ``sqrt`` then ``reciprocal`` in the half dtype rounded twice: ~15-28% of values
    an ulp off). 2048·k elements: PyTorch's scalar loop over a remainder rounds twice."""
    x = np.exp(np.random.default_rng(0).uniform(-20, 20, 2048 * repeats))
    x[:5] = [0.0, -0.0, np.inf, -1.0, np.nan]
    t = torch.tensor(x).to(getattr(torch, dtype))
    y = ember.rsqrt(ember.from_numpy(t.float().numpy()).to(getattr(ember, dtype)))
    assert y.dtype == getattr(ember, dtype)
    np.testing.assert_array_equal(y.float().numpy(), torch.rsqrt(t).float().numpy())


@pytest.mark.parametrize("dtype", ["float16", "bfloat16", "float32"])
def test_rsqrt_gradient_at_extremes_is_torchs(dtype):
    # (torch's (-0.5 * g) * y ** 3; Ember's (g * y ** 3) * -0.5 rounded twice near the range's
    # ends: float16 x = 0.01, g = 100 gave -inf where torch's is -49984; 512 elements: no
    # forward tail past torch's vector loop)
    rng = np.random.default_rng(0)
    span = {"float16": (-17, 11)}.get(dtype, (-40, 40))
    x = np.exp(rng.uniform(*span, 512))
    g = rng.standard_normal(512) * np.exp(rng.uniform(-30, 30, 512))
    x[:2], g[:2] = 0.01, 100.0
    results = []
    for m in (torch, ember):
        t = m.tensor(x).to(getattr(m, dtype)).requires_grad_()
        (grad,) = m.autograd.grad(m.rsqrt(t), [t], m.tensor(g).to(getattr(m, dtype)))
        results.append(grad.to(m.float64).numpy())
    np.testing.assert_array_equal(results[1], results[0])
