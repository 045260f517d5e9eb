"""torch.special's Bessel and Airy functions, erfcx, Hurwitz zeta and orthogonal polynomials:
against PyTorch (values, dtypes, broadcasting, gradients where PyTorch has them, edge values),
against mpmath over wide ranges, and under vmap."""

import math

import mpmath
import numpy as np
import pytest
import torch

import ember
from ember.errors import GradError
from ember.func import vmap
from tests.ops.optable import Const, OpCase, S, arg, op_tests

BESSEL = ["bessel_j0", "bessel_j1", "bessel_y0", "bessel_y1", "modified_bessel_i0",
          "modified_bessel_i1", "modified_bessel_k0", "modified_bessel_k1",
          "scaled_modified_bessel_k0", "scaled_modified_bessel_k1", "spherical_bessel_j0",
          "airy_ai"]
POLYNOMIALS = ["chebyshev_polynomial_t", "chebyshev_polynomial_u", "chebyshev_polynomial_v",
               "chebyshev_polynomial_w", "shifted_chebyshev_polynomial_t",
               "shifted_chebyshev_polynomial_u", "shifted_chebyshev_polynomial_v",
               "shifted_chebyshev_polynomial_w", "hermite_polynomial_h", "hermite_polynomial_he",
               "laguerre_polynomial_l", "legendre_polynomial_p"]


def _special(name):
    return getattr(ember.special, name), getattr(torch.special, name)


def unary(low, high):
    return [S(arg(3, 4, low=low, high=high)), S(arg(low=low, high=high)),
            S(arg(2, 3, low=low, high=high, noncontig=True))]


CASES = [
    OpCase("i0e", *_special("i0e"), unary(-5.0, 5.0)),
    OpCase("i1e", *_special("i1e"), unary(-5.0, 5.0)),
    OpCase("erfcx", *_special("erfcx"), unary(-2.0, 4.0)),
    OpCase("zeta", *_special("zeta"),
           [S(arg(3, 4, low=1.5, high=5.0, grad=False), arg(3, 4, low=0.5, high=3.0)),
            S(arg(4, low=2.0, high=4.0, grad=False), arg(3, 1, low=0.5, high=3.0))]),
    OpCase("zeta_number", lambda q: ember.special.zeta(3.0, q),
           lambda q: torch.special.zeta(3.0, q), [S(arg(3, low=0.5, high=2.0))]),
] + [OpCase(name, *_special(name), unary(0.1, 8.0) + [S(arg(5, low=-8.0, high=8.0))],
            grad=False)
     for name in BESSEL] + [
    OpCase(name, *_special(name),
           [S(arg(3, 4, low=-1.2, high=1.2, grad=False), Const(5)),
            S(arg(3, 4, low=-1.2, high=1.2, grad=False), arg(4, low=-1.0, high=12.0, grad=False)),
            S(arg(2, 1, low=-0.9, high=0.9, grad=False),
              arg(3, low=0.0, high=20.0, integer=True, grad=False))],
           grad=False, rtol=1e-7)
    for name in POLYNOMIALS]

test_forward, test_backward, test_gradcheck, test_gradgradcheck, test_jvp = op_tests(CASES)


def _ref(f, xs):
    return np.array([float(f(mpmath.mpf(float(v)))) for v in xs])


_MP = {
    "bessel_j0": lambda v: mpmath.besselj(0, v), "bessel_j1": lambda v: mpmath.besselj(1, v),
    "bessel_y0": lambda v: mpmath.bessely(0, v), "bessel_y1": lambda v: mpmath.bessely(1, v),
    "modified_bessel_i0": lambda v: mpmath.besseli(0, v),
    "modified_bessel_i1": lambda v: mpmath.besseli(1, v),
    "modified_bessel_k0": lambda v: mpmath.besselk(0, v),
    "modified_bessel_k1": lambda v: mpmath.besselk(1, v),
    "scaled_modified_bessel_k0": lambda v: mpmath.besselk(0, v) * mpmath.exp(v),
    "scaled_modified_bessel_k1": lambda v: mpmath.besselk(1, v) * mpmath.exp(v),
    "i0e": lambda v: mpmath.besseli(0, v) * mpmath.exp(-abs(v)),
    "i1e": lambda v: mpmath.besseli(1, v) * mpmath.exp(-abs(v)),
    "airy_ai": mpmath.airyai,
    "erfcx": lambda v: mpmath.exp(v * v) * mpmath.erfc(v),
}


def _wide(name):
    """Points across every branch of the kernel: series, recurrence or quadrature, asymptotic."""
    rng = np.random.default_rng(7)
    x = np.concatenate([rng.uniform(0.0, 3.0, 12), rng.uniform(2.0, 40.0, 24),
                        np.exp(rng.uniform(-25.0, 12.0, 12))])
    if "bessel_k" in name:  # mpmath's K is slow for large x: a few points of the asymptotic branch
        x = np.concatenate([x[:8], x[12:16], [55.0, 150.0, 420.0]])
    if name in ("modified_bessel_i0", "modified_bessel_i1"):
        x = x[x < 700]
    if name == "airy_ai":
        x = np.concatenate([rng.uniform(-15.0, 12.0, 30), -np.exp(rng.uniform(2.0, 16.0, 8)),
                            np.exp(rng.uniform(2.0, 4.5, 6))])
    if name == "erfcx":
        x = np.concatenate([rng.uniform(-26.0, 30.0, 30), np.exp(rng.uniform(-20.0, 40.0, 12))])
    if name in ("i0e", "i1e", "bessel_j0", "bessel_j1", "modified_bessel_i1"):
        x = np.concatenate([x, -x[::3]])
    return x


@pytest.mark.parametrize("name", sorted(_MP))
def test_accuracy_against_mpmath(name):
    mpmath.mp.dps = 40
    x = _wide(name)
    got = getattr(ember.special, name)(ember.from_numpy(x)).numpy()
    want = _ref(_MP[name], x)
    # J, Y and Ai oscillate: absolute accuracy near their zeros (their envelope is below 1)
    atol = 1e-15 if name.startswith(("bessel", "airy")) else 0.0
    np.testing.assert_allclose(got, want, rtol=1e-13, atol=atol)


def test_zeta_accuracy_against_mpmath():
    mpmath.mp.dps = 60
    rng = np.random.default_rng(8)
    x = np.concatenate([rng.uniform(1.01, 60.0, 30), [2.0, 3.0, 4.0, 6.0]])
    q = np.concatenate([np.exp(rng.uniform(-8.0, 8.0, 30)), [-1.5, -2.5, -0.25, -10.5]])
    got = ember.special.zeta(ember.from_numpy(x), ember.from_numpy(q)).numpy()
    want = np.array([float(mpmath.zeta(a, b)) for a, b in zip(x, q)])
    np.testing.assert_allclose(got, want, rtol=1e-13)


@pytest.mark.parametrize("name", BESSEL + ["i0e", "i1e", "erfcx"])
def test_wide_range_and_edges_like_torch(name):
    x = np.concatenate([np.linspace(-60.0, 60.0, 1201), np.exp(np.linspace(-30.0, 30.0, 121)),
                        [0.0, -0.0, np.inf, -np.inf, np.nan, 1e-300, -1e-300, 700.0, 800.0]])
    mine, ref = _special(name)
    got = mine(ember.from_numpy(x)).numpy()
    want = ref(torch.from_numpy(x)).numpy()
    np.testing.assert_array_equal(np.isnan(got), np.isnan(want))
    np.testing.assert_array_equal(np.isinf(got), np.isinf(want))
    # PyTorch's J, Y and Ai (Cephes' fits) are themselves off near zeros and for huge x
    loose = name.startswith(("bessel", "airy"))
    keep = np.abs(x) < 1e4 if loose else slice(None)
    # (to 3e-5: mpmath agrees with Ember there, see test_accuracy_against_mpmath)
    np.testing.assert_allclose(got[keep], want[keep], rtol=1e-4 if loose else 1e-12,
                               atol=1e-6 if loose else 0.0)


def test_zeta_edges_like_torch():
    vals = [1.0, 0.5, 2.0, 3.0, 2.5, np.inf, np.nan, 0.0, -1.0, -1.5, 1e-300, 100.0]
    x, q = (a.ravel() for a in np.meshgrid(vals, vals))
    got = ember.special.zeta(ember.from_numpy(x), ember.from_numpy(q)).numpy()
    want = torch.special.zeta(torch.from_numpy(x), torch.from_numpy(q)).numpy()
    # PyTorch's zeta(inf, -1.5) is inf; Ember gives NaN (the terms alternate in sign there)
    same = ~((x == np.inf) & (q == -1.5))
    np.testing.assert_allclose(got[same], want[same], rtol=1e-13)


@pytest.mark.parametrize("name", POLYNOMIALS)
def test_polynomials_like_torch(name):
    """Integer, fractional (truncated), negative and non-finite degrees; |x| > 1 and inside."""
    xs = np.concatenate([np.linspace(-2.5, 2.5, 41), [-1.0, 1.0, 0.0, 0.5, np.inf, -np.inf]])
    ns = np.array([-3.0, -0.5, 0.0, 0.7, 1.0, 1.9, 2.0, 3.0, 5.0, 7.0, 9.0, 12.0, 33.0, -7.9,
                   np.nan, np.inf])
    x, n = (a.ravel() for a in np.meshgrid(xs, ns))
    mine, ref = _special(name)
    got = mine(ember.from_numpy(x), ember.from_numpy(n)).numpy()
    want = ref(torch.from_numpy(x), torch.from_numpy(n)).numpy()
    np.testing.assert_allclose(got, want, rtol=1e-9, atol=1e-12)


def test_hermite_degree_limit_like_torch():
    for dtype, limit in [("float32", 128), ("float64", 512)]:
        for name in ("hermite_polynomial_h", "hermite_polynomial_he"):
            mine, ref = _special(name)
            got = mine(ember.tensor([0.0], dtype=getattr(ember, dtype)), limit + 1)
            assert np.isnan(got.numpy()).all()
            assert np.isnan(ref(torch.tensor([0.0], dtype=getattr(torch, dtype)), limit + 1))
    # below the limit an odd degree at 0 is exactly 0 (PyTorch's recurrence agrees)
    assert ember.special.hermite_polynomial_h(ember.tensor([0.0]), 127).item() == 0.0


def test_polynomial_nan_input_is_nan():
    # PyTorch's vectorized loop gives some NaN inputs a neighbour's value; Ember keeps NaN
    x = ember.tensor([np.nan, np.nan, np.nan], dtype=ember.float64)
    got = ember.special.chebyshev_polynomial_u(x, ember.tensor([-1.0, 0.0, 3.0]))
    np.testing.assert_array_equal(got.numpy(), [0.0, 1.0, np.nan])


@pytest.mark.parametrize("name", POLYNOMIALS[:1] + POLYNOMIALS[-2:])
def test_polynomial_dtypes_and_numbers_like_torch(name):
    mine, ref = _special(name)
    for make_x, make_n in [(lambda m: m.tensor([1, 2]), lambda m: 2),
                           (lambda m: m.tensor([0.5, 2.0]), lambda m: m.tensor([2, 3])),
                           (lambda m: m.tensor([1, 2]), lambda m: m.tensor([2.0], dtype=m.float64)),
                           (lambda m: 0.5, lambda m: m.tensor([[2.0], [3.0]])),
                           (lambda m: m.tensor([0.25, 0.5], dtype=m.float64),
                            lambda m: m.tensor([[1], [4]]))]:
        got, want = mine(make_x(ember), make_n(ember)), ref(make_x(torch), make_n(torch))
        assert got.dtype.name == str(want.dtype).removeprefix("torch.")
        assert tuple(got.shape) == tuple(want.shape)
        np.testing.assert_allclose(got.numpy(), want.numpy(), rtol=1e-6)


@pytest.mark.parametrize("name", BESSEL + ["i0e", "erfcx"])
def test_unary_dtypes_like_torch(name):
    mine, ref = _special(name)
    for values in ([1, 3], [True, False]):
        got, want = mine(ember.tensor(values)), ref(torch.tensor(values))
        assert got.dtype.name == str(want.dtype).removeprefix("torch.")
        np.testing.assert_allclose(got.numpy(), want.numpy(), rtol=1e-6)
    half = mine(ember.tensor([0.5, 1.5], dtype=ember.float16))
    assert half.dtype == ember.float16


def test_not_differentiable_as_in_torch():
    x = ember.tensor([0.5, 1.5], requires_grad=True)
    for name in BESSEL:
        assert not getattr(ember.special, name)(x).requires_grad
    for name in POLYNOMIALS:
        assert not getattr(ember.special, name)(x, 3).requires_grad
    assert ember.special.i0e(x).requires_grad


def test_zeta_has_no_gradient_in_x():
    x = ember.tensor([2.0, 3.0], dtype=ember.float64, requires_grad=True)
    q = ember.tensor([1.5, 0.5], dtype=ember.float64, requires_grad=True)
    with pytest.raises(GradError, match="zeta: the derivative with respect to input"):
        ember.special.zeta(x, q).sum().backward()
    with pytest.raises(GradError, match="zeta"):
        ember.func.jvp(lambda a: ember.special.zeta(a, q.detach()), (x.detach(),),
                       (ember.ones_like(x),))
    with pytest.raises(TypeError, match="zeta: expected at least one tensor"):
        ember.special.zeta(2.0, 1.0)


@pytest.mark.parametrize("op, args", [
    ("special.zeta", (2.0, 1.0)), ("special.chebyshev_polynomial_t", (2.0, 3)),
    ("special.hermite_polynomial_h", (2.0, 3)), ("igamma", (ember.tensor([1.0]), 2.0)),
    ("igammac", (2.0, ember.tensor([1.0])))])
def test_non_tensor_operands_raise_ember_s_argument_type_error(op, args):
    # (torch raises a TypeError too; Ember's was a plain TypeError, not an ember.errors class)
    torch_args = [torch.tensor(a.numpy()) if isinstance(a, ember.Tensor) else a for a in args]
    fn = torch
    for part in op.split("."):
        fn = getattr(fn, part)
    with pytest.raises(TypeError):
        fn(*torch_args)
    fn = ember
    for part in op.split("."):
        fn = getattr(fn, part)
    with pytest.raises(ember.errors.ArgumentTypeError, match=op.split(".")[-1]):
        fn(*args)


def test_gradient_in_q_alone_while_x_requires_grad_like_torch():
    """PyTorch refuses the derivative in x only when it is asked for: ``grad(…, q)`` works."""
    x = ember.tensor([2.0, 3.0], dtype=ember.float64, requires_grad=True)
    q = ember.tensor([1.5, 0.5], dtype=ember.float64, requires_grad=True)
    xt, qt = (torch.tensor(v.tolist(), dtype=torch.float64, requires_grad=True) for v in (x, q))
    got, = ember.autograd.grad((ember.special.zeta(x, q) * x).sum(), q)
    want, = torch.autograd.grad((torch.special.zeta(xt, qt) * xt).sum(), qt)
    np.testing.assert_allclose(got.numpy(), want.numpy(), rtol=1e-13)
    got, = ember.autograd.grad(ember.igamma(x, q).sum(), q)
    want, = torch.autograd.grad(torch.igamma(xt, qt).sum(), qt)
    np.testing.assert_allclose(got.numpy(), want.numpy(), rtol=1e-13)
    with pytest.raises(GradError, match="zeta: the derivative with respect to input"):
        ember.autograd.grad(ember.special.zeta(x, q).sum(), (x, q))


def test_i1e_gradient_at_zero_like_torch():
    x = ember.tensor([0.0, -0.0, 1e-30], dtype=ember.float64, requires_grad=True)
    t = torch.tensor([0.0, -0.0, 1e-30], dtype=torch.float64, requires_grad=True)
    ember.special.i1e(x).sum().backward()
    torch.special.i1e(t).sum().backward()
    np.testing.assert_allclose(x.grad.numpy(), t.grad.numpy(), rtol=1e-12)


@pytest.mark.parametrize("fn", [
    lambda x: ember.special.bessel_y1(x), lambda x: ember.special.i1e(x),
    lambda x: ember.special.erfcx(x), lambda x: ember.special.zeta(x + 2, 1.5),
    lambda x: ember.special.legendre_polynomial_p(x, ember.tensor([1.0, 2.0, 3.0])),
], ids=["bessel", "i1e", "erfcx", "zeta", "polynomial"])
def test_vmap_matches_a_loop(fn):
    x = ember.from_numpy(np.random.default_rng(2).uniform(0.1, 0.9, (4, 3)))
    got = vmap(fn)(x)
    want = ember.stack([fn(row) for row in x])
    np.testing.assert_allclose(got.numpy(), want.numpy(), rtol=1e-14)


def test_jit_and_hessian_match_eager():
    def fn(x, n):
        return (ember.special.legendre_polynomial_p(x, n) + ember.special.bessel_j0(x)
                + ember.special.zeta(x + 2, 1.5) + ember.special.erfcx(x) + ember.special.i1e(x))

    x, n = ember.tensor([0.2, 0.5], dtype=ember.float64), ember.tensor([2.0, 3.0])
    np.testing.assert_allclose(ember.jit.compile(fn)(x, n).numpy(), fn(x, n).numpy(), rtol=1e-15)

    def loss(x):
        return (ember.special.i0e(x) + ember.special.erfcx(x) + ember.special.zeta(3.0, x)).sum()

    def torch_loss(x):
        return (torch.special.i0e(x) + torch.special.erfcx(x) + torch.special.zeta(3.0, x)).sum()

    got = ember.func.hessian(loss)(x).numpy()
    want = torch.autograd.functional.hessian(torch_loss, torch.tensor([0.2, 0.5],
                                                                      dtype=torch.float64))
    np.testing.assert_allclose(got, want.numpy(), rtol=1e-12)


def test_huge_arguments_keep_their_asymptotic_values():
    """Near the largest float, where ``pi x`` or ``2 pi x`` overflows: ``1/sqrt(x)`` laws."""
    x = np.array([3e307, 1e308, 1.7e308])
    root = np.sqrt(x)
    expected = {
        "i0e": 1 / (math.sqrt(2 * math.pi) * root), "i1e": 1 / (math.sqrt(2 * math.pi) * root),
        "scaled_modified_bessel_k0": math.sqrt(math.pi / 2) / root,
        "scaled_modified_bessel_k1": math.sqrt(math.pi / 2) / root,
        "erfcx": 1 / math.sqrt(math.pi) / x, "modified_bessel_i0": np.full(3, np.inf),
        "modified_bessel_i1": np.full(3, np.inf),
        # J_0 = sqrt(2/(pi x)) cos(x - pi/4) there (mpmath reduces the exact x)
        "bessel_j0": [float((mpmath.cos(v) + mpmath.sin(v)) / mpmath.sqrt(mpmath.pi * v))
                      for v in map(mpmath.mpf, x)],
    }
    for name, want in expected.items():
        got = getattr(ember.special, name)(ember.from_numpy(x)).numpy()
        np.testing.assert_allclose(got, want, rtol=1e-12, err_msg=name)


def test_polynomial_cost_follows_each_degree_not_the_largest():
    """One large degree among many small ones, and a huge degree whose recurrence has
    overflowed to NaN (PyTorch's loop costs each element its own degree)."""
    x = ember.from_numpy(np.random.default_rng(3).uniform(-0.9, 0.9, 200_000))
    n = ember.full((200_000,), 3.0, dtype=ember.float64)
    n[0] = 3000.0
    # (no timed assertion: a regression to every element taking 3000 steps shows as ~50 s)
    got = ember.special.legendre_polynomial_p(x, n)
    huge = ember.special.chebyshev_polynomial_t(ember.tensor([3.0, -3.0]), 1e7)
    want = torch.special.legendre_polynomial_p(torch.from_numpy(x.numpy()),
                                               torch.from_numpy(n.numpy()))
    np.testing.assert_allclose(got.numpy(), want.numpy(), rtol=1e-9, atol=1e-12)
    assert np.isnan(huge.numpy()).all()
    assert np.isnan(torch.special.chebyshev_polynomial_t(torch.tensor([3.0, -3.0]), 1e7)).all()


def test_zeta_cost_follows_each_q_not_the_most_negative():
    """Each element sums ``max(10, 10 - q)`` terms directly (as PyTorch's loop), not all of them
    as many as the most negative ``q`` needs."""
    q = np.full(50_000, 1.5)
    q[0] = -20_000.5
    got = ember.special.zeta(2.0, ember.from_numpy(q))  # (10 s when every q summed 20000)
    want = torch.special.zeta(2.0, torch.from_numpy(q))
    np.testing.assert_allclose(got.numpy(), want.numpy(), rtol=1e-12)


def test_polynomial_errors_name_the_function():
    with pytest.raises(TypeError, match="^shifted_chebyshev_polynomial_t: expected"):
        ember.special.shifted_chebyshev_polynomial_t(0.5, 3)
    with pytest.raises(ember.ShapeError, match="^hermite_polynomial_he: shapes"):
        ember.special.hermite_polynomial_he(ember.zeros(2), ember.zeros(3))


def test_polynomial_flops_count_the_elements():
    from ember.ops.orthogonal_polynomials import OrthogonalPolynomial
    from ember.ops.primitive import TensorSpec
    from ember.profiler.flops import flops_of

    specs = (TensorSpec((3, 4), ember.float32), TensorSpec((4,), ember.float32))
    assert flops_of(OrthogonalPolynomial, specs, {"kind": "legendre"}) == 12  # (was 0: infer)


@pytest.mark.parametrize("name,args", [
    ("chebyshev_polynomial_t", {"x": [0.3, 2.0], "n": [3.0, 2.0]}),
    ("shifted_chebyshev_polynomial_w", {"x": [0.3, 2.0], "n": [3.0, 2.0]}),
    ("hermite_polynomial_he", {"n": [3.0, 2.0], "x": [0.3, 2.0]}),
    ("legendre_polynomial_p", {"x": [0.3, 2.0], "n": [4.0, 1.0]}),
    ("airy_ai", {"x": [0.3, -2.0]}),
    ("spherical_bessel_j0", {"x": [0.3, -2.0]}),
    ("scaled_modified_bessel_k0", {"x": [0.3, 2.0]}),
    ("scaled_modified_bessel_k1", {"x": [0.3, 2.0]}),
])
def test_keyword_x_as_torch(name, args):
    # PyTorch names these functions' argument x (input= is refused there); Ember's was input
    want = getattr(torch.special, name)(**{k: torch.tensor(v) for k, v in args.items()})
    got = getattr(ember.special, name)(**{k: ember.tensor(v) for k, v in args.items()})
    np.testing.assert_allclose(got.numpy(), want.numpy(), rtol=1e-6)
    with pytest.raises(TypeError):
        getattr(torch.special, name)(input=torch.tensor(args["x"]))
    with pytest.raises(TypeError):
        getattr(ember.special, name)(input=ember.tensor(args["x"]))
