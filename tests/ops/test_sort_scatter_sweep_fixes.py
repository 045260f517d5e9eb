"""Divergences from PyTorch found by the sorting/scatter/scan sweep, each against torch."""

import numpy as np
import pytest
import torch

import ember
from tests.ops.optable import assert_same


@pytest.mark.parametrize("lo,hi,bins", [(2.0, 3.0, 3), (-5.0, -4.0, 7), (4.0, 5.0, 5)])
def test_histogram_value_on_an_inner_edge_opens_the_next_bin(lo, hi, bins):
    edges = np.linspace(lo, hi, bins + 1)
    for lib in (ember, torch):  # the same edges in both, so the bins must agree
        assert np.array_equal(lib.linspace(lo, hi, bins + 1, dtype=lib.float64).numpy(), edges)
    mine, ref = (lib.histogram(lib.tensor(edges), bins) for lib in (ember, torch))
    assert_same(tuple(mine), tuple(ref))
    pts = np.stack([edges, edges[::-1]], axis=1)
    mine, ref = (lib.histogramdd(lib.tensor(pts), [bins, bins]) for lib in (ember, torch))
    assert_same(mine.hist, ref.hist)


def _complex_scatter(lib, reduce):
    x, index, src = lib.tensor([1 + 1j, 2, 3]), lib.tensor([0, 0, 1]), lib.tensor([1j, 2, 3])
    return lib.scatter_reduce(x, 0, index, src, reduce)


@pytest.mark.parametrize("reduce", ["sum", "prod", "mean"])
def test_scatter_reduce_of_complex_matches_torch(reduce):
    # mean divided with floor_divide, which refuses complex numbers
    assert_same(ember.view_as_real(_complex_scatter(ember, reduce)),
                torch.view_as_real(_complex_scatter(torch, reduce)), rtol=1e-6)


@pytest.mark.parametrize("reduce", ["amax", "amin"])
def test_scatter_reduce_max_of_complex_raises_like_torch(reduce):
    with pytest.raises(NotImplementedError):
        _complex_scatter(torch, reduce)
    with pytest.raises(ember.errors.DTypeError, match=f"scatter_reduce {reduce}: complex64"):
        _complex_scatter(ember, reduce)
    x = ember.tensor([1 + 1j, 2])
    with pytest.raises(ember.errors.DTypeError, match=f"index_reduce {reduce}: complex64"):
        x.index_reduce(0, ember.tensor([0]), x[:1], reduce)


@pytest.mark.parametrize("fill", [
    lambda lib, x, v: lib.masked_fill(x, x > 0, v),
    lambda lib, x, v: x.index_fill(0, lib.tensor([0]), v),
])
def test_fill_with_a_complex_0d_tensor_refuses_its_imaginary_part(fill):
    x = lambda lib: lib.tensor([[1.0, 0.0], [0.0, 1.0]])  # noqa: E731
    with pytest.raises(RuntimeError, match="(?i)convert"):
        fill(torch, x(torch), torch.tensor(1 + 2j))
    with pytest.raises(ember.errors.DTypeError, match="imaginary part"):  # kept the real part
        fill(ember, x(ember), ember.tensor(1 + 2j))


def test_masked_fill_with_a_real_complex_0d_tensor_matches_torch():
    mine, ref = (lib.tensor([1.0, 0.0]).masked_fill(lib.tensor([True, False]),
                                                    lib.tensor(3 + 0j)) for lib in (ember, torch))
    assert_same(mine, ref)


def test_corrcoef_of_complex_variables_matches_torch():
    rng = np.random.default_rng(0)
    data = rng.standard_normal((3, 5)) + 1j * rng.standard_normal((3, 5))
    data[2] = 2j * data[0]  # perfectly correlated: the clipped parts
    grads = []
    for lib in (ember, torch):
        x = lib.tensor(data, requires_grad=True)
        out = lib.corrcoef(x)  # raised clamp's complex error
        out.abs().sum().backward()
        grads.append((out, x.grad))
    for mine, ref in zip(*grads, strict=True):
        assert_same(ember.view_as_real(mine), torch.view_as_real(ref), rtol=1e-12, atol=1e-12)


def test_unravel_index_of_no_indices_into_an_empty_shape_matches_torch():
    mine, ref = (lib.unravel_index(lib.tensor([], dtype=lib.int64), (0, 3))
                 for lib in (ember, torch))
    assert_same(mine, ref)


@pytest.mark.parametrize("op", [
    lambda lib, x, e: lib.gather(x, 0, e),
    lambda lib, x, e: lib.gather(x, 1, e.reshape(0, 9)),
    lambda lib, x, e: lib.scatter(x, 0, e, lib.ones(7, dtype=lib.float64)),
    lambda lib, x, e: lib.scatter(x, 0, e, 2.0),
    lambda lib, x, e: lib.scatter_add(x, 1, e.reshape(0, 1, 1), lib.ones(2, dtype=lib.float64)),
    lambda lib, x, e: lib.scatter_reduce(x, 0, e, lib.ones(7, dtype=lib.float64), "mean",
                                         include_self=False),
])
def test_an_empty_index_of_any_shape_reads_and_writes_nothing_as_in_torch(op):
    # PyTorch checks no sizes for an empty index; these raised a dimension-count ShapeError
    results = []
    for lib in (ember, torch):
        x = lib.tensor(np.arange(12.0).reshape(3, 4), requires_grad=True)
        out = op(lib, x, lib.zeros(0, dtype=lib.int64))
        out.sum().backward()
        results.append((out, x.grad))
    assert_same(*results)


@pytest.mark.parametrize("op", [lambda lib, x: lib.cumsum(x, 0),
                                lambda lib, x: lib.logcumsumexp(x, 0)])
@pytest.mark.parametrize("dtype", ["float32", "float16", "complex64"])
def test_a_leading_negative_zero_sums_to_positive_zero_as_in_torch(op, dtype):
    mine, ref = (op(lib, lib.tensor([-0.0, -0.0, 1.0], dtype=getattr(lib, dtype))).numpy()
                 for lib in (ember, torch))
    assert np.array_equal(np.signbit(mine.real), np.signbit(ref.real))  # NumPy kept -0.0


@pytest.mark.parametrize("op", [
    lambda lib, x, s: lib.scatter(x, 0, lib.tensor([1]), s),
    lambda lib, x, s: lib.scatter_add(x, 0, lib.tensor([2]), s),
    lambda lib, x, s: lib.scatter_reduce(x, 0, lib.tensor([1]), s, "amax"),
])
def test_scatter_takes_a_0d_src_for_a_1d_index_as_torch(op):
    # it raised 'slice: too many indices for a tensor of dimension 0'
    results = []
    for lib in (ember, torch):
        x = lib.tensor([0.0, 1.0, 5.0], dtype=lib.float64, requires_grad=True)
        s = lib.tensor(3.0, dtype=lib.float64, requires_grad=True)
        out = op(lib, x, s)
        (out * lib.tensor([1.0, 2.0, 3.0], dtype=lib.float64)).sum().backward()
        results.append((out, x.grad, s.grad))
    assert_same(*results)


def test_scatter_src_of_another_number_of_dimensions_raises_a_shape_error():
    x, index, src = ember.zeros(2, 3), ember.tensor([[1]]), ember.tensor([2.0])
    with pytest.raises(RuntimeError):  # (PyTorch: an IndexError or a RuntimeError)
        torch.scatter(torch.zeros(2, 3), 0, torch.tensor([[1]]), torch.tensor(2.0).reshape(()))
    with pytest.raises(ember.ShapeError, match="same number of dimensions as src"):
        ember.scatter(x, 0, index, src)  # raised a bare IndexError: tuple index out of range


def test_scatter_refuses_both_src_and_value_as_torch():
    with pytest.raises(TypeError):
        torch.zeros(3).scatter(0, torch.tensor([1]), torch.ones(1), value=2.0)
    with pytest.raises(TypeError, match="one of them"):  # used src silently
        ember.zeros(3).scatter(0, ember.tensor([1]), ember.ones(1), value=2.0)


@pytest.mark.parametrize("dtype,alpha", [("bool", 2), ("bool", 0), ("uint8", -1), ("int64", 3)])
def test_index_add_scales_by_alpha_in_the_input_dtype_as_torch(dtype, alpha):
    # a bool source times 2 became int64 and was refused
    mine, ref = (lib.zeros(3, dtype=getattr(lib, dtype)).index_add(
        0, lib.tensor([0, 2]), lib.ones(2, dtype=getattr(lib, dtype)), alpha=alpha)
        for lib in (ember, torch))
    assert_same(mine, ref)
