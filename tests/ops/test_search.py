"""Searching and counting against PyTorch: searchsorted, bucketize, histc, bincount, unique,
unique_consecutive, isin. None is differentiable, so the table checks forward values, shapes
and dtypes (float32 and float64); the rest are direct comparisons on edge cases (NaN, ties,
empty, 0-d, integer dtypes), errors, vmap and the data-dependent-size errors under
transforms."""

import numpy as np
import pytest
import torch

import ember
from ember.errors import DTypeError, IndexOutOfRange, OpError, ShapeError
from ember.func.vmap import vmap
from tests.func import test_vmap_rules as vmap_rules
from tests.ops.optable import Const, OpCase, S, arg, op_tests, same_as_torch, tensor_in

NAN, INF = float("nan"), float("inf")


def case(name, fn, samples, **kw):
    return OpCase(name, lambda *a: fn(ember, *a), lambda *a: fn(torch, *a), samples, grad=False,
                  **kw)


def _sorted(m, s, dim=-1):
    return m.sort(s, dim).values


INTS = np.array([0, 3, 1, 3, 5, 0, 2])
CASES = [
    case("searchsorted", lambda m, s, v: m.searchsorted(_sorted(m, s), v),
         [S(arg(7), arg(3, 4)), S(arg(5), arg()), S(arg(0), arg(3)), S(arg(6), arg(0, 2)),
          S(arg(3, 6), arg(3, 4)), S(arg(2, 3, 5), arg(2, 3, 2, noncontig=True))]),
    case("searchsorted_right", lambda m, s, v: m.searchsorted(_sorted(m, s), v, right=True),
         [S(arg(9, integer=True), arg(3, 4, integer=True)),
          S(arg(2, 8, integer=True), arg(2, 5, integer=True))]),
    case("searchsorted_side_int32",
         lambda m, s, v: m.searchsorted(_sorted(m, s), v, side="right", out_int32=True),
         [S(arg(8, integer=True), arg(5, integer=True))]),
    case("searchsorted_sorter",
         lambda m, s, v: m.searchsorted(s, v, sorter=m.argsort(s, -1)),
         [S(arg(7), arg(4)), S(arg(3, 6), arg(3, 2))]),
    case("searchsorted_scalar", lambda m, s: m.searchsorted(_sorted(m, s), 0.25),
         [S(arg(6))]),
    case("bucketize", lambda m, x, b: m.bucketize(x, _sorted(m, b)),
         [S(arg(3, 4), arg(5)), S(arg(), arg(3)), S(arg(4, integer=True), arg(5, integer=True))]),
    case("bucketize_right", lambda m, x, b: m.bucketize(x, _sorted(m, b), right=True,
                                                        out_int32=True),
         [S(arg(6, integer=True), arg(4, integer=True))]),
    case("histc", lambda m, x: m.histc(x, bins=7), [S(arg(20)), S(arg(3, 4)), S(arg()),
                                                    S(arg(0))]),
    case("histc_range", lambda m, x: x.histc(5, -1, 1), [S(arg(4, 6)), S(arg(9, integer=True))]),
    case("bincount", lambda m, w, x: m.bincount(x, w), [S(arg(7), Const(INTS))]),
    case("bincount_minlength", lambda m, w, x: m.bincount(x, w, minlength=9),
         [S(arg(7), Const(INTS))]),
    case("unique", lambda m, x: m.unique(x, return_inverse=True, return_counts=True),
         [S(arg(4, 5, integer=True)), S(arg()), S(arg(0))]),
    case("unique_dim", lambda m, x: m.unique(x, dim=1, return_inverse=True, return_counts=True),
         [S(arg(2, 9, low=-1, high=1, integer=True))]),
    case("unique_consecutive", lambda m, x: m.unique_consecutive(x, return_counts=True),
         [S(arg(12, low=-1, high=1, integer=True))]),
    case("isin", lambda m, a, b: m.isin(a, b),
         [S(arg(3, 4, integer=True), arg(3, integer=True)), S(arg(integer=True), arg(4)),
          S(arg(0), arg(3)), S(arg(5, integer=True), arg(0))]),
    case("isin_invert", lambda m, a, b: m.isin(a, b, invert=True),
         [S(arg(2, 5, integer=True), arg(2, 2, integer=True))]),
]
DATA_DEPENDENT = {"unique", "unique_dim", "unique_consecutive"}

test_forward, test_backward, test_gradcheck, test_gradgradcheck, test_jvp = op_tests(CASES)

ROWS = [pytest.param(c, s, id=f"{c.name}[{k}]") for c in CASES for k, s in enumerate(c.samples)]


@pytest.mark.parametrize("case,sample", ROWS)
def test_vmap_matches_a_loop(case, sample):
    """Every batching rule against a Python loop (all inputs batched; the first one alone,
    along its last axis), as tests/func/test_vmap_rules.py does for the other families."""
    if case.name in DATA_DEPENDENT:
        x = ember.zeros(3, 2, 4)
        with pytest.raises(OpError, match=r"vmap: unique .*depends on each sample's data"):
            vmap(lambda v: case.ember_fn(v))(x)
        return
    vmap_rules.test_forward_all_batched(case, sample)
    vmap_rules.test_forward_first_batched_last_axis(case, sample)


# -- direct comparisons -------------------------------------------------------------------------
def both(fn, *data):
    same_as_torch(lambda lib: fn(lib, *[tensor_in(lib, d) for d in data]))


@pytest.mark.parametrize("right", [False, True])
def test_searchsorted_follows_torchs_binary_search_with_nan(right):
    rng = np.random.default_rng(0)
    for _ in range(60):
        n = int(rng.integers(0, 12))
        seq = np.sort(rng.integers(0, 8, n)).astype(float)
        if n and rng.random() < 0.5:  # NaNs sort last; torch's search steps over them oddly
            seq[-int(rng.integers(1, n + 1)):] = NAN
        vals = rng.integers(-1, 9, 6).astype(float)
        vals[rng.random(6) < 0.3] = NAN
        both(lambda m, s, v: m.searchsorted(s, v, right=right), seq, vals)


def test_searchsorted_promotes_and_takes_numbers():
    both(lambda m, s, v: m.searchsorted(s, v), [1, 2, 3], [2.5, 0.5])
    both(lambda m, s: m.searchsorted(s, 2), [1, 2, 3])
    both(lambda m, s: m.searchsorted(s, 2.5), [1, 2, 3])
    both(lambda m, s: m.bucketize(3, s, right=True), [1, 3, 5])
    both(lambda m, s, v: m.searchsorted(s, v), np.array([1, 5, 9], np.int8), [4, 9])
    both(lambda m, s, v: m.searchsorted(s, v), [[1.0, 2.0, 3.0], [2.0, 3.0, 4.0]], [[2.5], [2.5]])


def test_searchsorted_errors():
    seq = ember.tensor([1.0, 2.0, 3.0])
    with pytest.raises(ValueError, match="side and right can't be set to opposites"):
        ember.searchsorted(seq, seq, side="left", right=True)
    with pytest.raises(ValueError, match="side can only be 'left' or 'right'"):
        ember.searchsorted(seq, seq, side="middle")
    with pytest.raises(ShapeError, match=r"boundaries \(2, 3\) and values \(3,\) do not fit"):
        ember.searchsorted(ember.zeros(2, 3), seq)
    with pytest.raises(ShapeError, match="a number as input needs 1-D boundaries"):
        ember.searchsorted(ember.zeros(2, 3), 1.0)
    with pytest.raises(ShapeError, match="at least one dimension"):
        ember.searchsorted(ember.tensor(1.0), seq)
    with pytest.raises(DTypeError, match="sorter must be an int64"):
        ember.searchsorted(seq, seq, sorter=ember.tensor([0, 1, 2], dtype=ember.int32))
    with pytest.raises(ShapeError, match="sorter"):
        ember.searchsorted(seq, seq, sorter=ember.tensor([0, 1]))
    with pytest.raises(IndexOutOfRange, match="sorter index out of range"):
        ember.searchsorted(seq, seq, sorter=ember.tensor([0, 1, 5]))
    with pytest.raises(DTypeError, match="bool"):
        ember.searchsorted(ember.tensor([False, True]), ember.tensor([True]))
    with pytest.raises(ShapeError, match="bucketize: boundaries must be a 1-D tensor"):
        ember.bucketize(seq, ember.zeros(2, 2))


def test_histc_matches_torch_on_edges_nan_and_data_ranges():
    rng = np.random.default_rng(1)
    for _ in range(40):
        x = rng.normal(size=int(rng.integers(0, 30))).astype(np.float32)
        x = np.round(x * 4) / 4  # values on bin edges
        bins = int(rng.integers(1, 10))
        both(lambda m, v, bins=bins: m.histc(v, bins=bins), x)
        both(lambda m, v, bins=bins: m.histc(v, bins=bins, min=-1, max=1), x)
    both(lambda m, v: m.histc(v, bins=10, min=0.1, max=0.7),
         np.linspace(0, 1, 10001).astype(np.float32))
    both(lambda m, v: m.histc(v, bins=4, min=0, max=4), [0.0, 1, 2, 3, 4, -1, 5, INF, NAN])
    both(lambda m, v: m.histc(v, bins=4), [2.0, 2.0])    # one value: range widened by 1
    both(lambda m, v: m.histc(v, bins=3), 2.0)
    both(lambda m, v: m.histc(v, bins=3), np.zeros(0, np.float32))


def test_histc_errors():
    with pytest.raises(OpError, match=r"histc: range of \[nan, nan\] is not finite"):
        ember.histc(ember.tensor([1.0, NAN]), bins=3)
    for kw, match in ((dict(min=3, max=1), "max must be larger than min"),  # torch's class
                      (dict(bins=0), "bins must be > 0"), (dict(max=np.inf), "not finite")):
        with pytest.raises(RuntimeError):
            torch.histc(torch.ones(3), **{"bins": 3, **kw})
        with pytest.raises(RuntimeError, match=f"histc: .*{match}"):
            ember.histc(ember.ones(3), **{"bins": 3, **kw})
    with pytest.raises(DTypeError, match="histc: expected a floating input"):
        ember.histc(ember.tensor([1, 2]))


def test_bincount_dtypes_and_edges():
    both(lambda m, x: m.bincount(x), [0, 3, 1, 3])
    both(lambda m, x: m.bincount(x, minlength=6), [0, 3, 1])
    both(lambda m, x: m.bincount(x), np.array([1, 2], np.uint8))
    both(lambda m, x: m.bincount(x), np.array([1, 2], np.int32))
    both(lambda m, x: m.bincount(x, minlength=2), np.zeros(0, np.int64))
    both(lambda m, x: m.bincount(x), np.zeros(0, np.int64))
    for w in (np.array([1.0, 2, 3], np.float32), np.array([1.0, 2, 3]), np.array([1, 2, 3]),
              np.array([1.0, 2, 3], np.float16), np.array([True, False, True])):
        both(lambda m, x, w: m.bincount(x, w), [0, 2, 2], w)  # (bool weights: float64)


def test_bincount_errors():
    with pytest.raises(OpError, match="negative values"):
        ember.bincount(ember.tensor([0, -3]))
    for bad in (ember.tensor([1.0]), ember.tensor([[1, 2]]), ember.tensor(3),
                ember.tensor([True])):
        with pytest.raises(DTypeError, match="1-d non-negative integral"):
            ember.bincount(bad)
    with pytest.raises(ShapeError, match="weights should be 1-d and have the same length"):
        ember.bincount(ember.tensor([1, 2]), ember.ones(1))
    with pytest.raises(ValueError, match="minlength should be >= 0"):
        ember.bincount(ember.tensor([1, 2]), minlength=-1)


@pytest.mark.parametrize("flags", [(False, False), (True, False), (False, True), (True, True)])
def test_unique_outputs_as_torch(flags):
    inv, cnt = flags
    rng = np.random.default_rng(2)
    for _ in range(30):
        shape = tuple(int(s) for s in rng.integers(0, 4, size=int(rng.integers(0, 3))))
        x = rng.integers(0, 4, size=shape).astype(float)
        both(lambda m, v: m.unique(v, return_inverse=inv, return_counts=cnt), x)
        both(lambda m, v: m.unique(v, sorted=False, return_inverse=inv, return_counts=cnt), x)
        both(lambda m, v: m.unique_consecutive(v, return_inverse=inv, return_counts=cnt), x)
        for d in range(-x.ndim, x.ndim):
            if any(s == 0 for i, s in enumerate(x.shape) if i != d % x.ndim):
                continue
            both(lambda m, v, d=d: m.unique(v, return_inverse=inv, return_counts=cnt, dim=d),
                 x)
            both(lambda m, v, d=d: m.unique_consecutive(v, return_inverse=inv,
                                                        return_counts=cnt, dim=d), x)


def test_unique_nan_bool_int_and_0d():
    data = [NAN, 1.0, NAN, 2.0, 1.0]  # each NaN distinct, last, in order of appearance
    both(lambda m, v: m.unique(v, return_inverse=True, return_counts=True), data)
    both(lambda m, v: m.unique_consecutive(v, return_inverse=True, return_counts=True),
         [NAN, NAN, 1.0, 1.0])
    both(lambda m, v: m.unique(v, return_inverse=True), [True, False, True])
    both(lambda m, v: v.unique(return_counts=True), np.array([3, -1, 3, 7], np.int8))
    both(lambda m, v: m.unique(v, return_inverse=True, return_counts=True), 3.0)
    both(lambda m, v: m.unique(v, dim=0, return_inverse=True, return_counts=True),
         np.zeros((0, 3)))
    both(lambda m, v: m.unique_consecutive(v, return_inverse=True, return_counts=True), 2)


def test_unique_errors():
    with pytest.raises(IndexOutOfRange, match="0-d"):
        ember.unique(ember.tensor(3.0), dim=0)
    with pytest.raises(ShapeError, match="dimensions of size 0 other than dim 1"):
        ember.unique(ember.zeros(0, 3), dim=1)
    with pytest.raises(IndexOutOfRange, match="out of range"):
        ember.unique(ember.zeros(2, 3), dim=2)


def test_isin_nan_promotion_numbers_and_errors():
    both(lambda m, a, b: m.isin(a, b), [1.0, NAN, 2.0], [NAN, 2.0])
    both(lambda m, a, b: m.isin(a, b, invert=True), [1.0, NAN, 2.0], [NAN, 2.0])
    both(lambda m, a, b: m.isin(a, b), [1, 2, 3], [2.5, 3.0])
    both(lambda m, a, b: m.isin(a, b), np.array([255], np.uint8), [-1])
    both(lambda m, a, b: m.isin(a, b), np.array([0.1], np.float32), np.array([0.1]))
    both(lambda m, a: m.isin(a, 2.0), [1, 2, 3])
    both(lambda m, b: m.isin(2, b), [1, 2])
    both(lambda m, a, b: m.isin(a, b), 1.0, [1.0])
    both(lambda m, a, b: m.isin(a, b), np.zeros(0), [1.0])
    with pytest.raises(DTypeError, match="isin: bool"):
        ember.isin(ember.tensor([True]), ember.tensor([True]))
    with pytest.raises(TypeError, match="at least one"):
        ember.isin(2, 3)


# -- transforms ----------------------------------------------------------------------------------
def test_vmap_isin_against_per_sample_sets_with_nan():
    elems = ember.tensor([[1.0, NAN, 2.0, 5.0], [0.0, 3.0, NAN, 1.0], [4.0, 4.0, 0.0, 9.0]])
    tests = ember.tensor([[NAN, 2.0, 5.0], [NAN, NAN, NAN], [9.0, NAN, 4.0]])
    for invert in (False, True):
        got = vmap(lambda a, b, inv=invert: ember.isin(a, b, invert=inv))(elems, tests)
        want = torch.stack([torch.isin(torch.from_numpy(a.numpy()), torch.from_numpy(b.numpy()),
                                       invert=invert) for a, b in zip(elems, tests)])
        np.testing.assert_array_equal(got.numpy(), want.numpy())


def test_vmap_searchsorted_with_batched_sorter_and_scalar_values():
    rng = np.random.default_rng(3)
    seqs = ember.from_numpy(rng.normal(size=(4, 6)))
    vals = ember.from_numpy(rng.normal(size=(4, 3)))
    fn = lambda s, v: ember.searchsorted(s, v, sorter=ember.argsort(s))  # noqa: E731
    got = vmap(fn)(seqs, vals)
    want = ember.stack([fn(s, v) for s, v in zip(seqs, vals)])
    assert got.tolist() == want.tolist()
    got = vmap(lambda s: ember.searchsorted(s.sort().values, 0.0))(seqs)
    assert got.tolist() == [ember.searchsorted(s.sort().values, 0.0).item() for s in seqs]


def test_vmap_histc_gives_each_sample_its_own_data_range_and_nests():
    x = ember.from_numpy(np.random.default_rng(4).normal(size=(2, 3, 10)))
    got = vmap(vmap(lambda r: ember.histc(r, bins=4)))(x)
    want = ember.stack([ember.stack([ember.histc(r, bins=4) for r in row]) for row in x])
    np.testing.assert_array_equal(got.numpy(), want.numpy())


def test_data_dependent_sizes_refuse_transforms_clearly():
    x = ember.tensor([[1, 2, 2], [0, 1, 1]])
    with pytest.raises(OpError, match=r"vmap: bincount of batched values: the samples' counts "
                                      r"have different lengths \[2, 3\] .* Hint: pass "
                                      r"minlength=3"):
        vmap(ember.bincount)(x)
    with pytest.raises(OpError, match="vmap: unique"):
        vmap(lambda r: ember.unique_consecutive(r))(x)
    compiled = ember.jit.compile(lambda v: ember.unique(v, return_counts=True)[1] * 2)
    with pytest.raises(OpError, match=r"unique: the output size depends on the data of \(3,\) "
                                      r"int64"):
        compiled(ember.tensor([1, 2, 2]))
    compiled = ember.jit.compile(lambda v: ember.bincount(v, minlength=8) + 1)
    with pytest.raises(OpError, match="bincount: the output size depends on the data"):
        compiled(ember.tensor([1, 2, 2]))
    # fine eagerly, and under vmap when only the weights are batched (one shared length)
    w = ember.from_numpy(np.arange(6.0).reshape(2, 3))
    got = vmap(lambda wr: ember.bincount(ember.tensor([0, 2, 2]), wr))(w)
    assert got.tolist() == [[0.0, 0.0, 3.0], [3.0, 0.0, 9.0]]


def test_vmap_bincount_of_batched_values_with_one_length_like_torch_func():
    # (torch.func runs a loop and stacks: fine when every sample's count is as long)
    rng = np.random.default_rng(0)
    x, w = rng.integers(0, 5, (4, 6)), rng.standard_normal((4, 6))
    for args, dims, minlength in [((x,), 0, 5), ((x,), 0, 7), ((x, w), 0, 5),
                                  ((x, w[0]), (0, None), 6), ((x.T.copy(),), 1, 5),
                                  ((np.zeros((2, 0), np.int64),), 0, 3)]:
        got = vmap(lambda *a, n=minlength: ember.bincount(*a, minlength=n), in_dims=dims)(
            *[ember.tensor(a) for a in args])
        want = torch.func.vmap(lambda *a, n=minlength: torch.bincount(*a, minlength=n),
                               in_dims=dims)(*[torch.tensor(a) for a in args])
        assert got.dtype.name == str(want.dtype).split(".")[1]
        np.testing.assert_allclose(got.numpy(), want.numpy(), rtol=1e-12)
    assert vmap(ember.bincount)(ember.tensor([[0, 2], [2, 1]])).tolist() == [[1, 0, 1],
                                                                              [0, 1, 1]]
    with pytest.raises(OpError, match="negative values"):  # (not hidden by the offsets)
        vmap(ember.bincount)(ember.tensor([[0, 1], [-1, 1]]))


def test_vmap_bincount_of_small_integer_values_and_nested_like_torch_func():
    # the per-sample offsets (up to b * length) overflowed uint8 and int8 (review46e)
    xu = np.random.default_rng(1).integers(0, 3, (100, 4)).astype(np.uint8)
    for dt in (np.uint8, np.int8, np.int16):
        got = vmap(lambda r: ember.bincount(r, minlength=3))(ember.tensor(xu.astype(dt)))
        want = torch.func.vmap(lambda r: torch.bincount(r, minlength=3))(
            torch.tensor(xu.astype(dt)))
        np.testing.assert_array_equal(got.numpy(), want.numpy())
    # nested: the lengths come from the outermost data, not from item() of a batched tensor
    x = [[[0, 1], [2, 3]], [[1, 1], [0, 0]]]
    got = vmap(vmap(lambda r: ember.bincount(r, minlength=4)))(ember.tensor(x))
    want = torch.func.vmap(torch.func.vmap(lambda r: torch.bincount(r, minlength=4)))(
        torch.tensor(x))
    np.testing.assert_array_equal(got.numpy(), want.numpy())
    got = vmap(vmap(lambda r: ember.bincount(r, minlength=4)), in_dims=1)(ember.tensor(x))
    assert got.tolist() == [[[1, 1, 0, 0], [0, 2, 0, 0]], [[0, 0, 1, 1], [2, 0, 0, 0]]]
    with pytest.raises(OpError, match="minlength=4"):
        vmap(vmap(ember.bincount))(ember.tensor(x))
    with pytest.raises(OpError, match="negative values"):
        vmap(vmap(ember.bincount))(ember.tensor([[[0, 1]], [[-1, 1]]]))


def test_methods_are_bound():
    x = ember.tensor([3, 1, 3])
    assert x.unique().tolist() == [1, 3]
    assert x.unique_consecutive().tolist() == [3, 1, 3]
    for name in ("searchsorted", "bucketize", "isin"):  # functions only, as in PyTorch
        assert not hasattr(x, name)
    assert x.bincount().tolist() == [0, 1, 0, 2]
    assert x.float().histc(2, 0, 4).tolist() == [1.0, 2.0]
