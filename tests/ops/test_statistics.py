"""Order statistics and NaN-aware reductions against PyTorch and finite differences: quantile,
nanquantile, nanmedian, mode, aminmax, nansum, nanmean, cummax, cummin, logcumsumexp, cov,
corrcoef. The table (distinct random values, so no tie decides a gradient) checks values,
gradients, second derivatives and jvp; NaN enters through a fixed mask. Direct comparisons
cover ties, NaN, empty and 0-d inputs, integer dtypes and errors; the table's rows also run
under vmap against a loop."""

import numpy as np
import pytest
import torch

import ember
from ember.errors import DTypeError, IndexOutOfRange, ShapeError
from ember.func.vmap import vmap
from tests.func import test_vmap_rules as vmap_rules
from tests.ops.optable import Const, OpCase, S, arg, op_tests, same_as_torch, tensor_in

NAN, INF = float("nan"), float("inf")


def case(name, fn, samples, **kw):
    return OpCase(name, lambda *a: fn(ember, *a), lambda *a: fn(torch, *a), samples, **kw)


def nan_at(m, x, mask, fill=NAN):
    return m.where(mask, fill, x)


MASK = Const(np.array([[False, True, False, False, True],
                       [False, False, False, False, False],
                       [True, True, True, True, True],
                       [False, True, True, True, False]]))
SOME = Const(MASK.value[[0, 1, 3]])  # no all-NaN row: a jvp there is 0, finite differences NaN
Q = arg(3, low=0.05, high=0.95)  # a differentiable q tensor
ROWS = [S(arg(3, 5)), S(arg(4, 3, noncontig=True)), S(arg(6))]

CASES = [
    case("quantile", lambda m, x: m.quantile(x, 0.3, dim=-1), ROWS + [S(arg())]),
    case("quantile_all", lambda m, x: m.quantile(x, 0.62), [S(arg(3, 4)), S(arg())]),
    case("quantile_all_keepdim", lambda m, x: x.quantile(0.5, keepdim=True), [S(arg(2, 3))]),
    case("quantile_q_tensor", lambda m, x, q: m.quantile(x, q, dim=0, keepdim=True),
         [S(arg(5, 2), Q), S(arg(4), arg(low=0.1, high=0.9)), S(arg(3, 3), arg(0))]),
    case("quantile_q_tensor_all", lambda m, x, q: m.quantile(x, q), [S(arg(2, 4), Q)]),
    case("quantile_lower", lambda m, x: m.quantile(x, 0.4, 1, interpolation="lower"),
         ROWS[:2]),
    case("quantile_higher", lambda m, x, q: m.quantile(x, q, 0, interpolation="higher"),
         [S(arg(5, 2), Q)]),
    case("quantile_nearest", lambda m, x: x.quantile(0.5, -1, interpolation="nearest"),
         [S(arg(3, 4)), S(arg(3, 5))]),
    case("quantile_midpoint", lambda m, x, q: m.quantile(x, q, 1, interpolation="midpoint"),
         [S(arg(2, 6), Q)]),
    case("quantile_nan", lambda m, x, mask: m.quantile(nan_at(m, x, mask), 0.3, dim=1),
         [S(arg(4, 5), MASK)]),
    case("nanquantile", lambda m, x, mask: m.nanquantile(nan_at(m, x, mask), 0.3, dim=1),
         [S(arg(4, 5), MASK)]),
    case("nanquantile_q", lambda m, x, mask, q: m.nanquantile(nan_at(m, x, mask), q, dim=1,
                                                              keepdim=True),
         [S(arg(4, 5), MASK, Q)]),
    case("nanquantile_all", lambda m, x, mask: m.nanquantile(nan_at(m, x, mask), 0.7),
         [S(arg(4, 5), MASK)]),
    case("nanquantile_nearest", lambda m, x, mask: m.nanquantile(
        nan_at(m, x, mask), 0.5, 1, interpolation="nearest"), [S(arg(3, 5), SOME)]),
    case("nanmedian", lambda m, x, mask: m.nanmedian(nan_at(m, x, mask)), [S(arg(4, 5), MASK)]),
    case("nanmedian_dim", lambda m, x, mask: tuple(m.nanmedian(nan_at(m, x, mask), 1)),
         [S(arg(3, 5), SOME)]),
    case("nanmedian_dim0", lambda m, x: tuple(x.nanmedian(0, keepdim=True)),
         ROWS[:2] + [S(arg())]),
    case("mode", lambda m, x: tuple(m.mode(x, -1)), ROWS + [S(arg()), S(arg(0, 3))]),
    case("mode_keepdim", lambda m, x: tuple(x.mode(0, keepdim=True)), ROWS[:2]),
    case("aminmax", lambda m, x: tuple(m.aminmax(x)), [S(arg(3, 4)), S(arg())]),
    case("aminmax_dim", lambda m, x: tuple(m.aminmax(x, dim=-1, keepdim=True)),
         ROWS + [S(arg(0, 3))]),
    case("aminmax_keepdim", lambda m, x: tuple(x.aminmax(keepdim=True)), [S(arg(2, 3))]),
    case("nansum", lambda m, x, mask: m.nansum(nan_at(m, x, mask)), [S(arg(4, 5), MASK)]),
    case("nansum_dim", lambda m, x, mask: nan_at(m, x, mask).nansum((0, -1), keepdim=True),
         [S(arg(4, 5), MASK)]),
    case("nansum_plain", lambda m, x: m.nansum(x, 0), ROWS + [S(arg()), S(arg(0, 3))]),
    case("nanmean", lambda m, x, mask: m.nanmean(nan_at(m, x, mask), 1), [S(arg(4, 5), MASK)]),
    case("nanmean_all", lambda m, x, mask: nan_at(m, x, mask).nanmean(), [S(arg(4, 5), MASK)]),
    case("nanmean_plain", lambda m, x: m.nanmean(x, -1, keepdim=True), ROWS + [S(arg())]),
    case("cummax", lambda m, x: tuple(m.cummax(x, -1)), ROWS + [S(arg()), S(arg(0, 3))]),
    case("cummax_dim0", lambda m, x: tuple(x.cummax(0)), [S(arg(5, 3)), S(arg(2, 3, 4))]),
    case("cummin", lambda m, x: tuple(m.cummin(x, 1)), ROWS[:2] + [S(arg(2, 0))]),
    case("cummin_dim0", lambda m, x: tuple(x.cummin(-3)), [S(arg(3, 2, 2))]),
    case("logcumsumexp", lambda m, x: m.logcumsumexp(x, -1),
         ROWS + [S(arg()), S(arg(0, 3)), S(arg(3, 4, low=-30, high=30))]),
    case("logcumsumexp_dim0", lambda m, x: x.logcumsumexp(0), [S(arg(5, 3)), S(arg(2, 3, 4))]),
    case("logcumsumexp_neginf", lambda m, x, mask: m.logcumsumexp(
        nan_at(m, x, mask, -INF), 1), [S(arg(3, 4), Const(np.array(
            [[False, True, False, True], [False, True, True, False], [False, False, False,
                                                                       True]])))]),
    case("cov", lambda m, x: m.cov(x), [S(arg(3, 5)), S(arg(6)), S(arg(2, 4, noncontig=True)),
                                        S(arg(1, 4))]),
    case("cov_correction", lambda m, x: m.cov(x, correction=0), [S(arg(2, 5))]),
    case("cov_aweights", lambda m, x, w: m.cov(x, aweights=w),
         [S(arg(3, 5), arg(5, low=0.2, high=1.5)), S(arg(4), arg(4, low=0.2, high=1.5))]),
    case("cov_fweights", lambda m, x, f: x.cov(correction=2, fweights=f),
         [S(arg(2, 5), Const(np.array([1, 2, 0, 3, 1])))]),
    case("cov_both", lambda m, x, f, w: m.cov(x, fweights=f, aweights=w),
         [S(arg(3, 5), Const(np.array([1, 2, 1, 3, 1])), arg(5, low=0.2, high=1.5))]),
    case("corrcoef", lambda m, x: m.corrcoef(x), [S(arg(3, 5)), S(arg(2, 4, noncontig=True))]),
    case("corrcoef_one_variable", lambda m, x: x.corrcoef(), [S(arg(5))]),
]

test_forward, test_backward, test_gradcheck, test_gradgradcheck, test_jvp = op_tests(CASES)

TABLE = [pytest.param(c, s, id=f"{c.name}[{k}]") for c in CASES for k, s in enumerate(c.samples)]


@pytest.mark.parametrize("case,sample", TABLE)
def test_vmap_matches_a_loop(case, sample):
    """Batched values and per-sample gradients against a Python loop, as
    tests/func/test_vmap_rules.py does for the other families."""
    vmap_rules.test_forward_all_batched(case, sample)
    vmap_rules.test_forward_first_batched_last_axis(case, sample)
    vmap_rules.test_per_sample_gradients(case, sample)


# -- direct comparisons -------------------------------------------------------------------------
def both(fn, *data):
    same_as_torch(lambda lib: fn(lib, *[tensor_in(lib, d) for d in data]), rtol=1e-6, atol=1e-12)


X = np.random.default_rng(0).normal(size=(3, 5))
XN = X.copy()
XN[0, 1] = NAN
XN[2, :] = NAN


@pytest.mark.parametrize("interpolation", ["linear", "lower", "higher", "midpoint", "nearest"])
def test_quantile_modes_nan_and_shapes(interpolation):
    kw = {"interpolation": interpolation}
    for q in (0.0, 0.3, 0.5, 1.0):
        both(lambda m, x, q=q: m.quantile(x, q, dim=1, **kw), XN)
        both(lambda m, x, q=q: m.nanquantile(x, q, dim=1, **kw), XN)
        both(lambda m, x, q=q: m.nanquantile(x, q, dim=0, keepdim=True, **kw), XN)
    qs = np.array([0.1, 0.5, 0.75])
    both(lambda m, x, q: m.quantile(x, q, **kw), X, qs)
    both(lambda m, x, q: m.quantile(x, q, dim=0, keepdim=True, **kw), X, qs)
    both(lambda m, x, q: m.quantile(x, q, keepdim=True, **kw), X, qs)
    both(lambda m, x: m.nanquantile(x, 0.4, **kw), XN)
    both(lambda m, x: m.quantile(x.float(), 0.37, dim=0, **kw), X)
    both(lambda m, x: m.quantile(x, 0.5, dim=0, keepdim=True, **kw), 3.0)
    both(lambda m, x, q: m.quantile(x, q, dim=1, **kw), X, np.zeros(0))
    both(lambda m, x: m.nanquantile(x, 0.5, **kw), [NAN, NAN])
    both(lambda m, x: m.quantile(x, 0.5, 1, **kw), [[1.0, 1.0, 2.0, 2.0], [3.0, 3.0, 3.0, 0.0]])


def test_quantile_errors():
    x = ember.from_numpy(X)
    with pytest.raises(ValueError, match=r"quantile: q must be in the range \[0, 1\]"):
        ember.quantile(x, 1.5)
    with pytest.raises(ValueError, match=r"q values must be in the range \[0, 1\]"):
        ember.nanquantile(x, ember.tensor([0.5, -0.1], dtype=ember.float64))
    with pytest.raises(DTypeError, match="float32 or float64"):
        ember.quantile(ember.tensor([1, 2]), 0.5)
    with pytest.raises(DTypeError, match="q tensor must have the input's dtype"):
        ember.quantile(x, ember.tensor([0.5]))
    with pytest.raises(ShapeError, match="0-d or 1-D"):
        ember.quantile(x, ember.tensor([[0.5]], dtype=ember.float64))
    with pytest.raises(ShapeError, match="non-empty"):
        ember.quantile(ember.zeros(0, 3), 0.5, dim=1)
    with pytest.raises(ValueError, match="interpolation must be one of"):
        ember.quantile(x, 0.5, interpolation="cubic")


def test_nanmedian_ties_nan_rows_and_edges():
    rng = np.random.default_rng(1)
    for _ in range(40):  # ties and NaN: the index of the k-th non-NaN value in stable order
        a = rng.integers(0, 4, size=(3, int(rng.integers(1, 30)))).astype(float)
        a[rng.random(a.shape) < 0.3] = NAN
        both(lambda m, x: tuple(m.nanmedian(x, 1)), a)
    for n in (1, 3, 4, 5, 17, 37, 100):  # an all-NaN row: torch's nth_element position
        both(lambda m, x: tuple(m.nanmedian(x, 1)), np.full((2, n), NAN))
    both(lambda m, x: m.nanmedian(x), XN)
    both(lambda m, x: tuple(m.nanmedian(x, 0, keepdim=True)), XN)
    both(lambda m, x: m.nanmedian(x), np.zeros(0))
    both(lambda m, x: tuple(m.nanmedian(x, 0)), 2.0)
    both(lambda m, x: tuple(m.nanmedian(x, 0)), [3, 1, 2, 2])
    both(lambda m, x: tuple(m.nanmedian(x, 1)), np.zeros((0, 2)))
    with pytest.raises(IndexOutOfRange, match="nanmedian: the reduced dimension 1"):
        ember.nanmedian(ember.zeros(2, 0), 1)


def test_mode_ties_pick_the_smallest_most_frequent_value():
    rng = np.random.default_rng(2)
    for _ in range(40):  # rows of up to 16, where torch's sort keeps ties in order
        b = rng.integers(0, 4, size=(3, int(rng.integers(1, 17))))
        both(lambda m, x: tuple(m.mode(x, 1)), b)
        both(lambda m, x: tuple(m.mode(x, 0, keepdim=True)), b.T.copy())
        both(lambda m, x: tuple(m.mode(x.double(), 1)), b)
    both(lambda m, x: tuple(m.mode(x)), [True, False, True])
    both(lambda m, x: tuple(m.mode(x)), 2.0)
    both(lambda m, x: tuple(m.mode(x, 1)), np.zeros((0, 3)))
    with pytest.raises(IndexOutOfRange, match="mode: the reduced dimension 1"):
        ember.mode(ember.zeros(3, 0), 1)
    # longer rows: the value is torch's; the index is the last copy of it
    long = ember.tensor([2, 0, 2, 1, 0] * 10)
    values, indices = long.mode()
    assert values.item() == 0 and indices.item() == 49


def test_cummax_cummin_ties_nan_and_dtypes():
    rng = np.random.default_rng(3)
    for _ in range(30):
        c = rng.integers(0, 4, size=(3, int(rng.integers(1, 20)))).astype(float)
        c[rng.random(c.shape) < 0.2] = NAN
        both(lambda m, x: tuple(m.cummax(x, 1)), c)
        both(lambda m, x: tuple(m.cummin(x, 0)), c)
    both(lambda m, x: tuple(m.cummax(x, 0)), [1.0, 3, 3, 2, NAN, 5, NAN, 0])
    both(lambda m, x: tuple(m.cummin(x, 0)), [3, 1, 1, 2, 0, 0])
    both(lambda m, x: tuple(m.cummax(x, 0)), [True, False, True])
    both(lambda m, x: tuple(m.cummax(x, 0)), np.array([5, -1, 7], np.int8))
    both(lambda m, x: tuple(m.cummax(x, 0)), 2.0)
    both(lambda m, x: tuple(m.cummin(x, 1)), np.zeros((2, 0)))


def test_logcumsumexp_is_stable_with_infinities():
    both(lambda m, x: m.logcumsumexp(x, 0), [-INF, 0.0, -INF, 1000.0, NAN, 1.0])
    both(lambda m, x: m.logcumsumexp(x, 0), [-INF, -INF, 1.0])
    both(lambda m, x: m.logcumsumexp(x, 0), [INF, -INF, INF])
    both(lambda m, x: m.logcumsumexp(x.float(), 1), X * 50)
    both(lambda m, x: m.logcumsumexp(x, 0), 2.0)
    x = ember.tensor([0.0, -INF, 1.0, 2.0], dtype=ember.float64).requires_grad_()
    xt = torch.tensor([0.0, -INF, 1.0, 2.0], dtype=torch.float64, requires_grad=True)
    g = [1.0, -2.0, 0.5, 1.0]
    ember.logcumsumexp(x, 0).backward(ember.tensor(g, dtype=ember.float64))
    torch.logcumsumexp(xt, 0).backward(torch.tensor(g, dtype=torch.float64))
    np.testing.assert_allclose(x.grad.numpy(), xt.grad.numpy(), rtol=1e-12)
    assert x.grad.numpy()[1] == 0.0
    with pytest.raises(DTypeError, match="logcumsumexp: expected a floating input"):
        ember.logcumsumexp(ember.tensor([1, 2]), 0)


def test_aminmax_nansum_nanmean_edges():
    both(lambda m, x: tuple(m.aminmax(x)), XN)
    both(lambda m, x: tuple(m.aminmax(x, dim=1)), XN)
    both(lambda m, x: tuple(m.aminmax(x)), [True, False])
    both(lambda m, x: tuple(m.aminmax(x, dim=0)), 3)
    both(lambda m, x: tuple(m.aminmax(x, dim=1)), np.zeros((0, 2)))
    for bad, kw in ((np.zeros(0), {}), (np.zeros((2, 0)), {"dim": 1})):
        with pytest.raises(ShapeError, match="aminmax: cannot compute aminmax over an empty"):
            ember.aminmax(ember.from_numpy(bad), **kw)
    both(lambda m, x: m.nansum(x), XN)
    both(lambda m, x: m.nansum(x, (0, 1), dtype=m.float32), XN)
    both(lambda m, x: m.nansum(x), [1, 2])
    both(lambda m, x: m.nansum(x), np.array([1, 2], np.int8))
    both(lambda m, x: m.nansum(x), [True, True])
    both(lambda m, x: m.nansum(x.half()), XN)
    both(lambda m, x: m.nanmean(x), XN)
    both(lambda m, x: m.nanmean(x, 1), XN)
    both(lambda m, x: m.nanmean(x), np.zeros(0))
    with pytest.raises(DTypeError, match="nanmean: expected a floating input"):
        ember.nanmean(ember.tensor([1, 2]), dtype=ember.float32)


def test_cov_and_corrcoef_edges_and_errors():
    w, aw = np.array([1, 2, 0, 3, 1]), np.random.default_rng(4).uniform(0.1, 1, 5)
    both(lambda m, x: m.cov(x), [[1, 2, 4], [3, 3, 0]])
    both(lambda m, x: m.cov(x), np.array([1, 2, 4], np.int32))
    both(lambda m, x, f, a: m.cov(x, correction=0, fweights=f, aweights=a), X, w, aw)
    both(lambda m, x, a: m.cov(x.float(), aweights=a), X, aw)
    both(lambda m, x, f: m.cov(x, fweights=f), X, w.astype(np.int32))
    both(lambda m, x: m.cov(x), np.zeros((0, 3)))
    with pytest.warns(UserWarning, match="degrees of freedom is <= 0"):
        both(lambda m, x: m.cov(x), np.zeros((2, 0)))
    with pytest.warns(UserWarning, match="degrees of freedom"):
        both(lambda m, x: m.cov(x), 2.0)
    both(lambda m, x: m.corrcoef(x), [1, 2, 3])
    both(lambda m, x: m.corrcoef(x), [[1.0, 1, 1], [1, 2, 3]])
    x = ember.from_numpy(X)
    with pytest.raises(ShapeError, match="two or fewer dimensions"):
        ember.cov(ember.zeros(2, 2, 2))
    with pytest.raises(ShapeError, match="two or fewer dimensions"):
        ember.corrcoef(ember.zeros(2, 2, 2))
    with pytest.raises(DTypeError, match="bool"):
        ember.cov(ember.tensor([True, False]))
    with pytest.raises(DTypeError, match="fweights to have an integer dtype"):
        ember.cov(x, fweights=ember.ones(5))
    with pytest.raises(DTypeError, match="aweights to have a floating dtype"):
        ember.cov(x, aweights=ember.ones(5, dtype=ember.int64))
    with pytest.raises(ValueError, match="fweights cannot be negative"):
        ember.cov(x, fweights=ember.tensor([1, -1, 1, 1, 1]))
    with pytest.raises(ShapeError, match=r"as many elements as there are observations in the "
                                         r"input \(5\)"):
        ember.cov(x, aweights=ember.ones(2, dtype=ember.float64))
    with pytest.raises(ValueError, match="weights sum to zero"):
        ember.cov(x, aweights=ember.zeros(5, dtype=ember.float64))


def test_under_vmap_value_checks_wait_for_eager_calls():
    """Checks that read values (q in [0, 1], weights non-negative) cannot read a batched value:
    under vmap they are skipped rather than refused."""
    x = ember.from_numpy(np.random.default_rng(5).normal(size=(4, 6)))
    q = ember.tensor([[0.2], [0.4], [0.6], [0.8]], dtype=ember.float64)
    got = vmap(lambda r, qq: ember.quantile(r, qq))(x, q)
    want = torch.stack([torch.quantile(torch.from_numpy(r.numpy()), torch.from_numpy(qq.numpy()))
                        for r, qq in zip(x, q)])
    np.testing.assert_allclose(got.numpy(), want.numpy(), rtol=1e-12)
    w = ember.from_numpy(np.random.default_rng(6).uniform(0.5, 1.0, size=(4, 6)))
    got = vmap(lambda r, ww: ember.cov(r, aweights=ww))(x, w)
    want = [torch.cov(torch.from_numpy(r.numpy()), aweights=torch.from_numpy(ww.numpy()))
            for r, ww in zip(x, w)]
    np.testing.assert_allclose(got.numpy(), torch.stack(want).numpy(), rtol=1e-12)


def test_compiled_statistics_match_eager():
    fn = ember.jit.compile(lambda x: ember.nanquantile(x, 0.25, dim=1) + ember.nanmedian(x)
                           + ember.logcumsumexp(x, 1).sum(1) + ember.cummax(x, 1).values[:, -1])
    for data in (XN, XN * 2):
        x = ember.from_numpy(data.copy())
        np.testing.assert_allclose(fn(x).numpy(), (ember.nanquantile(x, 0.25, dim=1)
                                                   + ember.nanmedian(x)
                                                   + ember.logcumsumexp(x, 1).sum(1)
                                                   + ember.cummax(x, 1).values[:, -1]).numpy())


def test_logcumsumexp_tangent_where_the_running_total_is_minus_inf_is_zero_as_torch():
    # A prefix of -inf sums to exp(-inf) = 0: the tangent there is 0 (it was
    # exp(-inf - -inf) = NaN), as torch.func.jvp.
    inf = float("inf")
    a = np.array([[-inf, -inf, 0.5, -inf], [-inf, 1.0, -inf, 2.0]])
    got = []
    for m, jvp in ((torch, torch.func.jvp), (ember, ember.func.jvp)):
        _, t = jvp(lambda x, m=m: m.logcumsumexp(x, 1), (m.tensor(a),),
                   (m.tensor(np.linspace(-1.0, 2.0, 8).reshape(2, 4)),))
        got.append(t.numpy())
    np.testing.assert_allclose(got[1], got[0], rtol=1e-12)
