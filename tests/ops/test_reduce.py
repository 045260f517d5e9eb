"""Reductions against PyTorch and finite differences (see optable.py), plus their semantics:
dtypes, ties, empty inputs, errors."""

import numpy as np
import pytest
import torch

import ember
from ember.ops.reduce import normalize_dim, normalize_dims
from tests.ops.fused import assert_fused_matches
from tests.ops.optable import OpCase, S, arg, op_tests, raises_like_torch, same_as_torch

# A fiber-wise reduction: all dims, one, several, negative, keepdim, 0-d, empty, non-contiguous.
REDUCE = [
    S(arg(3, 4)),
    S(arg(3, 4), dim=1),
    S(arg(2, 3, 4), dim=(0, -1), keepdim=True),
    S(arg(2, 3, 4), dim=-2),
    S(arg(2, 3, noncontig=True), dim=0),
    S(arg()),
    S(arg(), dim=0),
    S(arg(0, 3), dim=0),
    S(arg(0, 3), dim=1, keepdim=True),
]
ONE_DIM = [  # ops whose dim is a single int
    S(arg(3, 4), dim=1),
    S(arg(2, 3, 4), dim=-1, keepdim=True),
    S(arg(2, 3, 4), dim=0),
    S(arg(2, 3, noncontig=True), dim=1),
    S(arg(), dim=0),
]
WITH_ZEROS = [  # integer-valued inputs in [-2, 2]: zeros, often several per fiber
    S(arg(4, 5, integer=True), dim=1),
    S(arg(3, 4, integer=True), dim=0),
    S(arg(6, integer=True), dim=0),
]
SCAN = [
    S(arg(3, 4), dim=1),
    S(arg(2, 3, 4), dim=-3),
    S(arg(2, 3, noncontig=True), dim=0),
    S(arg(), dim=0),
    S(arg(0, 3), dim=1),
]
POSITIVE = [S(arg(3, 4, low=0.5, high=2.0)), S(arg(3, 4, low=0.5, high=2.0), dim=0)]


CASES = [
    OpCase("sum", ember.sum, torch.sum, REDUCE),
    OpCase("sum_list_dim", lambda x: ember.sum(x, [0, 2]), lambda x: torch.sum(x, [0, 2]),
           [S(arg(2, 3, 4))]),
    OpCase("mean", ember.mean, torch.mean, REDUCE[:7]),
    OpCase("prod_all", ember.prod, torch.prod, [S(arg(3, 4)), S(arg()), S(arg(0, 2))]),
    OpCase("prod", ember.prod, torch.prod, ONE_DIM),
    OpCase("prod_zeros", ember.prod, torch.prod, WITH_ZEROS, gradgrad=False),
    OpCase("amax", ember.amax, torch.amax, REDUCE[:7] + [S(arg(0, 3), dim=1)]),
    OpCase("amin", ember.amin, torch.amin, REDUCE[:7]),
    OpCase("max_all", ember.max, torch.max, [S(arg(3, 4)), S(arg()), S(arg(2, 3,
                                                                             noncontig=True))]),
    OpCase("min_all", ember.min, torch.min, [S(arg(3, 4)), S(arg())]),
    OpCase("max_dim", ember.max, torch.max, ONE_DIM + [S(arg(0, 3), dim=1)]),
    OpCase("min_dim", ember.min, torch.min, ONE_DIM),
    OpCase("max_other", lambda a, b: ember.max(a, b), lambda a, b: torch.max(a, b),
           [S(arg(3, 4), arg(4))]),
    OpCase("argmax", ember.argmax, torch.argmax,
           [S(arg(3, 4)), S(arg(3, 4), dim=-1), S(arg(2, 3, 4), dim=1, keepdim=True),
            S(arg(3, 4), keepdim=True), S(arg(), dim=0)], grad=False),
    OpCase("argmin", ember.argmin, torch.argmin, [S(arg(3, 4)), S(arg(3, 4), dim=0)],
           grad=False),
    OpCase("var", ember.var, torch.var, REDUCE[:5] + [S(arg(3, 4), dim=1, correction=0),
                                                      S(arg(3, 4), dim=0, correction=2)]),
    OpCase("var_unbiased", lambda x: ember.var(x, 1, False), lambda x: torch.var(x, 1, False),
           [S(arg(3, 4))]),
    OpCase("std", ember.std, torch.std, REDUCE[:5] + [S(arg(3, 4), dim=-1, keepdim=True,
                                                        correction=0)]),
    OpCase("var_mean", ember.var_mean, torch.var_mean, [S(arg(3, 4), dim=1),
                                                        S(arg(2, 3), dim=0, keepdim=True)]),
    OpCase("std_mean", ember.std_mean, torch.std_mean, [S(arg(3, 4), dim=(0, 1))]),
    OpCase("logsumexp", ember.logsumexp, torch.logsumexp,
           [S(arg(3, 4), dim=1), S(arg(2, 3, 4), dim=(0, 2), keepdim=True),
            S(arg(3, 4, low=50, high=90), dim=-1), S(arg(2, 3, noncontig=True), dim=0),
            S(arg(), dim=0), S(arg(0, 3), dim=0)]),
    OpCase("cumsum", ember.cumsum, torch.cumsum, SCAN),
    OpCase("cumprod", ember.cumprod, torch.cumprod, SCAN),
    OpCase("cumprod_zeros", ember.cumprod, torch.cumprod,
           [S(arg(4, 5, integer=True), dim=1), S(arg(7, integer=True), dim=0),
            S(arg(3, 4, integer=True), dim=0)], gradgrad=False),
    OpCase("all", ember.all, torch.all, [S(arg(3, 4, integer=True), dim=1),
                                         S(arg(3, 4, integer=True))], grad=False),
    OpCase("any", ember.any, torch.any, [S(arg(3, 4, integer=True), dim=(0, 1), keepdim=True),
                                         S(arg(0, 2))], grad=False),
    OpCase("count_nonzero", ember.count_nonzero, torch.count_nonzero,
           [S(arg(3, 4, integer=True), dim=1), S(arg(3, 4, integer=True))], grad=False),
    OpCase("methods", lambda x: x.sum(-1).mean() + x.amax(0).prod() + x.std(1).sum(),
           lambda x: x.sum(-1).mean() + x.amax(0).prod() + x.std(1).sum(), [S(arg(3, 4))]),
]

test_forward, test_backward, test_gradcheck, test_gradgradcheck, test_jvp = op_tests(CASES)


def _t(*values, dtype=None):
    return ember.tensor(*values, dtype=dtype)


# -- dtypes ----------------------------------------------------------------------------------
@pytest.mark.parametrize("np_dtype", [np.bool_, np.uint8, np.int8, np.int32, np.int64,
                                      np.float16, np.float32, np.float64])
def test_result_dtypes_match_torch(np_dtype):
    a = (np.arange(6).reshape(2, 3) % 3).astype(np_dtype)
    e, t = ember.from_numpy(a), torch.from_numpy(a)
    pairs = [(e.sum(), t.sum()), (e.sum(1), t.sum(1)), (e.prod(), t.prod()),
             (e.cumsum(0), t.cumsum(0)), (e.cumprod(1), t.cumprod(1)), (e.amax(), t.amax()),
             (e.max(1).values, t.max(1).values), (e.all(), t.all()),
             (e.any(0), t.any(0)), (e.count_nonzero(), t.count_nonzero()),
             (e.logsumexp(1), t.logsumexp(1))]
    if np_dtype is not np.bool_:
        pairs += [(e.argmax(), t.argmax())]
    if np_dtype in (np.float16, np.float32, np.float64):
        pairs += [(e.mean(), t.mean()), (e.var(0), t.var(0))]
    for i, (m, r) in enumerate(pairs):
        assert m.dtype.name == str(r.dtype).removeprefix("torch."), (i, m.dtype, r.dtype)
        np.testing.assert_allclose(np.asarray(m, dtype=np.float64),
                                   r.double().numpy(), rtol=1e-3, err_msg=str(i))


def test_dtype_argument_casts_before_reducing():
    x = _t([1.5, 2.5])
    assert x.sum(dtype=ember.float64).dtype is ember.float64
    assert x.mean(dtype=ember.float64).dtype is ember.float64
    assert _t([1, 2]).mean(dtype=ember.float32).item() == 1.5
    assert _t([1, 2]).cumsum(0, dtype=ember.float32).dtype is ember.float32
    assert _t([3, 4], dtype=ember.uint8).prod(dtype=ember.int16).dtype is ember.int16


def test_half_precision_sums_accumulate_in_float32():
    x = ember.ones(4096, dtype=ember.float16)
    assert x.sum().item() == 4096.0          # float16 accumulation would stall at 2048
    assert x.cumsum(0).amax().item() == 4096.0
    b = ember.ones(1024, dtype=ember.bfloat16)
    assert b.sum().item() == 1024.0


# -- gradients at ties and zeros -------------------------------------------------------------
TIES = np.array([[1.0, 3.0, 3.0, 0.0], [2.0, 2.0, 0.0, 2.0], [5.0, 5.0, 5.0, 5.0]])


@pytest.mark.parametrize("fn", [
    lambda x: x.max(), lambda x: x.min(), lambda x: x.amax(1), lambda x: x.amin(0),
    lambda x: x.amax((0, 1)), lambda x: x.max(1).values, lambda x: x.min(0).values,
    lambda x: x.max(-1, keepdim=True)[0], lambda x: x.norm(float("inf"), dim=1),
])
def test_gradient_at_ties_matches_torch(fn):
    e = ember.from_numpy(TIES.copy()).requires_grad_()
    t = torch.from_numpy(TIES.copy()).requires_grad_()
    out_e, out_t = fn(e), fn(t)
    seed = np.arange(1, out_t.numel() + 1, dtype=np.float64).reshape(tuple(out_t.shape))
    out_e.backward(ember.from_numpy(seed))
    out_t.backward(torch.from_numpy(seed))
    np.testing.assert_allclose(e.grad.numpy(), t.grad.numpy())


def test_max_along_dim_returns_named_values_and_indices():
    x = _t([[1.0, 5.0, 5.0], [7.0, 2.0, 7.0]])
    out = x.max(dim=1)
    assert out.indices.tolist() == [1, 0]
    assert out.values.tolist() == [5.0, 7.0]
    values, indices = ember.min(x, 0, keepdim=True)
    assert values.shape == (1, 3) and indices.tolist() == [[0, 1, 0]]
    assert indices.dtype is ember.int64


def test_indices_do_not_require_grad():
    x = ember.randn(3, 4, requires_grad=True)
    values, indices = x.max(1)
    assert values.requires_grad and not indices.requires_grad
    assert not x.count_nonzero().requires_grad and not x.argmax().requires_grad


@pytest.mark.parametrize("values", [[2.0, 0.0, 3.0], [0.0, 0.0, 3.0], [0.0, 2.0, 0.0, 4.0]])
def test_prod_and_cumprod_gradients_with_zeros(values):
    for e_fn, t_fn in [(lambda x: x.prod(), lambda x: x.prod()),
                       (lambda x: x.cumprod(0), lambda x: x.cumprod(0))]:
        e = _t(values).double().requires_grad_()
        t = torch.tensor(values, dtype=torch.float64, requires_grad=True)
        out_e, out_t = e_fn(e), t_fn(t)
        seed = np.linspace(1, 2, out_t.numel()).reshape(tuple(out_t.shape))
        out_e.backward(ember.from_numpy(seed))
        out_t.backward(torch.from_numpy(seed))
        np.testing.assert_allclose(e.grad.numpy(), t.grad.numpy())


@pytest.mark.parametrize("values", [[3.0, 0.0, 3.0], [-3.0, 0.0, 0.0], [0.0, 0.0, 0.0, 2.0],
                                    [2.0, 0.0, 1.5, 0.0, -1.0, 2.0], [0.0, 2.0, 0.0, 0.0, 3.0]])
def test_cumprod_second_derivative_with_zeros_matches_torch(values):
    # After a fiber's first zero the gradient is 0 but depends on that zero (and at the second
    # zero, on the first): a constant 0 there lost those terms of Hessian-vector products.
    v = np.linspace(-1.0, 2.0, len(values))
    w = np.linspace(1.0, 2.0, len(values))
    hvps = []
    for lib, grad in ((torch, torch.autograd.grad), (ember, ember.autograd.grad)):
        x = lib.tensor(values, dtype=lib.float64, requires_grad=True)
        (g,) = grad((lib.cumprod(x, 0) * lib.tensor(w)).sum(), x, create_graph=True)
        (h,) = grad((g * lib.tensor(v)).sum(), x)
        hvps.append(h.detach().numpy())
    np.testing.assert_allclose(hvps[1], hvps[0], atol=1e-12)


@pytest.mark.parametrize("values, dims", [([3.0, 0.0, 3.0], 0), ([-3.0, 0.0, 0.0], 0),
                                          ([[0.0, 2.0], [5.0, -1.5]], (0, 1)),
                                          ([[0.0, 2.0], [5.0, 0.0]], 1), ([0.0, 0.0, 0.0], 0)])
def test_prod_second_derivative_with_zeros_matches_torch(values, dims):
    # The product of the others is 0 beside one zero, but not constant: its derivative with
    # respect to that zero is the product of the rest (it was taken as a constant 0).
    v = np.linspace(-1.0, 2.0, np.size(values)).reshape(np.shape(values))
    hvps = []
    for lib, grad in ((torch, torch.autograd.grad), (ember, ember.autograd.grad)):
        x = lib.tensor(values, dtype=lib.float64, requires_grad=True)
        y = lib.prod(x, dims) if isinstance(dims, int) else x.prod()
        (g,) = grad((y * lib.arange(1.0, y.numel() + 1.0).reshape(y.shape)).sum(), x,
                    create_graph=True)
        (h,) = grad((g * lib.tensor(v)).sum(), x)
        hvps.append(h.detach().numpy())
    np.testing.assert_allclose(hvps[1], hvps[0], atol=1e-12)


@pytest.mark.parametrize("values", [[[0.0, 0.0], [float("inf"), 1.0]],
                                    [[-0.0, 2.0], [float("-inf"), 1.0]]])
def test_prod_second_derivative_beside_a_zero_and_an_inf_matches_torch(values):
    # An inf beside one zero: d(its gradient)/d(the zero) is the product of the finite rest
    # (torch: 1 here); a branch where() left out sent 0 * inf = NaN back (review53e #4).
    hessians = []
    for lib in (torch, ember):
        x = lib.tensor(values, dtype=lib.float64, requires_grad=True)
        (g,) = lib.autograd.grad(x.prod(0).sum(), x, create_graph=True)
        (h,) = lib.autograd.grad(g[1, 0], x)
        hessians.append(h.detach().numpy())
    np.testing.assert_array_equal(hessians[1], hessians[0])


def test_cumprod_gradient_over_a_length_one_dim_is_the_identity_with_inf_and_nan():
    # Over a dim of size 1 cumprod is the identity, so its gradient is g also at inf/NaN
    # (it was g * out / x = NaN there, unless the whole tensor held one element), as torch's.
    # The tangent is da there too: a deliberate difference, torch.func.jvp gives NaN at inf/NaN
    # (torch [nan, nan, ...]); the identity's tangent is the mathematically right value.
    values = [[float("inf")], [float("nan")], [0.0], [2.0]]
    e = _t(values).double().requires_grad_()
    t = torch.tensor(values, dtype=torch.float64, requires_grad=True)
    seed = np.arange(1.0, 5.0).reshape(4, 1)
    e.cumprod(1).backward(ember.from_numpy(seed))
    t.cumprod(1).backward(torch.from_numpy(seed))
    np.testing.assert_array_equal(e.grad.numpy(), t.grad.numpy())
    tangent = ember.func.jvp(lambda x: x.cumprod(1), (_t(values).double(),),
                             (ember.from_numpy(seed),))[1]
    np.testing.assert_array_equal(tangent.numpy(), seed)


@pytest.mark.parametrize("name", ["all", "any"])
@pytest.mark.parametrize("dim", [(), []])
@pytest.mark.parametrize("values, dtype", [([[0.0, 1.0], [2.0, float("nan")]], "float32"),
                                           ([[0, 3], [1, 2]], "uint8"), (2.0, "float32"),
                                           (np.zeros((0, 2)), "float32")])
def test_all_and_any_over_no_dims_reduce_nothing(name, dim, values, dtype):
    # PyTorch's all/any with dim=() test each element (sum(dim=()) reduces them all instead).
    def make(m):
        return m.tensor(values, dtype=getattr(m, dtype))
    same_as_torch(lambda m: getattr(m, name)(make(m), dim=dim))
    same_as_torch(lambda m: getattr(m, name)(make(m), dim=dim, keepdim=True))
    same_as_torch(lambda m: getattr(make(m), name)(dim))


def test_prod_tangent_over_length_one_dims_is_the_identity_with_inf_as_torch():
    # The product of one element is that element: its tangent is da also at ±inf (it was
    # da * (product of the others as out / x) = NaN there).
    inf = float("inf")
    got = []
    for m, jvp in ((torch, torch.func.jvp), (ember, ember.func.jvp)):
        x = m.tensor([[-inf], [0.5], [inf]], dtype=m.float64)
        _, t = jvp(lambda v, m=m: m.prod(v, 1), (x,), (m.full_like(x, 2.0),))
        got.append(t.numpy())
    np.testing.assert_array_equal(got[1], got[0])


def test_norm_gradient_at_zero_is_zero_not_nan():
    for p in (2, "fro", 3, 1, 0.5):
        x = ember.zeros(3, requires_grad=True)
        ember.norm(x, p).backward()
        assert x.grad.tolist() == [0.0, 0.0, 0.0], p


def test_logsumexp_is_stable_and_handles_minus_inf():
    x = _t([1000.0, 1000.0])
    assert abs(x.logsumexp(0).item() - (1000 + np.log(2))) < 1e-3
    ninf = _t([[-float("inf"), -float("inf")], [0.0, -float("inf")]])
    assert ninf.logsumexp(1).tolist() == [-float("inf"), 0.0]


def test_int_logsumexp_gives_float():
    assert _t([1, 2]).logsumexp(0).dtype is ember.float32


# -- empty inputs ----------------------------------------------------------------------------
def test_empty_reductions_follow_torch():
    e = ember.ones(0, 3)
    assert e.sum().item() == 0.0 and e.prod().item() == 1.0
    assert np.isnan(e.mean().item())
    assert e.sum(0).shape == (3,) and e.amax(1).shape == (0,)
    assert e.max(1).values.shape == (0,)
    assert not e.any().item() and e.all().item()


@pytest.mark.parametrize("fn", [lambda x: x.max(), lambda x: x.amax(), lambda x: x.argmin(),
                                lambda x: x.max(0), lambda x: x.amin(0), lambda x: x.argmax(0)])
def test_extremum_of_nothing_is_a_clear_error(fn):
    with pytest.raises(ember.ShapeError, match="size 0"):
        fn(ember.ones(0, 3))


# -- errors ----------------------------------------------------------------------------------
def test_dim_out_of_range_is_index_error():
    x = ember.ones(2, 3)
    for fn in (lambda: x.sum(2), lambda: x.mean(-3), lambda: x.max(5), lambda: x.cumsum(2),
               lambda: x.argmax(-3), lambda: x.amax((0, 2)), lambda: x.logsumexp(3)):
        with pytest.raises(ember.errors.IndexOutOfRange, match=r"expected a dim in \[-2, 1\]"):
            fn()


def test_repeated_dim_is_an_error():
    with pytest.raises(ember.ShapeError, match="more than once"):
        ember.ones(2, 3).sum((1, -1))


def test_mean_of_integers_is_a_dtype_error():
    with pytest.raises(ember.DTypeError, match="mean: input dtype int64 is not floating"):
        _t([1, 2]).mean()
    with pytest.raises(ember.DTypeError, match="var"):
        _t([1, 2]).var()


def test_var_rejects_both_unbiased_and_correction():
    with pytest.raises(ValueError, match="not both"):
        ember.ones(3).var(0, True, correction=1)


def test_var_with_no_degrees_of_freedom_is_nan_as_torch():
    with np.errstate(all="ignore"):
        assert np.isnan(ember.ones(1).var().item())
        assert np.isnan(ember.ones(0).var().item())


def test_normalize_dims():
    assert normalize_dim(-1, 3) == 2
    assert normalize_dim(0, 0) == 0 and normalize_dim(-1, 0) == 0
    assert normalize_dims(None, 3) == (0, 1, 2)
    assert normalize_dims([2, -3], 3) == (0, 2)
    assert normalize_dims(0, 0) == ()
    with pytest.raises(IndexError, match=r"unsqueeze: dimension 4 is out of range"):
        normalize_dim(4, 4, "unsqueeze")
    with pytest.raises(TypeError, match="dim must be an int"):
        normalize_dim(1.0, 2)


def test_inplace_cumsum():
    x = _t([1.0, 2.0, 3.0])
    x.cumsum_(0)
    assert x.tolist() == [1.0, 3.0, 6.0]


def test_var_overload_with_unbiased_positional():
    x = _t([1.0, 2.0, 4.0])
    assert abs(x.var(False).item() - torch.tensor([1.0, 2.0, 4.0]).var(False).item()) < 1e-6


HALF_REDUCTIONS = [  # float32 inside, one rounding to the input's dtype at the end
    lambda m, x: x.mean(), lambda m, x: x.mean(0), lambda m, x: x.mean(1, keepdim=True),
    lambda m, x: x.var(), lambda m, x: x.std(1), lambda m, x: x.var(0, correction=0),
    lambda m, x: m.var_mean(x, 1), lambda m, x: m.std_mean(x, keepdim=True),
    lambda m, x: m.linalg.vector_norm(x), lambda m, x: m.linalg.vector_norm(x, 3, 1),
    lambda m, x: m.linalg.vector_norm(x, 0.5), lambda m, x: m.linalg.vector_norm(x, -1),
    lambda m, x: m.linalg.matrix_norm(x), lambda m, x: x.norm(dim=0),
    lambda m, x: m.linalg.norm(x, dim=1),
]


@pytest.mark.parametrize("dtype", ["float16", "bfloat16"])
@pytest.mark.parametrize("k", range(len(HALF_REDUCTIONS)))
def test_half_precision_reductions_do_not_overflow(k, dtype):
    big = 6e4 if dtype == "float16" else 1e18  # float16: sums and squares overflow it
    values = [[big, big, -300.0], [300.0, 400.0, big]]
    same_as_torch(lambda m: HALF_REDUCTIONS[k](m, m.tensor(values, dtype=getattr(m, dtype))),
                  rtol=1e-2)


def test_half_precision_mean_keeps_its_gradient():
    x = ember.tensor([6e4, 6e4], dtype=ember.float16, requires_grad=True)
    x.mean().backward()
    assert x.grad.dtype is ember.float16 and x.grad.tolist() == [0.5, 0.5]


@pytest.mark.parametrize("fn", [
    lambda m: m.tensor([False, True]).argmax(), lambda m: m.tensor([False, True]).argmin(0),
    lambda m: m.argmax(m.tensor([[False, True]]), 1, keepdim=True),
])
def test_argmax_of_bool_is_refused_as_in_torch(fn):
    raises_like_torch(fn, ember.DTypeError, "arg(max|min): does not support bool input")


@pytest.mark.parametrize("special", [None, "-inf", "inf", "nan", "all -inf"])
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_fused_logsumexp_equals_composite_and_torch(special, dtype, monkeypatch):
    # eager logsumexp of float32/float64 is the Logsumexp primitive; the composite stays for
    # transforms (and must compute the same bits)
    import importlib

    logsumexp_module = importlib.import_module("ember.ops.logsumexp")
    rng = np.random.default_rng(0)
    for shape, dim, keepdim in [((5,), 0, False), ((4, 4), 1, True), ((3, 4, 5), (0, 2), False),
                                ((2000, 8), 0, False)]:
        x = (rng.standard_normal(shape) * 3).astype(dtype)
        flat = x.reshape(-1)
        if special == "all -inf":
            x[...] = -np.inf
        elif special is not None:
            flat[1] = float(special)
        tol = 1e-5 if dtype == np.float32 else 1e-12
        assert_fused_matches(monkeypatch, logsumexp_module, "_LOGSUMEXP_FUSED",
                             lambda lib, t, d=dim, k=keepdim: lib.logsumexp(t, d, k), x, tol)


def test_fused_logsumexp_rules_and_transforms():
    x = ember.tensor(np.random.default_rng(1).standard_normal((3, 4)), requires_grad=True)
    assert ember.autograd.gradcheck(lambda a: ember.logsumexp(a, 1), (x,))
    assert ember.autograd.gradgradcheck(lambda a: ember.logsumexp(a, 1), (x,))
    assert ember.logsumexp(x, 1).grad_fn.name() == "LogsumexpBackward0"
    with ember.profiler.profile() as prof:
        ember.logsumexp(x.detach(), 1)
    assert [e.name for e in prof.events()] == ["logsumexp"]
    graph = ember.jit.trace(lambda a: ember.logsumexp(a, 1), (x.detach(),)).graph
    assert "logsumexp" not in {eqn.prim.name for eqn in graph.eqns}
    from ember.ops.logsumexp import Logsumexp
    from ember.ops.primitive import apply

    v = ember.randn(3, 4, dtype=ember.float64)  # (the primitive's own tangent rule)
    _, tangent = ember.func.jvp(lambda a: apply(Logsumexp, a, dims=(1,), keepdim=False),
                                (x.detach(),), (v,))
    _, want = torch.func.jvp(lambda a: torch.logsumexp(a, 1),
                             (torch.tensor(x.detach().numpy()),), (torch.tensor(v.numpy()),))
    np.testing.assert_allclose(tangent.numpy(), want.numpy(), rtol=1e-12)


def test_a_full_sums_gradient_is_one_broadcast():
    # (the 0-d gradient broadcasts as it is: no reshape to (1, 1) first, ~8 µs of every
    # loss.backward())
    x = ember.randn(3, 4, requires_grad=True)
    with ember.profiler.profile() as prof:
        x.sum().backward()
    ops = [e.key for e in prof.key_averages()]
    assert "expand" in ops and "reshape" not in ops
    assert x.grad.tolist() == [[1.0] * 4] * 3


def test_a_list_inside_a_dims_tuple_is_an_argument_type_error():
    # (it reached normalize_dims' cache: Python's bare "unhashable type: 'list'")
    with pytest.raises(ember.errors.ArgumentTypeError, match=r"sum: dim must be an int, got "
                       r"list"):
        ember.ones(2, 3).sum(([0],))


@pytest.mark.parametrize("source", ["int64", "float32", "float64"])
@pytest.mark.parametrize("target", ["float16", "bfloat16"])
@pytest.mark.parametrize("dim", [None, 1])
def test_mean_to_a_half_dtype_reads_the_input_in_float32_as_torch(source, target, dim):
    # (mean(int64 [[70000, 60000]], dtype=float16) cast the input to float16 first: inf, where
    # torch averages in float32 and rounds once to 64992)
    values = [[70000, 60000, -5]]
    want = torch.tensor(values, dtype=getattr(torch, source)).mean(
        *(() if dim is None else (dim,)), dtype=getattr(torch, target))
    got = ember.tensor(values, dtype=getattr(ember, source)).mean(
        *(() if dim is None else (dim,)), dtype=getattr(ember, target))
    assert got.dtype is getattr(ember, target)
    np.testing.assert_array_equal(got.float().numpy(), want.float().numpy())


@pytest.mark.parametrize("call", [lambda m, t: m.linalg.vector_norm(t, 2, [], True),
                                  lambda m, t: t.norm("fro", [], True),
                                  lambda m, t: t.norm(1, [])])
def test_norm_with_an_empty_dim_list_reduces_every_dim_as_torch(call):
    """dim=[] is dim=(): every dim (vector_norm returned the input with keepdim; mend58g)."""
    x = np.arange(12.0).reshape(4, 3)
    got, want = call(ember, ember.tensor(x)), call(torch, torch.tensor(x))
    assert tuple(got.shape) == tuple(want.shape)
    assert np.allclose(got.numpy(), want.numpy())
