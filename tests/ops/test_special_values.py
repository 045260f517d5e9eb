"""Special values (NaN, ±inf, ±0) through ops whose gradient PyTorch defines there: each case
runs in Ember and PyTorch (float64) and compares values and gradients, NaN equal to NaN."""

import numpy as np
import pytest
import torch

import ember

nan, inf = float("nan"), float("inf")


def _values_and_grads(lib, fn, *inputs):
    xs = [lib.tensor(v, dtype=lib.float64, requires_grad=True) for v in inputs]
    out = fn(lib, *xs)
    grads = lib.autograd.grad(out.sum(), xs)
    return [np.asarray(out.detach().tolist())] + [np.asarray(g.tolist()) for g in grads]


def _same_as_torch(fn, *inputs):
    for mine, ref in zip(_values_and_grads(ember, fn, *inputs),
                         _values_and_grads(torch, fn, *inputs)):
        np.testing.assert_allclose(mine, ref, rtol=1e-12, atol=1e-15)


@pytest.mark.parametrize("mode", ["trunc", "floor"])
def test_rounded_division_has_zero_gradient_at_a_zero_divisor(mode):
    # (trunc was trunc(a / b): its zero gradient went through a / b, 0 / 0 = NaN at b = 0)
    _same_as_torch(lambda lib, a, b: lib.div(a, b, rounding_mode=mode),
                   [1.0, 0.0, -3.5, 7.0, nan], [0.0, 0.0, 2.0, -0.0, 1.0])


@pytest.mark.parametrize("dtype", ["bfloat16", "float16", "float32"])
def test_truncated_division_of_special_values_in_every_float_dtype(dtype):
    # (bfloat16's NumPy kind is "V", not "f": it took the integer path, inf / 7 gave NaN)
    a, b = [inf, -7.5, -0.0, nan, 5.0], [7.0, 2.0, -300.0, 1.0, -0.0]
    expected = torch.div(torch.tensor(a, dtype=getattr(torch, dtype)),
                         torch.tensor(b, dtype=getattr(torch, dtype)), rounding_mode="trunc")
    got = ember.div(ember.tensor(a, dtype=getattr(ember, dtype)),
                    ember.tensor(b, dtype=getattr(ember, dtype)), rounding_mode="trunc")
    mine, theirs = got.float().numpy(), expected.float().numpy()
    np.testing.assert_array_equal(mine, theirs)
    numbers = ~np.isnan(theirs)  # (and -0.0 keeps its sign)
    assert np.signbit(mine[numbers]).tolist() == np.signbit(theirs[numbers]).tolist()


def test_std_of_a_constant_slice_has_zero_gradient():
    rows = [[3.0, 3.0, 3.0], [1.0, 2.0, 4.0], [0.0, 0.0, 0.0]]
    _same_as_torch(lambda lib, x: x.std(1), rows)
    _same_as_torch(lambda lib, x: x.std(), [[2.0, 2.0], [2.0, 2.0]])
    _same_as_torch(lambda lib, x: lib.std_mean(x, 1, correction=0)[0], rows)


@pytest.mark.parametrize("p", [1, 2])
def test_multi_margin_loss_with_an_infinite_target_logit(p):
    # (the target's own term, inf - inf = NaN, was scaled by 0 instead of masked)
    logits = [[1.0, inf, 2.0], [0.1, 0.8, 0.2], [-inf, 0.0, 1.0]]
    target = [1, 1, 1]
    _same_as_torch(lambda lib, x: lib.nn.functional.multi_margin_loss(
        x, lib.tensor(target), p=p, reduction="none"), logits)


@pytest.mark.parametrize("op", ["max", "min"])
def test_whole_max_min_with_nan_give_the_gradient_to_the_nans(op):
    _same_as_torch(lambda lib, x: getattr(x, op)(), [[1.0, nan, 2.0, nan], [1.0, 2.0, 3.0, 3.0]])
    _same_as_torch(lambda lib, x: lib.linalg.vector_norm(x, inf, dim=1),
                   [[1.0, nan, 2.0, nan], [1.0, -3.0, 3.0, 2.0]])


def test_amax_and_amin_with_nan_give_nan_gradients_as_torch():
    # (torch's amax splits the gradient among the elements equal to the maximum: none, 0 / 0;
    # its whole max() shares it among the NaNs, as does vector_norm(ord=inf))
    rows = [[1.0, nan, 2.0, nan], [1.0, 2.0, 3.0, 3.0]]
    _same_as_torch(lambda lib, x: x.amax(1), rows)
    _same_as_torch(lambda lib, x: x.amin(1), rows)
    _same_as_torch(lambda lib, x: lib.aminmax(x, dim=1)[1], rows)
    _same_as_torch(lambda lib, x: lib.linalg.matrix_norm(x[:, :2].reshape(2, 2), inf), rows)


@pytest.mark.parametrize("weight", [[0.25], [0.25, -1.5]])
def test_prelu_weight_gradient_with_infinite_inputs(weight):
    # (where(x > 0, x, w * x) sent 0 * inf = NaN into the weight's gradient)
    def fn(lib, x, w):
        x = x.reshape(2, len(weight), -1)
        return lib.nn.functional.prelu(x, w)

    _same_as_torch(fn, [[inf, -2.0, -0.0, 5.0], [1.0, -inf, 3.0, 0.0]], weight)


@pytest.mark.parametrize("upstream", [inf, -inf, nan])
def test_prelu_weight_gradient_ignores_the_upstream_gradient_above_zero(upstream):
    # (torch's weight gradient is 0 where x > 0, not g * 0: an infinite or NaN g there sent
    # NaN into it; at x <= 0 and x = NaN g * x stays, as torch's)
    def fn(lib, x, w):
        return lib.nn.functional.prelu(x.reshape(2, 2, -1), w) * lib.tensor(
            [[upstream, 1.0, 2.0, upstream], [0.5, upstream, -1.0, 3.0]], dtype=lib.float64
        ).reshape(2, 2, -1)

    _same_as_torch(fn, [[1.0, -2.0, -0.5, 5.0], [1.0, 3.0, 3.0, -1.5]], [0.25, -1.5])
    _same_as_torch(fn, [[1.0, -2.0, nan, 5.0], [1.0, 3.0, -0.0, 0.0]], [0.25])


def test_gammainc_of_a_subnormal_a_is_one_not_inf():
    # (the series started at 1 / a, inf for a subnormal a; P(a, x) -> 1 as a -> 0)
    a = ember.tensor([5e-324, 5e-324, 2.2250738585072014e-308, 1e-300], dtype=ember.float64)
    x = ember.tensor([5e-324, 1e-10, 2.2250738585072014e-308, 0.5], dtype=ember.float64)
    np.testing.assert_allclose(ember.special.gammainc(a, x).numpy(), 1.0, rtol=1e-15)


@pytest.mark.parametrize("n", [0, 1, 2])
def test_polygamma_just_below_zero(n):
    # (cot of a subnormal is infinite: NumPy's polyval turned it into NaN)
    x = [-5e-324, -1e-310, -1e-300]
    mine = ember.polygamma(n, ember.tensor(x, dtype=ember.float64)).numpy()
    np.testing.assert_array_equal(mine, torch.polygamma(n, torch.tensor(x, dtype=torch.float64)))


@pytest.mark.parametrize("dtype", ["float32", "float64", "float16", "bfloat16"])
def test_sign_of_a_0d_nan_is_zero(dtype):
    # (NumPy's sign of a 0-d array is a scalar, which putmask refused: l1_loss's backward too)
    assert ember.sign(ember.tensor(nan, dtype=getattr(ember, dtype))).item() == 0.0
    _same_as_torch(lambda lib, x: lib.nn.functional.l1_loss(x, lib.tensor(1.0, dtype=x.dtype)),
                   nan)


@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_histc_over_a_range_wider_than_the_largest_float(dtype):
    # ((x - min) * bins / (max - min) overflowed to inf or NaN, whose int64 cast broke
    # bincount; PyTorch's own counts here depend on that cast, so the check is the exact one)
    big = float(np.finfo(dtype).max)
    x = ember.tensor([-big, big, 0.0, big / 2, -big / 2, 1e30], dtype=getattr(ember, dtype))
    np.testing.assert_array_equal(ember.histc(x, bins=4).numpy(), [1, 1, 2, 2])


@pytest.mark.parametrize("op", ["solve", "inv"])
def test_solve_and_inv_of_a_subnormal_complex_matrix(op):
    # (LAPACK refused it, Ember's own LU found no zero pivot: an IndexError leaked)
    s, t = 5e-324, 2.2250738585072014e-308
    a = np.array([[-s * 1j, 0, 0], [t * 1j, s + s * 1j, s + s * 1j], [t + s * 1j, s * 1j, s * 1j]])
    args = (lambda lib: (lib.tensor(a), lib.ones(3, 2, dtype=lib.complex128))) if op == "solve" \
        else (lambda lib: (lib.tensor(a),))
    mine = getattr(ember.linalg, op)(*args(ember)).numpy()
    np.testing.assert_array_equal(mine, getattr(torch.linalg, op)(*args(torch)).numpy())


@pytest.mark.parametrize("value", [nan, inf, -inf, 0.0, 3.0])
@pytest.mark.parametrize("dtype", ["float64", "float32"])
def test_prod_and_cumprod_of_one_element_have_gradient_one(value, dtype):
    # (the product of the others, rest / x, was NaN at a NaN or inf; PyTorch gives 1)
    calls = [lambda lib, t: t.prod(), lambda lib, t: t.prod(0),
             lambda lib, t: t.reshape(1).cumprod(0), lambda lib, t: t.reshape(1, 1).cumprod(1)]
    for call in calls:
        grads = []
        for lib in (ember, torch):
            x = lib.tensor(value, dtype=getattr(lib, dtype), requires_grad=True)
            call(lib, x).sum().backward()
            grads.append(float(x.grad))
        assert grads[0] == grads[1] == 1.0
    x = ember.tensor(2.0, dtype=ember.float64, requires_grad=True)
    assert ember.autograd.gradgradcheck(lambda t: t.prod() * t, (x,))


@pytest.mark.parametrize("name", ["elu", "selu", "celu"])
@pytest.mark.parametrize("dtype", ["float64", "float32"])
def test_elu_family_gradient_at_nan_takes_the_linear_slope(name, dtype):
    # (the exponential side's slope was taken at NaN: NaN; PyTorch's test is x <= 0. Its
    # float64 vectorised body gives NaN, so each value goes through torch alone: the scalar
    # path, which float32 follows everywhere)
    for value in (nan, inf, -inf, 0.0, -0.0, -1.5, 2.0):
        grads = []
        for lib in (ember, torch):
            x = lib.tensor(value, dtype=getattr(lib, dtype), requires_grad=True)
            getattr(lib.nn.functional, name)(x).backward()
            grads.append(float(x.grad))
        np.testing.assert_allclose(grads[0], grads[1], rtol=1e-6)


@pytest.mark.parametrize("p, dim", [(2, 0), (1, 1), (3, 0)])
def test_renorm_gradient_of_a_slice_holding_nan(p, dim):
    # (a slice left as it is still sent 0 * NaN into its norm's backward: NaN for all of it)
    rows = [[1.0, nan, 2.0], [3.0, 4.0, 0.5], [0.1, 0.2, -0.1], [0.0, 0.0, 0.0]]
    _same_as_torch(lambda lib, x: lib.renorm(x, p, dim, 1.0), rows)
    x = ember.tensor(np.random.default_rng(3).standard_normal((3, 4)), requires_grad=True)
    assert ember.autograd.gradcheck(lambda t: ember.renorm(t, p, dim, 1.2), (x,))


def test_renorm_tangent_of_a_slice_holding_nan_as_torch():
    # (forward mode met the NaN through the product rule: x * dfactor = NaN * 0)
    rows, ones = [[1.0, nan, 2.0], [3.0, 4.0, 0.5], [0.1, 0.2, -0.1]], [[1.0] * 3] * 3
    got = ember.func.jvp(lambda a: ember.renorm(a, 2, 0, 1.0), (ember.tensor(rows),),
                         (ember.tensor(ones),))[1]
    want = torch.func.jvp(lambda a: torch.renorm(a, 2, 0, 1.0), (torch.tensor(rows),),
                          (torch.tensor(ones),))[1]
    np.testing.assert_allclose(got.numpy(), want.numpy(), rtol=1e-6)


def test_rrelu_in_evaluation_gives_a_nan_the_slope():
    # (evaluation is leaky_relu's x > 0 test in PyTorch: a NaN takes the slope, not 1)
    _same_as_torch(lambda lib, x: lib.nn.functional.rrelu(x, 0.1, 0.3, training=False),
                   [nan, inf, -inf, 0.0, -0.0, -2.0, 3.0])
