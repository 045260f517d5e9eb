"""Activation functions against PyTorch and finite differences (see optable.py), plus kinks,
dtypes, in-place forms and argument errors."""

import math

import numpy as np
import pytest
import torch
import torch.nn.functional as F  # noqa: N812 - the usual spelling

import ember
from tests.ops.optable import OpCase, S, arg, op_tests

SAMPLES = [S(arg(3, 4, low=-3.0, high=3.0)), S(arg(low=-3.0, high=3.0)), S(arg(0, 3)),
           S(arg(2, 3, low=-3.0, high=3.0, noncontig=True))]


def case(name: str, samples: list = SAMPLES, torch_fn=None, **kwargs) -> OpCase:
    """A row calling ``ember.<name>`` and ``F.<name>`` with ``kwargs``."""
    mine, ref = getattr(ember, name), torch_fn or getattr(F, name)
    return OpCase(name + "".join(f"_{k}={v}" for k, v in kwargs.items()),
                  lambda x: mine(x, **kwargs), lambda x: ref(x, **kwargs), samples)


CASES = [
    case("relu"), case("relu6", [S(arg(3, 4, low=-2.0, high=8.0))] + SAMPLES[1:]),
    case("leaky_relu"), case("leaky_relu", negative_slope=0.2),
    case("hardtanh"), case("hardtanh", min_val=-0.5, max_val=2.0),
    case("elu"), case("elu", alpha=0.5), case("selu"), case("celu", alpha=2.0),
    case("elu", alpha=-0.5), case("celu", alpha=-0.5),  # (the rule reads x, not y alone)
    case("gelu"), case("gelu", approximate="tanh"),
    case("silu"), case("softplus"), case("softplus", beta=2.0, threshold=3.0),
    case("mish"), case("logsigmoid"), case("hardsigmoid", [S(arg(3, 4, low=-4.0, high=4.0))]),
    case("hardswish", [S(arg(3, 4, low=-4.0, high=4.0))]), case("softsign"),
    case("tanhshrink"), case("threshold", threshold=0.3, value=-2.0),
    case("hardshrink"), case("softshrink"), case("softshrink", lambd=1.2),
    OpCase("prelu", ember.prelu, F.prelu,
           [S(arg(2, 3, 4), arg(3)), S(arg(2, 3), arg(1)), S(arg(4), arg(1)),
            S(arg(2, 3, 2, noncontig=True), arg(3))]),
    OpCase("glu", ember.glu, F.glu, [S(arg(3, 4)), S(arg(2, 6, 2, noncontig=True))]),
    OpCase("glu_dim", lambda x: ember.glu(x, 1), lambda x: F.glu(x, 1), [S(arg(2, 4, 3))]),
    OpCase("relu_method", lambda x: x.relu(), lambda x: x.relu(), [S(arg(2, 3))]),
    OpCase("softplus_far", ember.softplus, F.softplus, [S(arg(5, low=-60.0, high=60.0))]),
]

test_forward, test_backward, test_gradcheck, test_gradgradcheck, test_jvp = op_tests(CASES)

KINKED = {"relu": 0.0, "relu6": 6.0, "leaky_relu": 0.0, "hardtanh": 1.0, "elu": 0.0,
          "hardsigmoid": 3.0, "hardswish": -3.0, "celu": 0.0, "selu": 0.0, "hardshrink": 0.5,
          "softshrink": 0.5}


@pytest.mark.parametrize("name", sorted(KINKED))
def test_derivative_at_the_kinks_matches_torch(name):
    k = KINKED[name]
    values = [k, -k, 0.0, 6.0, -1.0, 1.0, 3.0, -3.0]
    x = ember.tensor(values, dtype=ember.float64, requires_grad=True)
    t = torch.tensor(values, dtype=torch.float64, requires_grad=True)
    (g,) = ember.autograd.grad(getattr(ember, name)(x), x, ember.ones(len(values),
                                                                      dtype=ember.float64))
    (r,) = torch.autograd.grad(getattr(F, name)(t), t, torch.ones(len(values),
                                                                  dtype=torch.float64))
    # (PyTorch's hardsigmoid slope is the float32 1/6, even in float64)
    np.testing.assert_allclose(g.numpy(), r.numpy(), rtol=1e-7, err_msg=name)


@pytest.mark.parametrize("name, kwargs", [("hardshrink", {}), ("softshrink", {}),
                                          ("softshrink", {"lambd": 1.2}),
                                          ("threshold", {"threshold": 0.5, "value": -2.0})])
def test_nan_passes_through_with_torchs_gradient(name, kwargs):
    values = [np.nan, 2.0, -2.0, 0.5, -0.5, 1.2, -1.2, 0.1, np.inf, -np.inf]
    x = ember.tensor(values, dtype=ember.float64, requires_grad=True)
    t = torch.tensor(values, dtype=torch.float64, requires_grad=True)
    y, r = getattr(ember, name)(x, **kwargs), getattr(F, name)(t, **kwargs)
    np.testing.assert_array_equal(y.detach().numpy(), r.detach().numpy())
    v = np.linspace(1.0, 2.0, len(values))
    (g,) = ember.autograd.grad(y, x, ember.tensor(v))
    (gt,) = torch.autograd.grad(r, t, torch.tensor(v))
    np.testing.assert_array_equal(g.numpy()[1:], gt.numpy()[1:])
    # at NaN the gradient passes, as relu's does and torch's scalar kernels do (its vectorised
    # shrink kernels give 0 there instead, so its answer depends on the length: compare with
    # a one-element tensor)
    nan = torch.tensor([np.nan], dtype=torch.float64, requires_grad=True)
    (gn,) = torch.autograd.grad(getattr(F, name)(nan, **kwargs), nan, torch.tensor([v[0]]))
    assert g.numpy()[0] == gn.item() == v[0]


def test_inplace_threshold_keeps_nan():
    x = ember.tensor([np.nan, 0.2, 2.0])
    ember.threshold_(x, 0.5, -2.0)
    np.testing.assert_array_equal(x.numpy(), F.threshold(torch.tensor([np.nan, 0.2, 2.0]), 0.5,
                                                         -2.0).numpy())


@pytest.mark.parametrize("dtype", ["float16", "bfloat16"])
@pytest.mark.parametrize("name", ["relu", "gelu", "silu", "softplus", "elu", "leaky_relu",
                                  "hardtanh", "mish", "logsigmoid"])
def test_half_precision_matches_torch(name, dtype):
    values = np.linspace(-20.0, 20.0, 81)
    mine = getattr(ember, name)(ember.tensor(values, dtype=getattr(ember, dtype)))
    ref = getattr(F, name)(torch.tensor(values, dtype=getattr(torch, dtype)))
    assert mine.dtype.name == dtype
    tol = 2e-3 if dtype == "float16" else 1.6e-2
    np.testing.assert_allclose(mine.float().numpy(), ref.float().numpy(), rtol=tol, atol=tol)


def test_integer_inputs_follow_torch():
    i = torch.tensor([2, -3, 0])
    e = ember.tensor([2, -3, 0])
    assert ember.relu(e).dtype is ember.int64 and ember.relu(e).tolist() == [2, 0, 0]
    assert ember.hardtanh(e).tolist() == F.hardtanh(i).tolist()
    assert ember.hardtanh(e).dtype is ember.int64
    for name in ["gelu", "silu", "elu", "leaky_relu", "softplus"]:
        with pytest.raises(ember.DTypeError, match=f"{name}: needs a floating tensor"):
            getattr(ember, name)(e)
    with pytest.raises(ember.DTypeError, match="relu: bool"):
        ember.relu(ember.tensor([True]))


def test_inplace_forms():
    x = ember.tensor([-1.0, 2.0])
    assert ember.relu_(x) is x and x.tolist() == [0.0, 2.0]
    y = ember.tensor([-1.0, 2.0])
    assert ember.relu(y, inplace=True) is y and y.tolist() == [0.0, 2.0]
    z = ember.tensor([-1.0, 2.0])
    z.relu_()
    assert z.tolist() == [0.0, 2.0]
    t = ember.tensor([-2.0, 0.5])
    ember.threshold_(t, 0.0, 9.0)
    assert t.tolist() == [9.0, 0.5]
    w = ember.tensor([-2.0, 0.5])
    ember.hardtanh_(w)
    assert w.tolist() == [-1.0, 0.5]
    v = ember.tensor([-2.0, 0.5])
    ember.leaky_relu_(v, 0.5)
    assert v.tolist() == [-1.0, 0.5]


def test_inplace_activation_keeps_the_graph():
    a = ember.tensor([-1.0, 2.0], requires_grad=True)
    b = a * 3
    ember.relu(b, inplace=True)
    b.backward(ember.ones(2))
    assert a.grad.tolist() == [0.0, 3.0]
    with pytest.raises(ember.GradError, match="leaf tensor that requires grad"):
        ember.relu_(a)


def test_argument_errors():
    x = ember.ones(2)
    with pytest.raises(ember.ShapeError, match="glu: dimension -1 of input \\(2, 3\\) has size 3"):
        ember.glu(ember.ones(2, 3))
    for dim in (2, -3):  # torch: IndexError, dimension out of range
        with pytest.raises(IndexError, match=f"glu: dimension {dim} is out of range.*\\[-2, 1\\]"):
            ember.glu(ember.ones(2, 4), dim)
    with pytest.raises(ember.ShapeError, match="prelu: weight of shape \\(2,\\)"):
        ember.prelu(ember.ones(2, 3), ember.ones(2))
    with pytest.raises(ValueError, match="softshrink: lambd"):
        ember.softshrink(x, -1.0)
    with pytest.raises(ValueError, match="approximate must be 'none' or 'tanh'"):
        ember.gelu(x, approximate="fast")
    with pytest.raises(ValueError, match="min_val"):
        ember.hardtanh(x, 2.0, 1.0)


def test_softplus_is_stable_at_the_tails():
    x = ember.tensor([-1000.0, 1000.0, 19.0, 21.0], dtype=ember.float64)
    t = torch.tensor([-1000.0, 1000.0, 19.0, 21.0], dtype=torch.float64)
    np.testing.assert_allclose(ember.softplus(x).numpy(), F.softplus(t).numpy(), rtol=1e-15)
    np.testing.assert_allclose(ember.logsigmoid(x).numpy(), F.logsigmoid(t).numpy(), rtol=1e-15)


def test_softplus_log1p_exp_is_correctly_rounded_in_float32_and_matches_torch():
    # max(s, 0) + log1p(exp(-|s|)), float32 through float64: within half an ulp of the exact
    # log(1 + exp(s)) (logaddexp was within 1.5), and equal to torch to its tolerance, with
    # the special values and beta/threshold; logsigmoid and bce_with_logits build on it
    rng = np.random.default_rng(0)
    values = np.concatenate([rng.standard_normal(3000) * 20, [-1e30, -88.0, -0.0, 0.0, 1e-8,
                                                              90.0, 1e30, np.inf, -np.inf]])
    exact = np.logaddexp(0, values.astype(np.float32).astype(np.longdouble))
    got = ember.softplus(ember.tensor(values, dtype=ember.float32), threshold=math.inf).numpy()
    finite = np.isfinite(exact)
    ulps = np.abs((got[finite] - exact[finite]) / np.spacing(np.abs(got[finite])))
    assert ulps.max() <= 0.5 + 1e-6
    assert (got[~finite] == exact[~finite]).all()
    small = ember.softplus(ember.tensor(values[-300:], dtype=ember.float32), threshold=math.inf)
    assert np.array_equal(small.numpy(), got[-300:])  # (a small array's logaddexp path)
    for dtype, tdtype in ((ember.float32, torch.float32), (ember.float64, torch.float64)):
        x = ember.tensor(values, dtype=dtype, requires_grad=True)
        t = torch.tensor(values, dtype=tdtype, requires_grad=True)
        for mine, ref in ((lambda v: ember.softplus(v, beta=1.5, threshold=4.0),
                           lambda v: F.softplus(v, beta=1.5, threshold=4.0)),
                          (ember.logsigmoid, F.logsigmoid)):
            x.grad, t.grad = None, None
            a, b = mine(x), ref(t)
            np.testing.assert_allclose(a.detach().numpy(), b.detach().numpy(), rtol=1e-6,
                                       atol=1e-37)  # (torch rounds subnormals loosely)
            a.sum().backward()
            b.sum().backward()
            np.testing.assert_allclose(x.grad.numpy(), t.grad.numpy(), rtol=1e-6, atol=1e-30)
    x = ember.tensor(rng.standard_normal(10) * 5, requires_grad=True)
    assert ember.autograd.gradcheck(lambda v: ember.softplus(v, beta=2.0, threshold=3.0), (x,))


def test_sigmoid_silu_gelu_are_finite_at_extremes():
    x = ember.tensor([-1e4, -50.0, 50.0, 1e4])
    for fn in (ember.sigmoid, ember.silu, ember.gelu, ember.elu, ember.mish):
        assert np.isfinite(fn(x).numpy()).all(), fn.__name__


def test_float32_gelu_and_erf_block_kernels_match_torch(numba_or_numpy):
    # several blocks of the float32 kernels (131072 elements each) and a ragged tail, with
    # values out to where erf saturates and past where gelu's slope's exp underflows. The
    # float32 erf is good to 4e-7 absolute, so gelu near x = -4 (where 1 + erf cancels) to
    # about 1e-6 absolute
    values = np.concatenate([np.linspace(-9.0, 9.0, 300001), [-20.0, 20.0, 1e30, -1e30],
                             [0.0, -0.0, 1e-30, np.nan]]).astype(np.float32)
    x = ember.tensor(values, requires_grad=True)
    xt = torch.tensor(values, requires_grad=True)
    y, yt = ember.gelu(x), F.gelu(xt)
    np.testing.assert_allclose(y.detach().numpy(), yt.detach().numpy(), rtol=1e-6, atol=2e-6)
    np.testing.assert_allclose(ember.erf(x).detach().numpy(), torch.erf(xt).detach().numpy(),
                               rtol=1e-6, atol=5e-7)
    weights = np.cos(values)
    (g,) = ember.autograd.grad((y * ember.tensor(weights)).sum(), [x])
    (gt,) = torch.autograd.grad((yt * torch.tensor(weights)).sum(), [xt])
    np.testing.assert_allclose(g.numpy(), gt.numpy(), rtol=1e-5, atol=2e-6)


@pytest.mark.parametrize("layout", ["channels_last", "strided"])
def test_float32_block_kernels_keep_a_dense_layout(numba_or_numpy, layout):
    # as NumPy's ufuncs do: a channels-last activation stays channels-last; any other
    # layout gives C order
    x = np.random.default_rng(0).standard_normal((4, 6, 40, 50)).astype(np.float32)
    view = np.moveaxis(np.ascontiguousarray(np.moveaxis(x, 1, -1)), -1, 1) \
        if layout == "channels_last" else x[:, ::2]
    for fn, twin in ((ember.gelu, F.gelu), (ember.erf, torch.erf)):
        y = fn(ember.from_numpy(view)).numpy()
        assert y.strides == (view.strides if layout == "channels_last" else
                             np.empty(view.shape, np.float32).strides)
        np.testing.assert_allclose(y, twin(torch.from_numpy(np.ascontiguousarray(view))).numpy(),
                                   rtol=1e-6, atol=2e-6)


def test_gelu_second_derivative_matches_torch_in_float32(numba_or_numpy):
    values = np.linspace(-5.0, 5.0, 40001).astype(np.float32)
    x, xt = ember.tensor(values, requires_grad=True), torch.tensor(values, requires_grad=True)
    (g,) = ember.autograd.grad(ember.gelu(x).sum(), [x], create_graph=True)
    (gg,) = ember.autograd.grad(g.sum(), [x])
    (gt,) = torch.autograd.grad(F.gelu(xt).sum(), [xt], create_graph=True)
    (ggt,) = torch.autograd.grad(gt.sum(), [xt])
    np.testing.assert_allclose(gg.numpy(), ggt.numpy(), rtol=1e-5, atol=2e-6)


@pytest.mark.parametrize("dtype", ["float32", "float64", "bfloat16"])
def test_relu_backward_masks_exactly_like_torch(dtype):
    # finite gradients take the multiply path; inf/nan ones the where path (0 stays 0)
    x = np.array([-1.0, 2.0, 0.0, 3.0, -2.0, 1.0])
    for g in ([1.0, 2.0, 3.0, 4.0, 5.0, 6.0], [np.inf, np.inf, np.nan, 1.0, np.nan, -np.inf]):
        mine = ember.tensor(x, dtype=getattr(ember, dtype)).requires_grad_()
        ref = torch.tensor(x, dtype=getattr(torch, dtype)).requires_grad_()
        ember.relu(mine).backward(ember.tensor(g, dtype=getattr(ember, dtype)))
        F.relu(ref).backward(torch.tensor(g, dtype=getattr(torch, dtype)))
        assert mine.grad.dtype.name == dtype
        np.testing.assert_array_equal(mine.grad.float().numpy(), ref.grad.float().numpy())


def test_prelu_dtypes_and_a_0d_input_as_torch():
    out = ember.prelu(ember.tensor(-2.0), ember.tensor([0.25]))
    assert out.shape == torch.prelu(torch.tensor(-2.0), torch.tensor([0.25])).shape == ()
    with pytest.raises(ember.DTypeError, match="prelu: input .float32. and weight .float64."):
        ember.prelu(ember.ones(1, 2), ember.ones(2, dtype=ember.float64))
    with pytest.raises(ember.DTypeError, match="prelu: needs a floating input"):
        ember.prelu(ember.tensor([[-1, 2]]), ember.tensor([1, 2]))
    with ember.autocast("cpu", dtype=ember.bfloat16):  # (torch's autocast runs it in bf16)
        assert ember.nn.PReLU()(ember.randn(3, dtype=ember.bfloat16)).dtype is ember.bfloat16


@pytest.mark.parametrize("dtype", ["float32", "float64", "float16", "bfloat16"])
@pytest.mark.parametrize("slope", [0.01, 0.1, 0.5, 1.0, 0.0, 2.0, -0.5, 1e-40])
def test_leaky_relu_at_nan_inf_signed_zeros_and_half_precision_as_torch(dtype, slope):
    # (the maximum of x and x·slope for 0 < slope <= 1; half precision scales in float32, as
    # PyTorch: -3 * 0.1 in float16 gave -0.2998 where PyTorch gives -0.3000)
    values = [math.nan, math.inf, -math.inf, 0.0, -0.0, 1e-45, -1e-45, 1e-30, -1e-30, 3.0,
              -3.0, 65504.0, -65504.0]
    got = ember.nn.functional.leaky_relu(ember.tensor(values).to(getattr(ember, dtype)),
                                         slope).float().numpy()
    want = F.leaky_relu(torch.tensor(values).to(getattr(torch, dtype)), slope).float().numpy()
    np.testing.assert_array_equal(got, want)
    kept = ~np.isnan(want)
    np.testing.assert_array_equal(np.signbit(got[kept]), np.signbit(want[kept]))


@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_silu_backward_is_one_slope_op_with_the_composite_values(dtype):
    # silu's derivative s·(1 + x·(1 - s)) is one op (silu_slope) computing the composite's
    # values bit for bit; its own derivative (second order) matches torch's
    rng = np.random.default_rng(0)
    values = np.concatenate([rng.standard_normal(5000) * 6, [0.0, -0.0, 40.0, -40.0]])
    x = ember.tensor(values, dtype=getattr(ember, dtype), requires_grad=True)
    g = ember.tensor(rng.standard_normal(values.size), dtype=x.dtype)
    (gx,) = ember.autograd.grad(ember.silu(x), x, g, create_graph=True)
    # the graph of the backward: g times one slope node reading x (the composite: several)
    nodes = [f for f, _ in gx.grad_fn.next_functions if f is not None]
    assert gx.grad_fn.name() == "MulBackward0" and [f.name() for f in nodes] == \
        ["SiluSlopeBackward0"]
    assert [f.name() for f, _ in nodes[0].next_functions] == ["torch::autograd::AccumulateGrad"]
    with ember.no_grad():
        s = ember.sigmoid(x)
        composite = g * (s * (1 + x * (1 - s)))
    assert gx.detach().numpy().tobytes() == composite.numpy().tobytes()
    (gg,) = ember.autograd.grad(gx, x, g)
    t = torch.tensor(values, dtype=getattr(torch, dtype), requires_grad=True)
    tg = torch.tensor(g.numpy())
    (tgx,) = torch.autograd.grad(F.silu(t), t, tg, create_graph=True)
    (tgg,) = torch.autograd.grad(tgx, t, tg)
    tol = 1e-6 if dtype == "float32" else 1e-13
    np.testing.assert_allclose(gx.detach().numpy(), tgx.detach().numpy(), rtol=tol, atol=tol)
    np.testing.assert_allclose(gg.numpy(), tgg.numpy(), rtol=tol, atol=tol)
    small = ember.tensor(values[:12], dtype=ember.float64, requires_grad=True)
    assert ember.autograd.gradgradcheck(ember.silu, (small,))


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("inplace", [False, True])
def test_elu_family_backward_is_one_elu_grad_op_with_the_composites_values(dtype, inplace):
    """elu/selu/celu's backward is one elu_grad op, from x (and elu_'s from y, slope below 0
    not negative): numba's pass on large float arrays, NumPy's calls otherwise; the same bits
    either way, to second order (float32 from x: numba's exp and NumPy's, within a few ulps),
    and torch's values."""
    from ember.backend import compiled

    rng = np.random.default_rng(0)
    a, g = (rng.standard_normal((4, 64, 80)).astype(dtype) * 3 for _ in range(2))
    a.flat[:3] = [np.nan, -0.0, 0.0]

    def case(name, *args):
        return (lambda t: getattr(ember.nn.functional, name)(t.clone(), *args, inplace=inplace),
                lambda t: getattr(F, name)(t.clone(), *args, inplace=inplace))

    cases = [case("elu"), case("selu"), case("celu", 0.4)]
    saved = compiled.numba_enabled()
    for ours, theirs in cases:
        runs = []
        for on in (True, False):
            compiled.use_numba(on and saved)
            try:
                x = ember.tensor(a, requires_grad=True)
                (gx,) = ember.autograd.grad(ours(x), x, ember.tensor(g), create_graph=True)
                assert gx.grad_fn.name() == "EluGradBackward0"
                (ggx,) = ember.autograd.grad((gx * gx).sum(), x)
                runs.append((gx.detach().numpy().tobytes(), ggx.numpy().tobytes()))
            finally:
                compiled.use_numba(saved)
        if dtype == np.float32 and not inplace:  # (numba's exp and NumPy's: a few ulps)
            for ours_on, ours_off in zip(*runs, strict=True):
                np.testing.assert_allclose(np.frombuffer(ours_on, dtype),
                                           np.frombuffer(ours_off, dtype), rtol=1e-6, atol=0)
        else:
            assert runs[0] == runs[1]
        tx = torch.tensor(a, requires_grad=True)
        theirs(tx).backward(torch.tensor(g))
        np.testing.assert_allclose(np.frombuffer(runs[0][0], dtype)[1:],  # (y + alpha:
                                   tx.grad.numpy().ravel()[1:], rtol=1e-6, atol=1e-5)  # ulps)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_rrelu_in_evaluation_is_leaky_relu_bit_for_bit_as_torch(dtype):
    """rrelu in evaluation is leaky_relu with the bounds' mean (one op): values and gradients
    equal torch's bit for bit, the gradient's signed zeros included (slope 0)."""
    rng = np.random.default_rng(0)
    a, g = (rng.standard_normal((50, 40)).astype(dtype) for _ in range(2))
    a.flat[:3] = [np.nan, -0.0, 0.0]
    for lower, upper in [(0.125, 1 / 3), (0.0, 0.0), (-0.5, -0.2)]:
        x, tx = ember.tensor(a, requires_grad=True), torch.tensor(a, requires_grad=True)
        y, ty = ember.nn.functional.rrelu(x, lower, upper), F.rrelu(tx, lower, upper)
        y.backward(ember.tensor(g))
        ty.backward(torch.tensor(g))
        assert y.detach().numpy().tobytes() == ty.detach().numpy().tobytes()
        assert x.grad.numpy().tobytes() == tx.grad.numpy().tobytes()


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_leaky_relu_and_hardtanh_backward_are_one_op_with_the_composites_values(dtype):
    """leaky_relu's and hardtanh's backward are one op each (leaky_relu_grad, hardtanh_grad):
    numba's pass on large arrays, NumPy's calls otherwise, the same bits (channels-last
    layout kept), and torch's."""
    from ember.backend import compiled

    rng = np.random.default_rng(0)
    a, g = (rng.standard_normal((4, 32, 16, 16)).astype(dtype) * 2 for _ in range(2))
    a.flat[:5] = [np.nan, -0.0, 0.0, -1.0, 1.0]
    cases = [("LeakyReluGrad", lambda t: ember.nn.functional.leaky_relu(t, 0.1),
              lambda t: F.leaky_relu(t, 0.1)),
             ("HardtanhGrad", lambda t: ember.nn.functional.hardtanh(t, -1.1, 0.7),
              lambda t: F.hardtanh(t, -1.1, 0.7))]
    saved = compiled.numba_enabled()
    for node, ours, theirs in cases:
        for channels_last in (False, True):
            runs = []
            for on in (True, False):
                compiled.use_numba(on and saved)
                try:
                    x = ember.tensor(a, requires_grad=True)
                    xin = x.contiguous(memory_format=ember.channels_last) if channels_last \
                        else x
                    (gx,) = ember.autograd.grad(ours(xin), xin, ember.tensor(g),
                                                create_graph=True)
                    assert gx.grad_fn.name() == node + "Backward0"
                    runs.append((gx.detach().numpy().tobytes(), tuple(gx.stride())))
                finally:
                    compiled.use_numba(saved)
            assert runs[0] == runs[1]
        tx = torch.tensor(a, requires_grad=True)
        theirs(tx).backward(torch.tensor(g))
        assert runs[0][0] == tx.grad.numpy().tobytes()


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("name, kwargs", [("elu", {}), ("elu", {"alpha": 0.3}), ("selu", {}),
                                          ("celu", {"alpha": 0.5})])
@pytest.mark.parametrize("copies", [1, 5000])  # NumPy's calls, numba's pass
def test_elu_family_backward_reads_the_input_as_torch_far_below_zero(dtype, name, kwargs,
                                                                     copies):
    """Out of place, the gradient below 0 is ``scale·alpha·exp(x)`` from x, as PyTorch's
    elu_backward(is_result=False): ``y + alpha`` from the output rounds to 0 near x = -30 in
    float32 where exp(x) is 9.4e-14 (and denormals further down); elu_ reads the output, as
    PyTorch's, and gives 0 there as torch's does."""
    x = np.tile(np.array([-30, -88, -87.3, -100, -103, -104, -17, -16.5, -1e-30, -1e-40, -0.0,
                          0.0, 1.5, 100.0, -np.inf], dtype=dtype), copies)
    e, t = ember.tensor(x, requires_grad=True), torch.tensor(x, requires_grad=True)
    getattr(ember.nn.functional, name)(e, **kwargs).backward(ember.ones(x.shape, dtype=e.dtype))
    getattr(F, name)(t, **kwargs).backward(torch.ones(x.shape, dtype=t.dtype))
    np.testing.assert_allclose(e.grad.numpy(), t.grad.numpy(), rtol=4e-7 if dtype == np.float32
                               else 1e-15, atol=0)
    nan = ember.tensor(np.full(x.shape, np.nan, dtype), requires_grad=True)  # (the linear side)
    getattr(ember.nn.functional, name)(nan, **kwargs).backward(ember.ones(x.shape, dtype=e.dtype))
    assert np.all(nan.grad.numpy() == getattr(F, name)(torch.tensor(1.0, dtype=t.dtype),
                                                      **kwargs).item())
    assert e.grad.numpy()[0] > 0
    for fn in (F, ember.nn.functional) if dtype == np.float32 else ():  # elu_: from y, 0
        z = (ember if fn is ember.nn.functional else torch).tensor(x, requires_grad=True)
        getattr(fn, name)(z.clone(), inplace=True, **kwargs).sum().backward()
        assert z.grad.numpy()[0] == 0
    small = ember.tensor(np.array([-3.0, -0.5, 0.25, 2.0]), requires_grad=True)
    assert ember.autograd.gradgradcheck(lambda v: getattr(ember.nn.functional, name)(v, **kwargs),
                                        (small,))


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64, torch.float16])
@pytest.mark.parametrize("size", [8, 1 << 16])  # NumPy's select, numba's
def test_elu_family_at_signed_zeros_nan_and_inf_as_torch(dtype, size):
    values = torch.tensor([-0.0, 0.0, float("nan"), float("inf"), -float("inf"), -1.5, 2.0],
                          dtype=dtype).repeat(size // 7 + 1)[:size]
    for name, kwargs in (("elu", {"alpha": 0.7}), ("selu", {}), ("celu", {"alpha": 1.3})):
        want = getattr(F, name)(values, **kwargs).numpy()
        got = getattr(ember.nn.functional, name)(ember.tensor(values.numpy()), **kwargs).numpy()
        np.testing.assert_array_equal(got, want)
        np.testing.assert_array_equal(np.signbit(got), np.signbit(want))


@pytest.mark.parametrize("name", ["relu", "leaky_relu", "hardtanh", "relu6", "hardsigmoid"])
def test_a_masks_gradient_is_zeros_as_torch(name):
    """The second derivative of a piecewise-linear activation in its input is zeros (PyTorch's
    threshold_backward gives zeros for its mask), not a missing gradient that makes ``grad``
    raise 'not used' (an input-Hessian of a ReLU network, WGAN-GP's penalty in x)."""
    values = np.array([[-1.5, -0.25, 0.5, 2.0, 7.0]])
    e = ember.tensor(values, requires_grad=True)
    g, = ember.autograd.grad(getattr(ember.nn.functional, name)(e).square().sum(), e,
                             create_graph=True)
    got, = ember.autograd.grad(g.sum(), e)
    if name != "hardsigmoid":  # (PyTorch has no double backward for it)
        t = torch.tensor(values, requires_grad=True)
        tg, = torch.autograd.grad(getattr(F, name)(t).square().sum(), t, create_graph=True)
        np.testing.assert_allclose(got.numpy(), torch.autograd.grad(tg.sum(), t)[0].numpy())
    w = ember.tensor(np.linspace(-1, 1, 15).reshape(5, 3), requires_grad=True)
    h = getattr(ember.nn.functional, name)(e @ w)  # a network: x's input-Hessian row sums
    gx, = ember.autograd.grad(h.sum(), e, create_graph=True)
    assert np.array_equal(ember.autograd.grad(gx.sum(), e)[0].numpy(), np.zeros((1, 5)))


@pytest.mark.parametrize("dtype", ["float16", "bfloat16", "float32", "float64"])
@pytest.mark.parametrize("inplace", [False, True])
def test_elu_family_second_derivative_at_large_positive_x_and_zeros_as_torch(dtype, inplace):
    """elu/selu/celu's second derivative is 0 above 0 where exp(x) overflows (x = 12 in
    float16, 100 in bfloat16, 1000 in float32/float64: NaN before, inf times where's 0) and at
    ±0 (1 before; PyTorch's elu_double_backward masks with x < 0), from x and from elu_'s y."""
    xs = [12.0, 100.0, 1000.0, -1.0, -0.5, 0.0, -0.0]
    for name, kwargs in (("elu", {}), ("selu", {}), ("celu", {"alpha": 0.5})):
        x = ember.tensor(np.array(xs, np.float32)).to(getattr(ember, dtype)).requires_grad_()
        y = getattr(ember.nn.functional, name)(x * 1, inplace=inplace, **kwargs)
        g, = ember.autograd.grad(y.sum(), [x], create_graph=True)
        gg, = ember.autograd.grad(g.sum(), [x])
        t = torch.tensor(xs).to(getattr(torch, dtype)).requires_grad_()
        tg, = torch.autograd.grad(getattr(F, name)(t * 1, inplace=inplace, **kwargs).sum(), [t],
                                  create_graph=True)
        tgg, = torch.autograd.grad(tg.sum(), [t])
        np.testing.assert_allclose(gg.float().numpy(), tgg.float().numpy(), rtol=1e-2)


def test_elu_float32_gradient_takes_its_exp_in_the_numba_pass_within_an_ulp():
    """On numba's pass, float32 elu's gradient below 0 is erf_numba's exp_nonpositive, within
    1.03 ulps of e^x (NumPy's float32 exp, a pass of its own before: 2.4 here), as torch's."""
    from ember.backend import compiled

    pytest.importorskip("numba")
    if not compiled.numba_enabled():
        pytest.skip("numba is off")
    x = np.linspace(-87, 0, 1 << 20, dtype=np.float32)
    exact = np.exp(x.astype(np.float64))
    ulp = np.spacing(exact.astype(np.float32)).astype(np.float64)
    for broadcast in (False, True):  # (sum's backward: an expanded 1, copied for the pass)
        e = ember.tensor(x, requires_grad=True)
        y = ember.nn.functional.elu(e)  # (v = 1: the gradient is e^x)
        if broadcast:
            y.sum().backward()
        else:
            y.backward(ember.ones(x.shape))
        assert np.max(np.abs(e.grad.numpy() - exact) / ulp) < 1.03


@pytest.mark.parametrize("dtype", [np.float32, np.float64, np.float16])
@pytest.mark.parametrize("bounds", [(-1.0, 1.0), (-1.1, 0.7), (0.0, 6.0), (-0.0, 1.0),
                                    (-2.0, -0.0), (math.nan, 1.0), (-1.0, math.inf), (3.0, 3.0)])
def test_hardtanh_forward_is_torch_s_to_the_bit(dtype, bounds):
    """hardtanh's forward is NumPy's clip (one pass), which gives PyTorch's bits: x's -0.0 at a
    zero bound (relu6(-0.0) is -0.0; the two-pass maximum-then-minimum gave +0.0), NaN bounds;
    every layout kept."""
    rng = np.random.default_rng(0)
    a = (rng.standard_normal((64, 48)) * 2).astype(dtype)
    a.flat[:8] = [np.nan, -0.0, 0.0, -1.0, 1.0, np.inf, -np.inf, 3.0]
    low, high = bounds
    for arr in (a, a.T, a[::2, 1::3]):
        got = ember.nn.functional.hardtanh(ember.tensor(arr), low, high).numpy()
        want = F.hardtanh(torch.from_numpy(arr.copy()), low, high).numpy()
        bits = f"u{want.itemsize}"
        np.testing.assert_array_equal(got.view(bits), want.view(bits))
        assert got.dtype == want.dtype
        assert got.strides == np.minimum(arr, high).strides  # (the input's layout)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_hardtanh_gradient_of_a_sum_is_torch_s(dtype):
    """``hardtanh(x).sum().backward()``: the broadcast gradient copied and overwritten in place
    by numba's pass (its select must not branch: that loop cannot vectorize) gives torch's."""
    rng = np.random.default_rng(1)
    a = (rng.standard_normal((256, 256)) * 2).astype(dtype)
    a.flat[:5] = [np.nan, -0.0, 0.0, -1.0, 1.0]
    x, tx = ember.tensor(a, requires_grad=True), torch.tensor(a, requires_grad=True)
    ember.nn.functional.hardtanh(x, -1.0, 0.5).sum().backward()
    F.hardtanh(tx, -1.0, 0.5).sum().backward()
    assert x.grad.numpy().tobytes() == tx.grad.numpy().tobytes()


@pytest.mark.parametrize("dtype, bits", [(np.float32, np.uint32), (np.float64, np.uint64)])
@pytest.mark.parametrize("slope", [0.01, 0.5, 1.0, 0.0, 2.0, -0.5, 1e-40])
def test_leaky_relu_forward_in_one_pass_is_torch_s_bit_for_bit(dtype, bits, slope):
    """A large float32/float64 leaky_relu is numba's one pass (the gradient's kernel with
    v = x): torch's bits on random bit patterns, NaN payloads included (a signaling NaN comes
    out quiet, as torch's; NumPy's maximum kept it); NumPy's calls give the same otherwise, in
    the same layout (channels-last kept)."""
    from ember.backend import compiled

    rng = np.random.default_rng(2)
    a = rng.integers(0, np.iinfo(bits).max, (4, 16, 32, 32), dtype=bits,
                     endpoint=True).view(dtype)
    a.flat[:6] = [np.nan, -0.0, 0.0, np.inf, -np.inf, -3.0]
    want = F.leaky_relu(torch.tensor(a), slope).numpy().view(bits)
    runs = []
    for layout in (a, np.ascontiguousarray(a.transpose(0, 2, 3, 1)).transpose(0, 3, 1, 2)):
        for on in (True, False):
            saved = compiled.numba_enabled()
            compiled.use_numba(on and saved)
            try:
                got = ember.nn.functional.leaky_relu(ember.tensor(layout), slope).numpy()
            finally:
                compiled.use_numba(saved)
            runs.append(got.strides)
            got = got.view(bits).copy()
            if on:
                np.testing.assert_array_equal(got, want)
            got[np.isnan(got.view(dtype))] |= bits(1 << (22 if dtype == np.float32 else 51))
            np.testing.assert_array_equal(got, want)  # (quieted, NumPy's calls agree too)
    assert runs[0] == runs[1] and runs[2] == runs[3] and runs[0] != runs[2]
