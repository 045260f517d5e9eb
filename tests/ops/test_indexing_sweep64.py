"""Indexing sweep (session 64) against PyTorch 2.13: a range as an index (and a list of
ranges or arrays as a tuple), index_select of a 0-d tensor, the gradients of scatter_reduce,
sums by index of half floats (float32 or step by step, each as torch's)."""

import numpy as np
import pytest
import torch

import ember


def _x(m):
    return m.arange(20.0).reshape(4, 5)


def _reads_and_writes_as_torch(key) -> None:
    """``x[key()]`` and ``x[key()] = -1`` give torch's shape and values."""
    want, got = _x(torch)[key()], _x(ember)[key()]
    assert tuple(got.shape) == tuple(want.shape)
    np.testing.assert_array_equal(got.numpy(), want.numpy())
    t, e = _x(torch), _x(ember)
    t[key()] = -1.0
    e[key()] = -1.0
    np.testing.assert_array_equal(e.numpy(), t.numpy())


@pytest.mark.parametrize("key", [lambda: range(0, 4, 2), lambda: (range(2), range(1, 3)),
                                 lambda: (slice(None), range(0)), lambda: (1, range(4, 0, -2))])
def test_range_index_reads_and_writes_as_torch(key) -> None:
    # (a range was refused: "cannot index with an object of type range")
    _reads_and_writes_as_torch(key)


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
    np.testing.assert_array_equal(got[1], want[1])


@pytest.mark.parametrize("reduce", ["amax", "amin"])
def test_scatter_reduce_ties_without_self_count_self_as_torch(reduce: str) -> None:
    # (a left-out self entry equal to the result shares the gradient among the ties, as
    # torch's, its own part dropped: [2, 5] amax [2, 1] at 0, 0 gave src [1, 0], torch's
    # [0.5, 0]); random ties, NaN and inf, the shares taken as torch's: (g / count) * mask
    got = _ties_grads(ember, [2.0, 5.0], [2.0, 1.0], [0, 0], reduce, 0)
    want = _ties_grads(torch, [2.0, 5.0], [2.0, 1.0], [0, 0], reduce, 0)
    assert [g.tolist() for g in got] == [g.tolist() for g in want]
    rng = np.random.default_rng(0)
    for case in range(300):
        shape = tuple(rng.integers(1, 4, 2))
        dim = case % 2
        src_shape = (int(rng.integers(1, 6)), shape[1]) if dim == 0 else (shape[0], 5)
        x = rng.integers(0, 4, shape).astype(float)
        v = rng.integers(0, 4, src_shape).astype(float)
        x.flat[0] = (np.nan, np.inf, 0.0)[case % 3] if case % 5 == 0 else x.flat[0]
        index = rng.integers(0, shape[dim], src_shape)
        args = (x, v, index, reduce, dim, case % 4 < 2, ("float64", "float32")[case % 3 == 0])
        for g, w in zip(_ties_grads(ember, *args), _ties_grads(torch, *args), strict=True):
            np.testing.assert_array_equal(g, w)


def _ties_grads(m, x, v, index, reduce: str, dim: int, include_self: bool = False,
                dtype: str = "float64") -> list:
    a = m.tensor(x, dtype=getattr(m, dtype), requires_grad=True)
    src = m.tensor(v, dtype=getattr(m, dtype), requires_grad=True)
    out = a.scatter_reduce(dim, m.tensor(index), src, reduce, include_self=include_self)
    out.backward(m.arange(out.numel(), dtype=out.dtype).reshape(out.shape) - 2.5)
    return [out.detach().numpy(), a.grad.numpy(), src.grad.numpy()]


@pytest.mark.filterwarnings("ignore::UserWarning")  # (both warn: the reading is deprecated)
@pytest.mark.parametrize("key", [
    lambda: [range(2), range(2)], lambda: [range(2)], lambda: [range(2), 1],
    lambda: [1, range(1, 3)], lambda: [range(0), 1], lambda: [np.array([0, 1]), np.array([1, 2])],
    lambda: [np.array([0, 1])], lambda: [np.array([0, 1]), 1], lambda: [np.array(1), 1],
    lambda: [np.array(2)], lambda: [np.array([True, False, True, False])],
    lambda: [np.array([], dtype=np.int64)]])
def test_a_list_holding_ranges_or_arrays_indexes_as_a_tuple_as_torch(key) -> None:
    # (torch reads a short list as a tuple of indices when an item is a sequence, and a
    # range or an ndarray is one: x[[range(2), range(2)]] gave (2, 2, 5), torch's (2,);
    # x[[range(2), 1]] raised)
    _reads_and_writes_as_torch(key)


def _grad(m, w, out):
    return m.autograd.grad(out, w, m.ones_like(out))[0]


# (t(shape): a half tensor of the case's values, requiring grad; i(n, size): an index of n
# entries below size). Torch sums in float32, rounded once, in the scatter family, index_add
# along the first or last of several dims (alpha 1) and the gradients of gather and such an
# index_select; in the half type step by step in index_put_, put_, 1-d or middle-dim
# index_add, index_reduce's prod and mean, and the gradients of x[i] and take
HALF_SUMS = {
    "scatter_add": lambda m, t, i: t(4, 5).scatter_add(0, i(8, 4)[:, None].expand(-1, 5),
                                                       t(8, 5)),
    "scatter_add_2d_index": lambda m, t, i: t(2, 3).scatter_add(
        1, i(8, 3).reshape(2, -1), t(8).reshape(2, -1)),
    "scatter_reduce_sum": lambda m, t, i: t(4, 5).scatter_reduce(
        0, i(8, 4)[:, None].expand(-1, 5), t(8, 5), "sum"),
    "scatter_reduce_mean": lambda m, t, i: t(4, 5).scatter_reduce(
        0, i(8, 4)[:, None].expand(-1, 5), t(8, 5), "mean", include_self=False),
    "scatter_reduce_prod": lambda m, t, i: t(4, 5).scatter_reduce(
        0, i(8, 4)[:, None].expand(-1, 5), t(8, 5), "prod"),
    "scatter_reduce_amax_grad": lambda m, t, i: (lambda w: _grad(m, w, w.scatter_reduce(
        0, i(8, 4)[:, None].expand(-1, 5), t(8, 5), "amax")))(t(4, 5)),
    "index_add_1d": lambda m, t, i: t(4).index_add(0, i(8, 4), t(8)),
    "index_add_dim0": lambda m, t, i: t(4, 5).index_add(0, i(8, 4), t(8, 5)),
    "index_add_dim1": lambda m, t, i: t(5, 4).index_add(1, i(8, 4), t(5, 8)),
    "index_add_middle": lambda m, t, i: t(2, 4, 3).index_add(1, i(8, 4), t(2, 8, 3)),
    "index_add_last": lambda m, t, i: t(2, 3, 4).index_add(2, i(8, 4), t(2, 3, 8)),
    "index_add_alpha": lambda m, t, i: t(4, 5).index_add(0, i(8, 4), t(8, 5), alpha=2),
    "index_add_": lambda m, t, i: t(4, 5).detach().index_add_(0, i(8, 4), t(8, 5)),
    "index_reduce_prod": lambda m, t, i: t(4, 5).index_reduce(0, i(8, 4), t(8, 5), "prod"),
    "index_reduce_mean": lambda m, t, i: t(4, 5).index_reduce(0, i(8, 4), t(8, 5), "mean"),
    "index_reduce_amax_grad": lambda m, t, i: (lambda w: _grad(m, w, w.index_reduce(
        0, i(8, 4), t(8, 5), "amax")))(t(4, 5)),
    "index_put": lambda m, t, i: t(4).index_put((i(8, 4),), t(8), accumulate=True),
    "index_put_rows": lambda m, t, i: t(4, 5).index_put((i(8, 4),), t(8, 5), accumulate=True),
    "put": lambda m, t, i: t(2, 2).put(i(8, 4), t(8), accumulate=True),
    "gather_grad": lambda m, t, i: (lambda w: _grad(m, w, w.gather(
        0, i(8, 4)[:, None].expand(-1, 5))))(t(4, 5)),
    "index_select_grad_dim0": lambda m, t, i: (lambda w: _grad(
        m, w, w.index_select(0, i(8, 4))))(t(4, 5)),
    "index_select_grad_1d": lambda m, t, i: (lambda w: _grad(
        m, w, w.index_select(0, i(8, 4))))(t(4)),
    "index_select_grad_middle": lambda m, t, i: (lambda w: _grad(
        m, w, w.index_select(1, i(8, 4))))(t(2, 4, 3)),
    "getitem_grad": lambda m, t, i: (lambda w: _grad(m, w, w[i(8, 4)]))(t(4, 5)),
    "getitem_grad_dim1": lambda m, t, i: (lambda w: _grad(m, w, w[:, i(8, 4)]))(t(5, 4)),
    "take_grad": lambda m, t, i: (lambda w: _grad(m, w, w.take(i(8, 4))))(t(2, 2)),
}


def _half_case(m, name: str, dtype: str, seed: int | None):
    """The case run on values from ``seed`` (indices 0 and 1 only, so they repeat), or on
    ones at index 0 repeated 4096 times (``seed`` None)."""
    rng = np.random.default_rng(seed)
    half = getattr(m, dtype)

    def t(*shape):
        shape = tuple(4096 if n == 8 and seed is None else n for n in shape)
        data = np.ones(shape) if seed is None else rng.standard_normal(shape)
        return m.tensor(data, dtype=half, requires_grad=True)

    def i(n, size):
        data = np.zeros(4096) if seed is None else rng.integers(0, 2, n)
        return m.tensor(data, dtype=m.int64)

    return HALF_SUMS[name](m, t, i).detach().float().numpy()


@pytest.mark.filterwarnings("ignore:index_reduce")
@pytest.mark.parametrize("dtype", ["float16", "bfloat16"])
@pytest.mark.parametrize("name", sorted(HALF_SUMS))
def test_half_float_sums_by_index_as_torch(name: str, dtype: str) -> None:
    # (ad63f6e5 summed all of them in float32: 1-ulp differences in the step-by-step ones;
    # before, all summed in the half type, an ulp off in a fifth of the float32 ones)
    for seed in range(5):
        np.testing.assert_array_equal(_half_case(ember, name, dtype, seed),
                                      _half_case(torch, name, dtype, seed))


@pytest.mark.filterwarnings("ignore:index_reduce")
@pytest.mark.parametrize("dtype", ["float16", "bfloat16"])
@pytest.mark.parametrize("name", sorted(HALF_SUMS))
def test_half_float_accumulation_stalls_where_torch_does(name: str, dtype: str) -> None:
    # (float16 counts 2048 + 1 as 2048: 4096 ones at one index sum to 2048 in the half type,
    # 4096 in float32; x[i]'s gradient and index_put_ gave 4096, torch's 2048)
    np.testing.assert_array_equal(_half_case(ember, name, dtype, None),
                                  _half_case(torch, name, dtype, None))


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
