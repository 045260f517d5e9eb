"""Sorting ops against PyTorch and finite differences (distinct values, so ties and thus
unstable orders never decide a result)."""

import numpy as np
import pytest
import torch

import ember
from ember.errors import IndexOutOfRange
from tests.ops.optable import OpCase, S, arg, op_tests, raises_like_torch


def case(name, fn, samples, **kw):
    return OpCase(name, lambda *a: fn(ember, *a), lambda *a: fn(torch, *a), samples, **kw)


M = [S(arg(3, 5)), S(arg(4, 3, noncontig=True)), S(arg(0, 3)), S(arg())]

CASES = [
    case("sort", lambda m, x: tuple(x.sort()), M),
    case("sort_dim0_desc", lambda m, x: tuple(m.sort(x, 0, True)), M[:3]),
    case("sort_stable", lambda m, x: tuple(m.sort(x, dim=-1, stable=True)), M[:2]),
    case("argsort", lambda m, x: m.argsort(x, 0, descending=True), M, grad=False),
    case("msort", lambda m, x: m.msort(x), M[:3]),
    case("topk", lambda m, x: tuple(x.topk(2)), M[:2] + [S(arg(2, 9))]),
    case("topk_smallest_dim0", lambda m, x: tuple(m.topk(x, 3, 0, largest=False)),
         [S(arg(4, 3)), S(arg(9, 2))]),
    case("topk_all", lambda m, x: tuple(x.topk(3, -1)), [S(arg(2, 3))]),
    case("topk_zero", lambda m, x: tuple(x.topk(0)), [S(arg(2, 3))]),
    case("topk_0d", lambda m, x: tuple(x.topk(1)), [S(arg())]),
    case("kthvalue", lambda m, x: tuple(x.kthvalue(2)), M[:2] + [S(arg(2, 9))]),
    case("kthvalue_0d", lambda m, x: tuple(x.kthvalue(1)), [S(arg())]),
    case("kthvalue_keepdim", lambda m, x: tuple(m.kthvalue(x, 3, 0, keepdim=True)),
         [S(arg(3, 2)), S(arg(8, 3))]),
    case("median", lambda m, x: x.median(), [S(arg(3, 5)), S(arg(4)), S(arg())]),
    case("median_dim", lambda m, x: tuple(x.median(1)), [S(arg(3, 5)), S(arg(3, 4))]),
    case("median_keepdim", lambda m, x: tuple(m.median(x, 0, keepdim=True)), [S(arg(4, 2))]),
]

test_forward, test_backward, test_gradcheck, test_gradgradcheck, test_jvp = op_tests(CASES)


NAN = float("nan")


def _both(fn, data):
    return fn(ember.tensor(data)), fn(torch.tensor(data))


@pytest.mark.parametrize("fn", [
    lambda x: x.sort(),
    lambda x: x.sort(descending=True),
    lambda x: x.topk(2),
    lambda x: x.topk(2, largest=False),
    lambda x: x.kthvalue(3),
    lambda x: x.median(0),
])
def test_nan_counts_as_largest(fn):
    mine, ref = _both(fn, [1.0, NAN, 0.0, 3.0])
    for m, r in zip(mine, ref, strict=True):
        np.testing.assert_array_equal(m.numpy(), r.numpy())


@pytest.mark.parametrize("values", [[1.0, 1.0, 0.5, 2.0], [0.1, 0.1, 0.1, 5.0, -5.0],
                                    [1.0, NAN, 1.0, 2.0, 0.5], [NAN, NAN, 1.0],
                                    [-np.inf, -np.inf, -np.inf, 1.0, 2.0], [np.inf] * 3 + [1.0]])
@pytest.mark.parametrize("name", ["median", "nanmedian"])
def test_whole_median_shares_its_gradient_among_ties_as_torch(values, name):
    ours = ember.tensor(values, requires_grad=True)
    theirs = torch.tensor(values, requires_grad=True)
    got, want = getattr(ours, name)(), getattr(theirs, name)()
    np.testing.assert_array_equal(got.detach().numpy(), want.detach().numpy())  # (exactly)
    got.backward()
    want.backward()
    np.testing.assert_allclose(ours.grad.numpy(), theirs.grad.numpy())


@pytest.mark.parametrize("dtype", ["int64", "int32", "float16", "bfloat16", "float64"])
@pytest.mark.parametrize("name", ["median", "nanmedian"])
def test_whole_median_keeps_the_dtype(dtype, name):
    got = getattr(ember.tensor([3, 1, 2], dtype=getattr(ember, dtype)), name)()
    assert got.dtype == getattr(ember, dtype) and got.item() == 2


def test_median_of_all_propagates_nan_and_empty_is_nan():
    assert ember.tensor([1.0, NAN, 0.0]).median().isnan().item()
    assert ember.zeros(0).median().isnan().item()


@pytest.mark.parametrize("name", ["median", "nanmedian"])
def test_median_of_bool_or_complex_is_refused_as_in_pytorch(name):
    with pytest.raises(ember.DTypeError, match=f"{name}: does not support bool input"):
        getattr(ember.tensor([True, False]), name)()
    with pytest.raises(ember.DTypeError, match=f"{name}: complex64 tensors are not supported"):
        getattr(ember.zeros(0, dtype=ember.complex64), name)()


@pytest.mark.parametrize("name", ["median", "nanmedian"])
def test_median_of_an_empty_integer_tensor_is_refused(name):
    # PyTorch returns an arbitrary integer here (0 or the dtype's minimum)
    with pytest.raises(ember.ShapeError, match=rf"{name}: the input of shape \(0, 3\) is "
                                               r"empty.*int16 cannot hold.*\.float\(\)"):
        getattr(ember.zeros(0, 3, dtype=ember.int16), name)()


@pytest.mark.parametrize("descending", [False, True])
def test_stable_sort_keeps_order_of_ties(descending):
    data = [2, 1, 2, 0, 1, 2, 0]
    mine = ember.tensor(data).sort(descending=descending, stable=True)
    ref = torch.tensor(data).sort(descending=descending, stable=True)
    assert mine.indices.tolist() == ref.indices.tolist()
    assert mine.values.tolist() == ref.values.tolist()


def test_integer_and_bool_sorting():
    x = ember.tensor([[3, -1, 2], [0, 5, 5]])
    assert x.sort(1, descending=True).values.tolist() == [[3, 2, -1], [5, 5, 0]]
    assert x.topk(1, 1).values.tolist() == [[3], [5]]
    assert ember.tensor([True, False, True]).sort().values.tolist() == [False, True, True]


def test_result_is_a_named_tuple():
    values, indices = ember.tensor([2.0, 1.0]).sort()
    out = ember.tensor([2.0, 1.0]).sort()
    assert out.values is not None and out.indices.dtype is ember.int64
    assert values.tolist() == [1.0, 2.0] and indices.tolist() == [1, 0]


def test_sort_gradient_goes_to_the_chosen_entries():
    x = ember.tensor([3.0, 1.0, 2.0], requires_grad=True)
    x.topk(2).values.backward(ember.tensor([10.0, 1.0]))
    assert x.grad.tolist() == [10.0, 0.0, 1.0]


def test_sort_errors():
    x = ember.zeros(2, 3)
    with pytest.raises(IndexOutOfRange, match=r"topk: k \(4\) is out of range for dimension 1 "
                                              r"of size 3"):
        x.topk(4)
    with pytest.raises(IndexOutOfRange, match="kthvalue: k .0. is out of range"):
        x.kthvalue(0)
    with pytest.raises(IndexOutOfRange, match="argsort: dimension 2 is out of range"):
        x.argsort(2)
    with pytest.raises(IndexOutOfRange, match="median: the reduced dimension 1"):
        ember.zeros(2, 0).median(1)


@pytest.mark.parametrize("fn", [
    lambda m: m.tensor([False, True]).median(), lambda m: m.tensor([False, True]).median(0),
    lambda m: m.tensor([False, True]).kthvalue(1), lambda m: m.tensor([False, True]).topk(1),
])
def test_ranking_bool_values_is_refused_as_in_torch(fn):
    raises_like_torch(fn, ember.DTypeError, "(median|kthvalue|topk): does not support bool")


@pytest.mark.parametrize("dtype", ["bfloat16", "float16", "float32"])
def test_nan_orders_last_in_every_float_dtype_as_torch(dtype):
    values = [3.0, float("nan"), 1.0, float("nan"), 2.0, -1.0, 2.0]
    a, t = ember.tensor(values, dtype=getattr(ember, dtype)), torch.tensor(
        values, dtype=getattr(torch, dtype))
    for descending in (False, True):
        ours, theirs = a.sort(descending=descending, stable=True), t.sort(
            descending=descending, stable=True)
        np.testing.assert_array_equal(ours.values.float().numpy(), theirs.values.float().numpy())
        assert ours.indices.tolist() == theirs.indices.tolist()
    for k in (2, 5):
        for largest in (True, False):
            ours, theirs = a.topk(k, largest=largest), t.topk(k, largest=largest)
            np.testing.assert_array_equal(ours.values.float().numpy(),
                                          theirs.values.float().numpy())
    assert float(a.kthvalue(2).values) == float(t.kthvalue(2).values)
    np.testing.assert_array_equal(ember.msort(a).float().numpy(), torch.msort(t).float().numpy())
