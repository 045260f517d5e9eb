"""Reductions and scans against PyTorch: cases the session-64 sweep found wrong."""

import numpy as np
import pytest
import torch

import ember


def _e(t: torch.Tensor) -> ember.Tensor:
    return ember.tensor(t.numpy())


@pytest.mark.parametrize("op", ["trapezoid", "cumulative_trapezoid"])
def test_trapezoid_refuses_bool_samples(op):
    y = torch.tensor([True, False, True])
    with pytest.raises(RuntimeError, match="bool"):
        getattr(torch, op)(y)
    with pytest.raises(ember.errors.DTypeError, match=f"{op}: received a bool input"):
        getattr(ember, op)(_e(y))
    with pytest.raises(ember.errors.DTypeError, match="`x` or `y`"):
        getattr(ember, op)(ember.ones(3), _e(y))


@pytest.mark.parametrize("ydt", [torch.int64, torch.float16, torch.float64])
@pytest.mark.parametrize("xdt", [None, torch.float64, torch.int64, torch.float16])
def test_trapezoid_of_no_samples_keeps_torch_dtype(ydt, xdt):
    y = torch.zeros(3, 0, dtype=ydt)
    args = () if xdt is None else (torch.zeros(0, dtype=xdt),)
    for op in ("trapezoid", "cumulative_trapezoid"):
        want = getattr(torch, op)(y, *args)
        got = getattr(ember, op)(_e(y), *(_e(a) for a in args))
        assert tuple(got.shape) == tuple(want.shape)
        assert str(got.dtype).split(".")[-1] == str(want.dtype).split(".")[-1]


def test_cumulative_trapezoid_of_no_samples_checks_x_length():
    with pytest.raises(ember.errors.ShapeError, match="one `x` value for each sample"):
        ember.cumulative_trapezoid(ember.zeros(3, 0), ember.zeros(2))


@pytest.mark.parametrize("dtype", ["int64", "int32", "bool"])
def test_nanmean_refuses_a_non_floating_dtype(dtype):
    x = torch.tensor([1.5, float("nan"), 2.5])
    with pytest.raises(RuntimeError, match="nanmean"):
        torch.nanmean(x, dtype=getattr(torch, dtype))
    with pytest.raises(ember.errors.DTypeError, match=f"nanmean: dtype={dtype}"):
        ember.nanmean(_e(x), dtype=getattr(ember, dtype))  # (it returned float32 1.5000)
    got = ember.nanmean(_e(x), dtype=ember.float64)
    np.testing.assert_allclose(got.numpy(), torch.nanmean(x, dtype=torch.float64).numpy())
    assert got.dtype == ember.float64


_INF, _NAN = float("inf"), float("nan")
_POINTS = [complex(-_INF, 0), 1 + 1j, complex(_INF, 2), complex(-_INF, 3), complex(_NAN, 0),
           complex(0, _NAN), 100 + 1j]


@pytest.mark.parametrize("first", _POINTS)
@pytest.mark.parametrize("second", _POINTS)
def test_complex_logcumsumexp_with_infinities_as_torch(first, second):
    # an infinite real part keeps its element's phase (inf+2j gave inf+2.356j), -inf+3j
    # counts as log 0 = -inf+0j, and a NaN imaginary part makes NaN
    t = torch.tensor([first, second, 2 - 3j], dtype=torch.complex128)
    np.testing.assert_allclose(ember.logcumsumexp(_e(t), 0).numpy(),
                               torch.logcumsumexp(t, 0).numpy(), equal_nan=True)


def test_complex_logcumsumexp_values_and_gradient():
    torch.manual_seed(0)
    t = (torch.randn(3, 40, dtype=torch.complex128) * 30).requires_grad_()
    x = ember.tensor(t.detach().numpy(), requires_grad=True)
    want, got = torch.logcumsumexp(t, 1), ember.logcumsumexp(x, 1)
    np.testing.assert_allclose(got.detach().numpy(), want.detach().numpy(), rtol=1e-12)
    want.abs().sum().backward()
    got.abs().sum().backward()
    np.testing.assert_allclose(x.grad.numpy(), t.grad.resolve_conj().numpy(), rtol=1e-9,
                               atol=1e-12)


@pytest.mark.parametrize("rows", [
    [[1.0, _NAN, 3.0, 2.0], [0.0, 5.0, 1.0, 5.0]],   # a NaN row beside a zero elsewhere
    [[2.0, _INF, 0.0, 3.0], [3.0, 0.0, _INF, 2.0]],  # 0 * inf in the others
    [[_NAN, 0.0, 2.0, 3.0], [1.0, 2.0, 3.0, 4.0]],
    [[0.0, _NAN, 0.0, 1.0], [1.0, 2.0, 3.0, 4.0]],   # two zeros
])
@pytest.mark.parametrize("dim", [None, 0, 1])
def test_prod_gradient_beside_zeros_and_nonfinite_values_as_torch(rows, dim):
    # (ember gave 0 where torch's products of the others reach an inf or NaN, and NaN for a
    # NaN row's other elements where torch's, with a zero elsewhere, are finite)
    t = torch.tensor(rows, dtype=torch.float64, requires_grad=True)
    x = ember.tensor(t.detach().numpy(), requires_grad=True)
    args = () if dim is None else (dim,)
    want, got = torch.prod(t, *args), ember.prod(x, *args)
    g = torch.arange(1.0, want.numel() + 1, dtype=torch.float64).reshape(want.shape)
    want.backward(g)
    got.backward(_e(g))
    np.testing.assert_array_equal(x.grad.numpy(), t.grad.numpy())


@pytest.mark.parametrize("row", [[2.0, _INF, 0.0, 3.0], [_NAN, 0.0, 2.0, 3.0],
                                 [3.0, 0.0, _INF, 2.0], [1.0, 2.0, 0.0, _NAN, 0.0]])
def test_cumprod_gradient_before_a_zero_ignores_what_follows_it_as_torch(row):
    # (before the first zero ember summed g * out over the whole fiber: out's 0 * inf = NaN
    # after the zero made the gradient NaN where torch's is finite or inf)
    t = torch.tensor([row, row[::-1]], dtype=torch.float64, requires_grad=True)
    x = ember.tensor(t.detach().numpy(), requires_grad=True)
    g = torch.linspace(-1.0, 2.0, t.numel(), dtype=torch.float64).reshape(t.shape)
    for dim in (1, 0):
        t.grad = x.grad = None
        torch.cumprod(t, dim).backward(g)
        ember.cumprod(x, dim).backward(_e(g))
        np.testing.assert_allclose(x.grad.numpy(), t.grad.numpy(), rtol=1e-12)


@pytest.mark.parametrize("row", [[0.0, 0.0, _INF, 2.0], [0.0, _INF, 2.0], [0.0, 0.0, 3.0, 2.0],
                                 [_NAN, 0.0, 2.0, 0.0], [_INF, 3.0, 2.0], [1.0, 2.0, 3.0]])
@pytest.mark.parametrize("dim", [None, 0])
@pytest.mark.parametrize("create_graph", [False, True])
def test_prod_gradient_of_a_vector_follows_the_overload_and_grad_mode_as_torch(row, dim,
                                                                               create_graph):
    # torch's "two zeros give 0" is the plain backward of prod() alone: x.prod(0) of
    # [0, 0, inf, 2] gave [0, 0, 0, 0] (torch [nan, nan, 0, nan]); with create_graph, ember's
    # [0, inf, 2] gave [inf, 0, 0] (torch [inf, 0, nan], the products before and after)
    t = torch.tensor(row, dtype=torch.float64, requires_grad=True)
    x = ember.tensor(row, dtype=ember.float64, requires_grad=True)
    args = () if dim is None else (dim,)
    (want,) = torch.autograd.grad(t.prod(*args), t, create_graph=create_graph)
    (got,) = ember.autograd.grad(x.prod(*args), x, create_graph=create_graph)
    np.testing.assert_array_equal(got.detach().numpy(), want.detach().numpy())


@pytest.mark.parametrize("shape, dim", [((0,), -1), ((2, 0), -1), ((0, 3), 0)])
@pytest.mark.parametrize("x", [None, "float", "bool"])
def test_trapezoid_over_no_samples_gives_zeros_before_the_bool_check(shape, dim, x):
    # torch returns zeros (a bool y's: False) for no samples before refusing bool; ember raised
    y = torch.zeros(shape, dtype=torch.bool)
    xs = {} if x is None else {"x": torch.zeros(0, dtype=getattr(torch, x))}
    want = torch.trapezoid(y, dim=dim, **xs)
    got = ember.trapezoid(_e(y), dim=dim, **{k: _e(v) for k, v in xs.items()})
    assert got.dtype == ember.bool and got.tolist() == want.tolist()


@pytest.mark.parametrize("op", ["nanmean", "nansum"])
def test_nan_reductions_refuse_complex_as_torch(op):
    # ember's nanmean(x, dtype=complex64) and nansum of a complex input returned a result;
    # torch has no complex nansum kernel (NotImplementedError, RuntimeError)
    with pytest.raises(NotImplementedError):
        getattr(torch, op)(torch.tensor([1.0, 2.0]), dtype=torch.complex64)
    with pytest.raises(NotImplementedError, match=f"{op}: complex dtype= complex64"):
        getattr(ember, op)(ember.tensor([1.0, 2.0]), dtype=ember.complex64)
    with pytest.raises(RuntimeError):
        getattr(torch, op)(torch.tensor([1j, 2.0]))
    with pytest.raises(RuntimeError, match=op):
        getattr(ember, op)(ember.tensor([1j, 2.0]))
