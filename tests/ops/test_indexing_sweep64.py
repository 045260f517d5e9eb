"""Indexing sweep (session 64) against PyTorch 2.13: a range as an index, index_select of a
0-d tensor."""

import numpy as np
import pytest
import torch

import ember


def _x(m):
    return m.arange(20.0).reshape(4, 5)


@pytest.mark.parametrize("key", [lambda: range(0, 4, 2), lambda: (range(2), range(1, 3)),
                                 lambda: (slice(None), range(0)), lambda: (1, range(4, 0, -2))])
def test_range_index_reads_and_writes_as_torch(key) -> None:
    # (a range was refused: "cannot index with an object of type range")
    want, got = _x(torch)[key()], _x(ember)[key()]
    assert tuple(got.shape) == tuple(want.shape)
    np.testing.assert_array_equal(got.numpy(), want.numpy())
    t, e = _x(torch), _x(ember)
    t[key()] = -1.0
    e[key()] = -1.0
    np.testing.assert_array_equal(e.numpy(), t.numpy())


@pytest.mark.parametrize("index", [[0, 0], []])
def test_index_select_of_a_0d_tensor_takes_one_index(index: list) -> None:
    # (two indices gave the one value back silently; torch refuses)
    with pytest.raises(RuntimeError, match="Index to scalar can have only 1 value"):
        torch.tensor(1.0).index_select(0, torch.tensor(index, dtype=torch.int64))
    with pytest.raises(IndexError, match="index_select: indexing a 0-d tensor takes exactly one"):
        ember.tensor(1.0).index_select(0, ember.tensor(index, dtype=ember.int64))
    got = ember.tensor(2.0).index_select(0, ember.tensor([0]))
    assert got.shape == () and got.item() == 2.0


def _scatter_reduce_grads(m, reduce: str, include_self: bool) -> list:
    nan, inf = float("nan"), float("inf")
    a = m.tensor([1.0, nan, 3.0, -inf, 0.0, -0.0], dtype=m.float64, requires_grad=True)
    src = m.tensor([nan, 2.0, inf, 5.0, 4.0, 4.0], dtype=m.float64, requires_grad=True)
    index = m.tensor([0, 0, 2, 2, 4, 4])
    a.scatter_reduce(0, index, src, reduce, include_self=include_self).sum().backward()
    return [a.grad.numpy(), src.grad.numpy()]


@pytest.mark.parametrize("reduce,include_self", [("prod", False), ("amax", True),
                                                 ("amin", True), ("amax", False)])
def test_scatter_reduce_grads_at_nan_and_inf_as_torch(reduce: str, include_self: bool) -> None:
    # (prod without self gave a left-out inf/nan self entry a NaN gradient, not 0; amax/amin
    # gave an entry of a NaN result 0, where torch gives NaN)
    want = _scatter_reduce_grads(torch, reduce, include_self)
    got = _scatter_reduce_grads(ember, reduce, include_self)
    np.testing.assert_array_equal(got[0], want[0])
    if include_self:  # (without self, torch still counts self's ties: 1/3 where 1/2 is right)
        np.testing.assert_array_equal(got[1], want[1])
    else:
        np.testing.assert_array_equal(np.isnan(got[1]), np.isnan(want[1]))


HALF_SUMS = {
    "scatter_add": lambda m, a, b, i: a.scatter_add(0, i[:, None].expand(-1, 5), b),
    "index_add": lambda m, a, b, i: a.index_add(0, i, b),
    "index_add_dim1": lambda m, a, b, i: a.t().index_add(1, i, b.t()),
    "scatter_reduce_sum": lambda m, a, b, i: a.scatter_reduce(0, i[:, None].expand(-1, 5), b,
                                                              "sum"),
    "scatter_reduce_mean": lambda m, a, b, i: a.scatter_reduce(0, i[:, None].expand(-1, 5), b,
                                                               "mean", include_self=False),
    "scatter_reduce_prod": lambda m, a, b, i: a.scatter_reduce(0, i[:, None].expand(-1, 5), b,
                                                               "prod"),
    "gather_grad": lambda m, a, b, i: m.autograd.grad(
        a.gather(0, i[:, None].expand(-1, 5)), a, b)[0],
    "index_select_grad": lambda m, a, b, i: m.autograd.grad(a.index_select(0, i), a, b)[0],
}


@pytest.mark.parametrize("dtype", ["float16", "bfloat16"])
@pytest.mark.parametrize("name", sorted(HALF_SUMS))
def test_half_float_sums_by_index_round_once_as_torch(name: str, dtype: str) -> None:
    # (repeated indices added in the half type itself, rounding at every step: 1-ulp
    # differences from torch's float32 sums in a fifth of the entries)
    for seed in range(5):
        rng = np.random.default_rng(seed)
        x, s, i = rng.standard_normal((4, 5)), rng.standard_normal((8, 5)), rng.integers(0, 2, 8)
        got, want = (HALF_SUMS[name](m, m.tensor(x, dtype=getattr(m, dtype), requires_grad=True),
                                     m.tensor(s, dtype=getattr(m, dtype)), m.tensor(i))
                     for m in (ember, torch))
        np.testing.assert_array_equal(got.detach().float().numpy(), want.detach().float().numpy())


@pytest.mark.parametrize("dtype", ["float16", "bfloat16"])
def test_half_float_accumulation_does_not_stall(dtype: str) -> None:
    # (float16 counts 2048 + 1 as 2048: 4096 ones added one by one in it summed to 2048)
    half = getattr(ember, dtype)
    index, ones = ember.zeros(4096, dtype=ember.int64), ember.ones(4096, dtype=half)
    assert ember.zeros(1, dtype=half).index_add(0, index, ones).item() == 4096
    assert ember.zeros(1, dtype=half).index_put((index,), ones, accumulate=True).item() == 4096
    w = ember.ones(3, 2, dtype=half, requires_grad=True)
    w[index].sum().backward()
    assert w.grad[0, 0].item() == 4096
    x = ember.full((1,), 1.001, dtype=half)
    got = x.scatter_reduce(0, index, ember.full((4096,), 1.001, dtype=half), "prod").item()
    assert got == pytest.approx(float(x.float().item()) ** 4097, rel=1e-2)


@pytest.mark.parametrize("index", [1.5, True, 2.0])
def test_select_refuses_a_non_integer_index_by_name(index) -> None:
    # (a float reached NumPy: "OpError: slice: failed on (4, 5) float32: IndexError: only
    # integers, slices ...")
    with pytest.raises(TypeError, match="must be int"):
        torch.zeros(4, 5).select(0, index if index != 2.0 else torch.tensor(2.0))
    with pytest.raises(TypeError, match="select: index must be an int"):
        ember.zeros(4, 5).select(0, index if index != 2.0 else ember.tensor(2.0))
    assert ember.arange(20).reshape(4, 5).select(0, ember.tensor(2)).tolist() == [
        10, 11, 12, 13, 14]


def test_index_put_shape_error_names_shapes_as_tuples() -> None:
    with pytest.raises(ember.ShapeError, match=r"values of shape \(3,\) cannot be broadcast to "
                                               r"the indexed shape \(2, 5\)"):
        ember.zeros(4, 5).index_put((ember.tensor([0, 1]),), ember.ones(3))


@pytest.mark.parametrize("call", [
    lambda m, x: m.select_scatter(x, x[0], 0, None),
    lambda m, x: m.select_scatter(x, x[0], 0, 1.0),
    lambda m, x: m.slice_scatter(x, x[:1], 0, True, 2),
    lambda m, x: m.slice_scatter(x, x[:1], 0, 0, 1.0),
    lambda m, x: m.slice_scatter(x, x[:1], 0, 0, 1, 1.0),
])
def test_select_and_slice_scatter_refuse_non_integer_positions_by_name(call) -> None:
    # (None reached "'<=' not supported between instances of 'int' and 'NoneType'", a float
    # index NumPy's IndexError inside index_put, and start=True was read as 1)
    with pytest.raises(TypeError, match="must be int"):
        call(torch, torch.zeros(4, 5))
    with pytest.raises(TypeError, match=r"(select|slice)_scatter: \w+ must be an int"):
        call(ember, ember.zeros(4, 5))
