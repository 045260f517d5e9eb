"""where, clamp, maximum/minimum and fmax/fmin against PyTorch and finite differences (see
optable.py), plus gradients at ties, NaN handling, dtypes and errors."""

import itertools
import math

import numpy as np
import pytest
import torch

import ember
from tests.ops.optable import Const, OpCase, S, arg, op_tests, same_as_torch

MASK = np.array([[True, False, True, False], [False, False, True, True],
                 [True, True, False, False]])
PAIRS = [S(arg(3, 4), arg(3, 4)), S(arg(3, 1), arg(4)),
         S(arg(2, 3, noncontig=True), arg(2, 3)), S(arg(), arg(2, 3)), S(arg(0, 3), arg(3))]


def pair(name: str) -> OpCase:
    return OpCase(name, getattr(ember, name), getattr(torch, name), PAIRS)


CASES = [
    OpCase("where", ember.where, torch.where,
           [S(Const(MASK), arg(3, 4), arg(3, 4)),
            S(Const(MASK[:, :1].copy()), arg(1, 4), arg(4)),       # all three broadcast
            S(Const(MASK), arg(3, 4, noncontig=True), arg()),
            S(Const(np.array(True)), arg(), arg()),
            S(Const(np.zeros((0, 4), bool)), arg(0, 4), arg(4))]),
    OpCase("where_scalars", lambda c, x: (ember.where(c, x, 0.5), ember.where(c, -1.0, x)),
           lambda c, x: (torch.where(c, x, 0.5), torch.where(c, -1.0, x)),
           [S(Const(MASK), arg(3, 4))]),
    OpCase("where_method", lambda x, y: x.where(x > 0, y), lambda x, y: x.where(x > 0, y),
           [S(arg(3, 4), arg(3, 4))]),
    pair("maximum"), pair("minimum"), pair("fmax"), pair("fmin"),
    OpCase("clamp", lambda x: ember.clamp(x, -0.5, 0.7), lambda x: torch.clamp(x, -0.5, 0.7),
           [S(arg(3, 4)), S(arg()), S(arg(0, 2)), S(arg(2, 3, noncontig=True))]),
    OpCase("clamp_min", lambda x: ember.clamp(x, min=0.2), lambda x: torch.clamp(x, min=0.2),
           [S(arg(3, 4))]),
    OpCase("clamp_max", lambda x: ember.clamp(x, max=0.2), lambda x: torch.clamp(x, max=0.2),
           [S(arg(3, 4))]),
    OpCase("clamp_inverted", lambda x: ember.clamp(x, 1.0, -1.0),
           lambda x: torch.clamp(x, 1.0, -1.0), [S(arg(3, 4))]),
    OpCase("clamp_tensors", lambda x, lo, hi: ember.clamp(x, lo, hi), torch.clamp,
           [S(arg(3, 4), arg(3, 4, low=-2.0, high=-0.2), arg(4, low=0.2, high=2.0)),
            S(arg(3, 4), arg(3, 4), arg(3, 4)),                  # some min > max
            S(arg(2, 3, noncontig=True), arg(), arg(2, 1, low=0.0)),
            S(arg(), arg(2, 2), arg(2, 2, low=2.5, high=3.0))]),  # bounds broadcast x
    OpCase("clamp_tensor_min", lambda x, lo: ember.clamp(x, min=lo),
           lambda x, lo: torch.clamp(x, min=lo), [S(arg(3, 4), arg(4))]),
    OpCase("clamp_tensor_max_scalar_min", lambda x, hi: ember.clamp(x, -0.5, hi),
           lambda x, hi: torch.clamp(x, torch.tensor(-0.5, dtype=x.dtype), hi),
           [S(arg(3, 4), arg(3, 1))]),
    OpCase("clip", lambda x: ember.clip(x, -1, 1), lambda x: torch.clip(x, -1, 1),
           [S(arg(3, 4))]),
    OpCase("clamp_min_fn", lambda x: ember.clamp_min(x, 0.1), lambda x: torch.clamp_min(x, 0.1),
           [S(arg(3, 4))]),
    OpCase("clamp_max_method", lambda x: x.clamp_max(0.1), lambda x: x.clamp_max(0.1),
           [S(arg(3, 4))]),
]

test_forward, test_backward, test_gradcheck, test_gradgradcheck, test_jvp = op_tests(CASES)


def grads(fn_e, fn_t, *values):
    """Gradients of ``fn(*values)`` (summed against a fixed weight) from Ember and PyTorch."""
    xs = [ember.tensor(v, dtype=ember.float64, requires_grad=True) for v in values]
    ts = [torch.tensor(v, dtype=torch.float64, requires_grad=True) for v in values]
    out_e, out_t = fn_e(*xs), fn_t(*ts)
    w = np.arange(1.0, 1.0 + out_t.numel()).reshape(tuple(out_t.shape))
    mine = ember.autograd.grad(out_e, xs, ember.from_numpy(w), allow_unused=True)
    ref = torch.autograd.grad(out_t, ts, torch.from_numpy(w), allow_unused=True)
    return ([None if g is None else g.numpy() for g in mine],
            [None if g is None else g.numpy() for g in ref])


def assert_same_grads(mine, ref):
    for m, r in zip(mine, ref, strict=True):
        if r is None:
            assert m is None or not m.any()
        else:
            np.testing.assert_allclose(m, r, rtol=1e-12)


A = [1.0, 2.0, 3.0, math.nan, 5.0, math.nan]
B = [1.0, 3.0, 2.0, 4.0, math.nan, math.nan]


@pytest.mark.parametrize("name", ["maximum", "minimum", "fmax", "fmin"])
def test_ties_and_nans_match_torch(name):
    fe, ft = getattr(ember, name), getattr(torch, name)
    np.testing.assert_array_equal(fe(ember.tensor(A), ember.tensor(B)).numpy(),
                                  ft(torch.tensor(A), torch.tensor(B)).numpy())
    assert_same_grads(*grads(fe, ft, A[:3], B[:3]))  # a tie, a win, a loss


def test_maximum_splits_the_gradient_at_ties():
    x = ember.tensor([2.0], requires_grad=True)
    ember.maximum(x, x).backward(ember.ones(1))
    assert x.grad.tolist() == [1.0]
    y = ember.tensor([2.0], requires_grad=True)
    z = ember.tensor([2.0], requires_grad=True)
    ember.minimum(y, z).backward(ember.ones(1))
    assert y.grad.tolist() == [0.5] and z.grad.tolist() == [0.5]


def test_clamp_passes_the_gradient_at_the_bounds():
    values = [-1.0, -0.5, 0.0, 1.0, 2.0]
    assert_same_grads(*grads(lambda x: ember.clamp(x, -1.0, 1.0),
                             lambda x: torch.clamp(x, -1.0, 1.0), values))
    lo, hi = [-1.0, -1.0, 0.5, 1.0, 2.5], [1.0, 0.0, 0.7, 1.0, 3.0]
    assert_same_grads(*grads(ember.clamp, torch.clamp, values, lo, hi))
    assert_same_grads(*grads(lambda x, lo: ember.clamp(x, min=lo),
                             lambda x, lo: torch.clamp(x, min=lo), values, lo))
    assert_same_grads(*grads(lambda x, hi: ember.clamp(x, max=hi),
                             lambda x, hi: torch.clamp(x, max=hi), values, hi))


SPECIAL = [0.0, 1.0, 2.0, math.nan, math.inf, -math.inf]
GRID = list(itertools.product(SPECIAL, repeat=3))  # (x, min, max): ties, NaN, inverted, inf
BOUNDS = {"both": lambda L, lo, hi: (lo, hi), "min": lambda L, lo, hi: (lo, None),
          "max": lambda L, lo, hi: (None, hi)}


@pytest.mark.parametrize("given", list(BOUNDS))
def test_clamp_tensor_bounds_gradients_match_pytorch_at_ties_nan_and_inf(given):
    # (PyTorch gives input's gradient where min <= x <= max, min's where x < min < max, max's
    # where x > max or max < min: so nothing at a NaN or below equal bounds)
    x, lo, hi = (list(v) for v in zip(*GRID))
    mine, ref = grads(lambda x, lo, hi: ember.clamp(x, *BOUNDS[given](ember, lo, hi)),
                      lambda x, lo, hi: torch.clamp(x, *BOUNDS[given](torch, lo, hi)), x, lo, hi)
    for m, r in zip(mine, ref, strict=True):
        np.testing.assert_array_equal(np.zeros(len(GRID)) if m is None else m,
                                      np.zeros(len(GRID)) if r is None else r)


@pytest.mark.parametrize("given", list(BOUNDS))
def test_clamp_tensor_bounds_tangents_match_pytorch_at_ties_nan_and_inf(given):
    x, lo, hi = (np.array(v) for v in zip(*GRID))
    tangents = [np.full(len(GRID), w) for w in (1.0, 10.0, 100.0)]

    def tangent(lib, fwad):
        with fwad.dual_level():
            duals = [fwad.make_dual(lib.tensor(v), lib.tensor(t))
                     for v, t in zip((x, lo, hi), tangents)]
            out = lib.clamp(duals[0], *BOUNDS[given](lib, *duals[1:]))
            return fwad.unpack_dual(out).tangent.numpy()

    np.testing.assert_array_equal(tangent(ember, ember.autograd.forward_ad),
                                  tangent(torch, torch.autograd.forward_ad))


def test_clamp_second_order():
    x = ember.tensor([0.5, 2.0], dtype=ember.float64, requires_grad=True)
    (g,) = ember.autograd.grad(ember.clamp(x * x, 0.0, 1.0), x,
                               ember.ones(2, dtype=ember.float64), create_graph=True)
    (gg,) = ember.autograd.grad(g, x, ember.ones(2, dtype=ember.float64))
    assert g.tolist() == [1.0, 0.0] and gg.tolist() == [2.0, 0.0]


def test_clamp_nan_input_stays_nan():
    out = ember.clamp(ember.tensor([math.nan, 5.0]), 0.0, 1.0)
    assert math.isnan(out.tolist()[0]) and out.tolist()[1] == 1.0


def test_dtypes_follow_torch():
    i = np.array([2, -3, 0])
    b = np.array([True, False, True])
    cases = [
        (lambda m, x: m.clamp(x, min=0.5), i), (lambda m, x: m.clamp(x, min=0), i),
        (lambda m, x: m.clamp(x, min=0), b), (lambda m, x: m.clamp(x, max=2), i.astype(np.uint8)),
        (lambda m, x: m.clamp(x, min=m.tensor(0.5)), i),
        (lambda m, x: m.where(x > 0, 1.0, 0.0), i), (lambda m, x: m.where(x > 0, 1, 0), i),
        (lambda m, x: m.where(x > 0, x, 2.5), i), (lambda m, x: m.where(x > 0, x * 1.0, 2), i),
        (lambda m, x: m.maximum(x, m.tensor([1.5])), i), (lambda m, x: m.fmin(x, x > 0), i),
        (lambda m, x: m.maximum(x, x), b),
        (lambda m, x: m.where(x > 0, x.to(m.float64 if m is torch else ember.float64),
                              x.float()), i),
    ]
    for k, (fn, values) in enumerate(cases):
        mine = fn(ember, ember.from_numpy(values))
        ref = fn(torch, torch.from_numpy(values))
        assert mine.dtype.name == str(ref.dtype).removeprefix("torch."), k
        assert mine.tolist() == ref.tolist(), k


@pytest.mark.parametrize("dtype", ["float16", "bfloat16"])
def test_half_precision_keeps_its_dtype(dtype):
    x = ember.tensor([-2.0, 0.25, 3.0], dtype=getattr(ember, dtype))
    for out in (ember.clamp(x, -1.0, 1.0), ember.maximum(x, 0.5), ember.where(x > 0, x, 0.5)):
        assert out.dtype.name == dtype


def test_errors_are_clear():
    x = ember.ones(3)
    with pytest.raises(ember.DTypeError, match="where: the condition must be a bool tensor, "
                                               "got float32"):
        ember.where(x, x, x)
    with pytest.raises(ember.errors.OpError, match="at least one of min and max"):
        ember.clamp(x)
    with pytest.raises(ember.ShapeError, match="where: shapes"):
        ember.where(x > 0, ember.ones(4), 0.0)
    with pytest.raises(ember.ShapeError, match="maximum: shapes"):
        ember.maximum(x, ember.ones(2))


def test_inplace_clamp():
    x = ember.tensor([-2.0, 0.5, 3.0])
    assert x.clamp_(-1, 1) is x and x.tolist() == [-1.0, 0.5, 1.0]
    x.clip_(max=0.0)
    assert x.tolist() == [-1.0, 0.0, 0.0]
    y = ember.tensor([-2.0, 0.5])
    y.clamp_min_(0.0)
    assert y.tolist() == [0.0, 0.5]
    with pytest.raises(ember.DTypeError, match="cannot be cast"):
        ember.tensor([1, 2]).clamp_(min=0.5)


def test_where_with_only_a_condition_is_nonzero():
    mask = np.array([[True, False], [False, True]])
    mine = ember.where(ember.from_numpy(mask))
    ref = torch.where(torch.from_numpy(mask))
    assert [m.tolist() for m in mine] == [r.tolist() for r in ref]


@pytest.mark.parametrize("fn", [
    lambda m: m.clamp(m.tensor([1.0, 2.0]), min=m.tensor([math.nan, 0.0])),
    lambda m: m.clamp(m.tensor([1.0, 2.0]), max=m.tensor([math.nan, 3.0])),
    lambda m: m.clamp(m.tensor([1.0, 2.0, 5.0]), m.tensor([0.0, math.nan, 0.0]),
                      m.tensor([math.nan, 3.0, 4.0])),
    lambda m: m.clamp(m.tensor([math.nan, 2.0]), min=m.tensor([0.0, 3.0])),
    lambda m: m.clamp(m.tensor([1.0, 2.0]), min=math.nan),
    lambda m: m.clamp(m.tensor([1, 5]), min=m.tensor([math.nan, 0.0])),
])
def test_a_nan_bound_gives_nan_as_in_torch(fn):
    same_as_torch(fn)


SIGNED = [math.nan, math.inf, -math.inf, 0.0, -0.0, 1e-30, -1e-30, 0.5, -0.5, 3.0, -3.0]


@pytest.mark.parametrize("dtype", ["float32", "float64", "float16", "bfloat16"])
@pytest.mark.parametrize("bounds", [(-0.5, 0.5), (-0.0, 0.0), (0.0, None), (-0.0, None),
                                    (None, 0.0), (None, -0.0), (1.0, -1.0), (math.nan, 1.0)])
def test_clamp_keeps_signed_zeros_and_nans_as_torch(dtype, bounds):
    # (one clip ufunc pass: maximum(-0.0, 0.0) gave -0.0 where PyTorch's clamp gives 0.0)
    got = ember.tensor(SIGNED).to(getattr(ember, dtype)).clamp(*bounds).float().numpy()
    want = torch.tensor(SIGNED).to(getattr(torch, dtype)).clamp(*bounds).float().numpy()
    np.testing.assert_array_equal(got, want)
    kept = ~np.isnan(want)
    np.testing.assert_array_equal(np.signbit(got[kept]), np.signbit(want[kept]))


@pytest.mark.parametrize("dtype", [np.float32, np.int32, np.uint32])
def test_large_where_selects_the_bits_np_where_does(dtype):
    # from 16384 elements, 4-byte where runs on the bits (no branch per element): the same
    # bits as np.where (NaN payloads, -0.0), with numbers, broadcast ones and a gradient
    rng = np.random.default_rng(0)
    shape = (130, 140)
    c = rng.random(shape) > 0.5
    a = (rng.standard_normal(shape) * 1e3).astype(dtype)
    b = (rng.standard_normal(shape) * 1e3).astype(dtype)
    if dtype == np.float32:
        a.reshape(-1)[:4] = [np.nan, -0.0, np.inf, 1e-45]
        a.view(np.uint32).reshape(-1)[4] = 0x7FC01234  # a NaN with a payload
    ec, ea, eb = (ember.from_numpy(v) for v in (c, a, b))
    for got, want in ((ember.where(ec, ea, eb), np.where(c, a, b)),
                      (ember.where(ec, ea, 7), np.where(c, a, dtype(7))),
                      (ember.where(ec[0], ea, eb), np.where(c[0], a, b)),  # (not applied)
                      (ember.where(ec, ea, eb.sum().expand(shape).to(ember.from_numpy(a).dtype)),
                       np.where(c, a, b.sum(dtype=dtype)))):
        assert got.numpy().tobytes() == want.tobytes()
    if dtype == np.float32:
        x = ember.from_numpy(a.copy()).requires_grad_()
        t = torch.from_numpy(a.copy()).requires_grad_()
        ember.where(ec, x, 0.0).sum().backward()
        torch.where(torch.from_numpy(c), t, 0.0).sum().backward()
        assert x.grad.numpy().tobytes() == t.grad.numpy().tobytes()


@pytest.mark.parametrize("bounds", ["C", "channels_last", "broadcast", "C min only", "0-d"])
@pytest.mark.parametrize("x_layout", ["C", "channels_last"])
def test_clamp_tensor_bounds_keep_the_inputs_layout_as_torch(x_layout, bounds):
    # PyTorch's first operand decides a result's layout: a channels-last input stays so
    # whatever its bounds' layout (NumPy alone gave C order when the layouts differed).
    rng = np.random.default_rng(0)
    a, lo, hi = (rng.standard_normal(s) for s in ((2, 3, 4, 5), (2, 3, 4, 5), (2, 3, 4, 5)))
    if bounds == "broadcast":
        lo, hi = lo[0, :, :1, :1], hi[0, :, :1, :1]
    elif bounds == "0-d":
        lo, hi = np.array(-0.5), np.array(0.5)
    results = []
    for lib in (torch, ember):
        fmt = lib.channels_last if x_layout == "channels_last" else lib.contiguous_format
        x = lib.tensor(a).contiguous(memory_format=fmt)
        b_fmt = lib.contiguous_format if bounds != "channels_last" else lib.channels_last
        low, high = (lib.tensor(b).contiguous(memory_format=b_fmt) if b.ndim == 4 else
                     lib.tensor(b) for b in (lo, hi))
        out = lib.clamp(x, min=low, max=None if bounds == "C min only" else high)
        results.append((out.stride(), np.asarray(out.tolist())))
    assert results[0][0] == results[1][0]
    np.testing.assert_array_equal(results[0][1], results[1][1])


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_large_float_where_is_numpys_bit_for_bit(dtype):
    """Large float32/float64 selects take numba's one pass (select_numba) where it applies: the
    same bits as np.where (NaN, -0.0, a number for either side, read-only operands), and
    np.where itself where numba is off."""
    from ember.backend import compiled
    from ember.ops.select import _select_loop, select_array

    rng = np.random.default_rng(0)
    shape = (3, 130, 64)
    condition = rng.random(shape) > 0.5
    a, b = (rng.standard_normal(shape).astype(dtype) for _ in range(2))
    a.flat[:3], b.flat[:3] = [np.nan, -0.0, np.inf], [-0.0, np.nan, 0.0]
    frozen = a.copy()
    frozen.flags.writeable = False
    pairs = [(a, b), (dtype(2.5) * np.ones((), dtype), b), (a, np.zeros((1, 1, 1), dtype)),
             (frozen, b)]
    saved = compiled.numba_enabled()
    for on in (True, False):
        compiled.use_numba(on)
        try:
            for first, second in pairs:
                want = np.where(condition, first, second)
                got = select_array(np, condition, first, second)
                assert got.dtype == want.dtype and got.view(np.uint8).tobytes() == \
                    want.view(np.uint8).tobytes()
                assert (_select_loop(condition, first, second) is not None) == \
                    (on and compiled.numba_enabled())
                eager = ember.where(ember.tensor(condition), ember.tensor(first),
                                    ember.tensor(second))
                assert eager.numpy().tobytes() == want.tobytes()
        finally:
            compiled.use_numba(saved)
