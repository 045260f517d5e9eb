"""The gamma family (lgamma, digamma, polygamma, mvlgamma, i0, i1) against PyTorch and finite
differences, accuracy in float64 over a wide range, special points, and vmap."""

import numpy as np
import pytest
import torch

import ember
from ember.func import vmap
from tests.ops.optable import OpCase, S, arg, op_tests


def unary(low, high):
    return [S(arg(3, 4, low=low, high=high)), S(arg(low=low, high=high)),
            S(arg(0, 3, low=low, high=high)),
            S(arg(2, 3, low=low, high=high, noncontig=True))]


CASES = [
    OpCase("lgamma", ember.lgamma, torch.lgamma, unary(0.2, 6.0)),
    OpCase("lgamma_neg", ember.lgamma, torch.lgamma, [S(arg(3, 4, low=-3.9, high=-3.1))]),
    OpCase("digamma", ember.digamma, torch.digamma, unary(0.3, 6.0)),
    OpCase("digamma_neg", lambda x: x.digamma(), lambda x: x.digamma(),
           [S(arg(3, 4, low=-2.9, high=-2.1))]),
    OpCase("polygamma1", lambda x: ember.polygamma(1, x), lambda x: torch.polygamma(1, x),
           unary(0.3, 6.0)),
    OpCase("polygamma2_method", lambda x: x.polygamma(2), lambda x: x.polygamma(2),
           [S(arg(3, 4, low=0.5, high=4.0))], gradgrad=False),
    OpCase("mvlgamma", lambda x: ember.mvlgamma(x, p=3), lambda x: torch.mvlgamma(x, p=3),
           [S(arg(3, 4, low=1.2, high=5.0)), S(arg(low=1.2, high=5.0))]),
    OpCase("i0", ember.i0, torch.i0, unary(-4.0, 4.0)),
    OpCase("special_i1", ember.special.i1, torch.special.i1, unary(-4.0, 4.0)),
    OpCase("special_ndtr", ember.special.ndtr, torch.special.ndtr, unary(-3.0, 3.0)),
    OpCase("special_log_ndtr", ember.special.log_ndtr, torch.special.log_ndtr,
           unary(-3.0, 3.0)),
    OpCase("special_ndtri", ember.special.ndtri, torch.special.ndtri,
           unary(0.05, 0.95), gradgrad=False, jvp=False),
    OpCase("special_entr", ember.special.entr, torch.special.entr, unary(0.1, 3.0)),
]

test_forward, test_backward, test_gradcheck, test_gradgradcheck, test_jvp = op_tests(CASES)


def _wide():
    rng = np.random.default_rng(0)
    x = np.concatenate([rng.uniform(-30, 30, 3000), rng.uniform(1e-6, 5, 500),
                        np.exp(rng.uniform(-20, 60, 500))])
    return x[np.abs(x - np.round(x)) > 1e-3]


@pytest.mark.parametrize("name,mine,ref,rtol", [
    ("lgamma", ember.lgamma, torch.lgamma, 1e-9),
    ("digamma", ember.digamma, torch.digamma, 1e-10),
    ("trigamma", lambda x: ember.polygamma(1, x), lambda x: torch.polygamma(1, x), 1e-9),
    ("polygamma3", lambda x: ember.polygamma(3, x), lambda x: torch.polygamma(3, x), 1e-9),
])
def test_gamma_accuracy_float64(name, mine, ref, rtol, numba_or_numpy):
    x = _wide()
    got = mine(ember.from_numpy(x)).numpy()
    want = ref(torch.from_numpy(x)).numpy()
    # lgamma crosses zero at 1 and 2: absolute error there
    np.testing.assert_allclose(got, want, rtol=rtol, atol=1e-12)


def test_lgamma_beside_its_negative_roots_with_numba():
    # numba's kernel is the C library's lgamma; the NumPy twin's reflection loses the relative
    # digits there (0.09 at -2.4570247382208, a root at -2.45702473822...; torch 2e-3), mpmath's
    # values at 40 digits
    if not ember.backend.compiled.numba_enabled():
        pytest.skip("numba's kernels are off: the NumPy twin runs")
    x = np.array([-2.4570247382208, -2.7468290969, -3.1435808883, -3.9552942840])
    want = [7.292550612674704e-16, -0.0016270297550561186, 3.8894044973508284e-10,
            -1.7794497710438694e-08]
    np.testing.assert_allclose(ember.lgamma(ember.from_numpy(x)).numpy(), want, rtol=1e-14)


def test_lgamma_kernel_against_mpmath_and_torch_s_float32():
    # numba's lgamma is a vectorized pass of Ember's own (series at 2, Stirling, its own log,
    # the reflection below 0): within 9 float64 ulps of mpmath's 40-digit values (8.4 beside
    # the minimum at 1.46), and float32 within 1 ulp of torch's (99.8% of positive float32 bit
    # for bit; below 0 torch's float32 kernel is off by up to ~1800 ulp beside the roots)
    pytest.importorskip("numba")
    from ember.ops.gamma_numba import lgamma64

    cases = [(5e-324, 744.4400719213812), (1e-310, 713.8013788281542),
             (3e-07, 15.019483189125586), (0.25, 1.2880225246980774),
             (0.4999999999, 0.5723649431210511), (0.75, 0.20328095143129538),
             (0.999999999, 5.77215649399226e-10), (1.0000000000025, -1.4430392816462874e-12),
             (1.2, -0.08537409000331583), (1.4616321449683622, -0.12148629053584961),
             (1.4755716267822214, -0.12139267407719795), (1.9999999, -4.2278430309861296e-08),
             (2.0000000000003, 1.2692167784617201e-13), (2.6, 0.35741186354897986),
             (7.3, 7.147892523022248), (12.499999999, 18.73434750945125),
             (12.5, 18.734347511936445), (13.75, 21.903762491828793),
             (101.5, 366.04569819527677), (3.0e7, 486501230.4993774),
             (1.5e157, 5.4136698706226006e+159), (2.5e305, 1.7555118602376452e+308),
             # below 0, by the reflection (the C library's lgamma beside the roots)
             (-1e-200, 460.51701859880916), (-0.3, 1.4648400508576025),
             (-1.5, 0.860047015376481), (-2.4570247382208, 7.292550612674704e-16),
             (-3.2548181720040428, -0.6444489696913925), (-7.966140693473899, -7.144761783276097),
             (-15.000000001, -7.176005632375862), (-101.25, -368.0185159338082),
             (-4499999999999999.5, -1.5769284206259133e+17)]
    x, want = (np.array(c) for c in zip(*cases))
    got = np.empty_like(x)
    lgamma64(x, got)
    assert (np.abs(got - want) <= 9 * np.spacing(np.abs(want))).all(), (got - want) / want
    for special in ([0.0, -0.0, -3.0, np.inf, -np.inf, np.nan, 1.0, 2.0, 1e308, -1e16],
                    [0.0, np.inf, np.nan, 1.0, 2.0, 1e308]):  # (a block without negatives)
        special = np.array(special)
        lgamma64(special, got := np.empty_like(special))
        np.testing.assert_array_equal(got, torch.lgamma(torch.from_numpy(special)).numpy())
    f = np.random.default_rng(0).integers(1, 0x7C000000, 200000).astype(np.uint32)
    f = f.view(np.float32)  # positive float32 up to 2^121 (torch's overflows past ~4e36)
    mine = ember.lgamma(ember.from_numpy(f)).numpy().view(np.int32).astype(np.int64)
    theirs = torch.lgamma(torch.from_numpy(f)).numpy().view(np.int32).astype(np.int64)
    assert np.abs(mine - theirs).max() <= 1


def test_lgamma_float64_beside_its_minimum_and_float32_correctly_rounded(numba_or_numpy):
    # numba's pass computes lgamma(x + 1) - log(x) below 1.5, which cancels beside the minimum
    # at 1.46 (up to 8 float64 ulps): float64 input takes the C library's lgamma on
    # (0.5, 1.75) (torch's there within ~0.6 ulp of mpmath); float32 keeps the pass, whose
    # value rounded once is the correctly rounded float32 (mpmath's at 24 bits). The NumPy twin
    # has the same cancellation (up to 7 ulps: FINDINGS of mend57a), so float64 with numba only
    mpmath = pytest.importorskip("mpmath")
    if numba_or_numpy == "numba":
        x = np.concatenate([np.linspace(0.5, 1.75, 100001), np.linspace(0.999, 1.001, 2001),
                            np.linspace(1.44, 1.48, 2001)])
        got = ember.lgamma(ember.from_numpy(x)).numpy()
        want = torch.lgamma(torch.from_numpy(x)).numpy()
        ulps = np.abs(got - want) / np.spacing(np.abs(want))
        assert ulps.max() <= 2, (x[ulps.argmax()], ulps.max())
    rng = np.random.default_rng(5)
    f = np.concatenate([rng.uniform(0, 20, 600), rng.uniform(1.3, 1.7, 600),
                        rng.uniform(-20, 0, 600)]).astype(np.float32)
    got = ember.lgamma(ember.from_numpy(f)).numpy()
    with mpmath.workprec(80):
        want = np.array([float(mpmath.loggamma(mpmath.mpf(float(v))).real) for v in f])
    # (a float64 value 80 bits good rounds to float32 as the exact value does, but at ties)
    np.testing.assert_array_equal(got, want.astype(np.float32))


def test_trigamma_kernel_gives_the_twins_bits_and_torch_s_special_points():
    # digamma's backward is polygamma(1): numba's one-pass kernel (trigamma64) runs the NumPy
    # twin's steps, so the two agree bit for bit (also on random bit patterns)
    pytest.importorskip("numba")
    from ember.backend import compiled
    from ember.ops.gamma_kernel import polygamma_array
    from ember.ops.gamma_numba import trigamma64

    rng = np.random.default_rng(3)
    x = np.concatenate([rng.uniform(-30, 30, 20000), np.exp(rng.uniform(-700, 700, 2000)),
                        rng.integers(0, 2**64, 20000, dtype=np.uint64).view(np.float64),
                        [0.0, -0.0, -1.0, -2.0, -1e300, 1.0, 13.0, np.inf, -np.inf, np.nan,
                         5e-324, -5e-324, -0.5, 1e308, -2.0**52 - 0.5]])
    fast = np.empty_like(x)
    trigamma64(x, fast)
    saved = compiled.numba_enabled()
    try:
        compiled.use_numba(False)
        twin = polygamma_array(1, x)
    finally:
        compiled.use_numba(saved)
    np.testing.assert_array_equal(fast.view(np.int64)[~np.isnan(twin)],
                                  twin.view(np.int64)[~np.isnan(twin)])
    assert np.isnan(fast[np.isnan(twin)]).all()
    special = np.array([0.0, -0.0, 1.0, 2.0, np.inf, -np.inf, np.nan, 1e-300, -0.5, -7.25])
    # (torch's trigamma is good to ~5e-10: pi²/6 at 1; torch is finite at negative integers)
    np.testing.assert_allclose(ember.polygamma(1, ember.from_numpy(special)).numpy(),
                               torch.polygamma(1, torch.from_numpy(special)).numpy(), rtol=1e-9)


def test_bessel_accuracy_float64(numba_or_numpy):
    x = np.linspace(-700, 700, 4001)
    t = torch.from_numpy(x)
    np.testing.assert_allclose(ember.i0(ember.from_numpy(x)).numpy(), torch.i0(t).numpy(),
                               rtol=1e-12)
    np.testing.assert_allclose(ember.special.i1(ember.from_numpy(x)).numpy(),
                               torch.special.i1(t).numpy(), rtol=1e-12)
    for name in ("i0e", "i1e"):
        np.testing.assert_allclose(getattr(ember.special, name)(ember.from_numpy(x)).numpy(),
                                   getattr(torch.special, name)(t).numpy(), rtol=1e-12)


def test_bessel_i_series_against_mpmath(numba_or_numpy):
    # numba's series multiplies each term by a precomputed 1 / (k (nu + k)) (a division per
    # term made the loop 3x slower); the twin divides: both within a few ulp of mpmath's
    # 40-digit values
    x = ember.tensor([0.3, 2.5, 7.75, -12.5, 29.5, -29.99], dtype=ember.float64)
    i0 = [1.022626879351597, 3.289839144050123, 338.5137537472759, 30596.335155785153,
          478144163888.0398, 774024656436.818]
    i1 = [0.15169384000359276, 2.5167162452886984, 315.85248092400343, -29345.74964207113,
          469968885416.2773, -761008580669.2638]
    i1e = [0.1123775606398388, 0.20658464953126657, 0.1360511000803391, -0.10936143099065089,
           0.07250732615718372, -0.07192800939108444]
    np.testing.assert_allclose(ember.i0(x).numpy(), i0, rtol=4e-15)
    np.testing.assert_allclose(ember.special.i1(x).numpy(), i1, rtol=4e-15)
    np.testing.assert_allclose(ember.special.i1e(x).numpy(), i1e, rtol=4e-15)


def test_special_points_like_torch(numba_or_numpy):
    x = np.array([0.0, -0.0, -1.0, -2.0, 1.0, 2.0, np.inf, np.nan, 1e-300])
    for mine, ref in [(ember.lgamma, torch.lgamma), (ember.digamma, torch.digamma),
                      (ember.i0, torch.i0)]:
        np.testing.assert_allclose(mine(ember.from_numpy(x)).numpy(),
                                   ref(torch.from_numpy(x)).numpy(), rtol=1e-14)


def test_dtypes_and_errors():
    assert ember.lgamma(ember.tensor([1, 2])).dtype is ember.float32
    assert ember.polygamma(1, ember.tensor([1.0], dtype=ember.float64)).dtype is ember.float64
    with pytest.raises(ValueError, match="negative n"):
        ember.polygamma(-1, ember.tensor([1.0]))
    with pytest.raises(ValueError, match="p has to be"):
        ember.mvlgamma(ember.tensor([3.0]), p=0)


def test_inplace_forms():
    x = ember.tensor([0.5, 3.0])
    x.lgamma_()
    np.testing.assert_allclose(x.numpy(), torch.tensor([0.5, 3.0]).lgamma().numpy(), rtol=1e-6)


def test_vmap():
    x = ember.rand(4, 3) + 0.5
    for f in (ember.lgamma, ember.digamma, lambda t: ember.polygamma(2, t), ember.i0,
              ember.special.i1):
        np.testing.assert_allclose(vmap(f)(x).numpy(), f(x).numpy())


def test_special_namespace():
    x = ember.tensor([0.2, 0.7])
    t = torch.tensor([0.2, 0.7])
    for name in ("expit", "logit", "erf", "erfc", "erfinv", "gammaln", "digamma", "psi",
                 "sinc", "i0", "ndtr", "entr", "log_ndtr", "ndtri", "exp2", "expm1", "log1p"):
        np.testing.assert_allclose(getattr(ember.special, name)(x).numpy(),
                                   getattr(torch.special, name)(t).numpy(), rtol=1e-5,
                                   err_msg=name)
    np.testing.assert_allclose(ember.special.multigammaln(x + 2, 2).numpy(),
                               torch.special.multigammaln(t + 2, 2).numpy(), rtol=1e-5)
    np.testing.assert_allclose(ember.special.polygamma(1, x).numpy(),
                               torch.special.polygamma(1, t).numpy(), rtol=1e-5)
    np.testing.assert_allclose(ember.special.xlogy(x, x).numpy(),
                               torch.special.xlogy(t, t).numpy(), rtol=1e-5)
    np.testing.assert_allclose(ember.special.xlog1py(x, x).numpy(),
                               torch.special.xlog1py(t, t).numpy(), rtol=1e-5)
    np.testing.assert_allclose(ember.special.logsumexp(x, 0).numpy(),
                               torch.special.logsumexp(t, 0).numpy(), rtol=1e-5)
    np.testing.assert_allclose(ember.special.softmax(x, 0).numpy(),
                               torch.special.softmax(t, 0).numpy(), rtol=1e-5)
    np.testing.assert_allclose(ember.special.log_softmax(x, 0).numpy(),
                               torch.special.log_softmax(t, 0).numpy(), rtol=1e-5)


def test_ndtri_and_log_ndtr_tails(numba_or_numpy):
    p = np.array([1e-300, 1e-20, 1e-10, 1e-3, 0.3, 0.5, 0.9, 1 - 1e-10, 0.0, 1.0])
    np.testing.assert_allclose(ember.special.ndtri(ember.from_numpy(p)).numpy(),
                               torch.special.ndtri(torch.from_numpy(p)).numpy(), rtol=1e-13)
    x = np.array([-50.0, -30.0, -21.0, -19.0, -5.0, 0.0, 3.0, 40.0])
    np.testing.assert_allclose(ember.special.log_ndtr(ember.from_numpy(x)).numpy(),
                               torch.special.log_ndtr(torch.from_numpy(x)).numpy(), rtol=1e-13)


def test_mvlgamma_of_integers_is_float():
    assert_close = np.testing.assert_allclose
    out = ember.mvlgamma(ember.tensor([2, 3]), 2)
    assert out.dtype is ember.float32
    assert_close(out.numpy(), torch.mvlgamma(torch.tensor([2, 3]), 2).numpy(), rtol=1e-6)
    with pytest.raises(ember.DTypeError, match="boolean"):
        ember.mvlgamma(ember.tensor([True]), 1)


def test_ndtri_outside_unit_interval_is_nan():
    p = [-0.5, -1e-9, 1 + 1e-9, 2.0, float("nan")]
    assert np.isnan(ember.special.ndtri(ember.tensor(p, dtype=ember.float64)).numpy()).all()


def test_xlog1py_numbers_and_zero_input():
    x = np.array([0.0, 0.0, 0.0, 0.0, 2.0, -1.5])
    y = np.array([-1.0, -2.0, 0.5, np.nan, 3.0, 0.2])
    ex, ey = ember.tensor(x, requires_grad=True), ember.tensor(y, requires_grad=True)
    tx, ty = torch.tensor(x, requires_grad=True), torch.tensor(y, requires_grad=True)
    out, ref = ember.special.xlog1py(ex, ey), torch.special.xlog1py(tx, ty)
    np.testing.assert_allclose(out.detach().numpy(), ref.detach().numpy())
    for g, tg in zip(ember.autograd.grad(out.sum(), [ex, ey]),
                     torch.autograd.grad(ref.sum(), [tx, ty])):
        np.testing.assert_allclose(g.numpy(), tg.numpy())
    for a, b in ((0.0, [-1.0, 2.0]), ([0.0, 2.0], 3.0), (2, [1, 2])):
        ea, ta = (ember.tensor(a), torch.tensor(a)) if isinstance(a, list) else (a, a)
        eb, tb = (ember.tensor(b), torch.tensor(b)) if isinstance(b, list) else (b, b)
        np.testing.assert_allclose(ember.special.xlog1py(ea, eb).numpy(),
                                   torch.special.xlog1py(ta, tb).numpy(), rtol=1e-6)


@pytest.mark.parametrize("p", [1.5, 2.0, True, "2"])
def test_mvlgamma_p_that_is_not_an_int_is_a_type_error_as_torch(p):
    # fftspecial54: p=1.5 said "p has to be greater than or equal to 1, got 1.5" (a ValueError)
    with pytest.raises(TypeError, match="argument 'p'.* must be int"):
        torch.mvlgamma(torch.tensor([3.0]), p)
    with pytest.raises(TypeError, match=r"^mvlgamma: p must be an int, got "):
        ember.mvlgamma(ember.tensor([3.0]), p)


def test_mvlgamma_takes_a_numpy_integer_p_as_torch():
    x = [2.5, 3.0]
    want = torch.mvlgamma(torch.tensor(x, dtype=torch.float64), np.int64(2))
    got = ember.mvlgamma(ember.tensor(x, dtype=ember.float64), np.int64(2))
    np.testing.assert_allclose(got.numpy(), want.numpy(), rtol=1e-13)


@pytest.mark.parametrize("n", [2, 4])
def test_even_polygamma_at_negative_half_integers_against_mpmath(n):
    # the reflection's cot(pi x) was cos(pi / 2) / 1 = 6e-17 there, not 0: psi⁽²⁾(-39.5) was
    # 6e-12 relative off, psi⁽⁴⁾(-39.5) 1.3e-7 (torch 1.8e-12, 2e-8)
    mpmath = pytest.importorskip("mpmath")
    mpmath.mp.dps = 30
    x = -np.arange(0, 40) - 0.5
    got = ember.polygamma(n, ember.from_numpy(x)).numpy()
    want = np.array([float(mpmath.polygamma(n, v)) for v in x])
    np.testing.assert_allclose(got, want, rtol=2e-15)
