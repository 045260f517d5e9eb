"""Indexing ops (indexing.py, gather.py, pad.py) against PyTorch and finite differences."""

import re
import warnings

import numpy as np
import pytest
import torch
import torch.nn.functional as F

import ember
from ember.errors import DTypeError, GradError, IndexOutOfRange, OpError, ShapeError
from tests.ops.optable import Const, OpCase, S, arg, op_tests


def case(name, fn, samples, **kw):
    """One row whose Ember and PyTorch forms are the same lambda of the module ``m``."""
    return OpCase(name, lambda *a, **k: fn(ember, *a, **k), lambda *a, **k: fn(torch, *a, **k),
                  samples, **kw)


def setter(key, value=None):
    """``y = x.clone(); y[key(m)] = v; return y`` (v the second input, or ``value``)."""
    def fn(m, x, *v):
        y = x.clone()
        y[key(m)] = v[0] if v else value
        return y
    return fn


M34 = [S(arg(3, 4)), S(arg(3, 4, noncontig=True))]
M234 = [S(arg(2, 3, 4)), S(arg(2, 3, 4, noncontig=True))]
I = np.array  # index constants, passed as int64 tensors to both frameworks

GETITEM = [
    case("get_int", lambda m, x: x[1], M34 + [S(arg(3))]),
    case("get_neg_ints", lambda m, x: x[-1, -2], M34),
    case("get_slices", lambda m, x: x[1::2, :3], M34 + [S(arg(0, 4))]),
    case("get_none_ellipsis", lambda m, x: x[None, ..., None, 1], M234),
    case("get_ellipsis_first", lambda m, x: x[..., 1:], M234),
    case("get_0d", lambda m, x: x[()], [S(arg())]),
    case("get_0d_none", lambda m, x: x[None, ...], [S(arg())]),
    case("get_list_repeats", lambda m, x: x[[0, 2, 0]], M34),
    case("get_negative_list", lambda m, x: x[:, [-1, 0, -4]], M34),
    case("get_tensor_2d", lambda m, x, i: x[i], [S(arg(3, 4), Const(I([[0, 1], [2, 0]])))]),
    case("get_adjacent", lambda m, x: x[:, [0, 1], [1, 2]], M234),
    case("get_separated", lambda m, x: x[[0, 1], :, [1, 3]], M234),
    case("get_broadcast", lambda m, x: x[[[0], [1]], [0, 2, 2]], M34),
    case("get_int_then_adv", lambda m, x: x[0, :, [1, 2]], M234),   # PyTorch: ints select first
    case("get_adv_none_adv", lambda m, x: x[:, [0, 1], None, [0, 1]], M234),
    case("get_adv_slice", lambda m, x: x[[1, 0], 1:3], M234),
    case("get_empty_list", lambda m, x: x[[]], M34),
    case("get_mask", lambda m, x: x[x > 0], M34),
    case("get_mask_dim", lambda m, x: x[:, m.tensor([True, False, True])], M234),
    case("get_mask_2d_then_int", lambda m, x, k: x[k, 1], [S(arg(2, 3, 4), Const(
        I([[True, False, True], [False, False, True]])))]),
    case("get_true", lambda m, x: x[True], M34),
    case("get_0d_tensor", lambda m, x, i: x[i, :, [1, 2]], [S(arg(2, 3, 4), Const(I(1)))]),
]

SETITEM = [
    case("set_basic", setter(lambda m: (slice(1, None), slice(None, None, 2))),
         [S(arg(3, 4), arg(2, 2)), S(arg(3, 4, noncontig=True), arg(2)), S(arg(3, 4), arg())]),
    case("set_scalar", setter(lambda m: 0, 2.5), M34),
    case("set_int_none", setter(lambda m: (1, None)), [S(arg(3, 4), arg(4))]),
    case("set_list", setter(lambda m: [0, 2]), [S(arg(3, 4), arg(2, 4)), S(arg(3, 4), arg(1))]),
    case("set_adv_adjacent", setter(lambda m: (slice(None), [0, 1], [1, 2])),
         [S(arg(2, 3, 4), arg(2, 2)), S(arg(2, 3, 4, noncontig=True), arg(2, 1))]),
    case("set_mask", lambda m, x, v: setter(lambda _: x > 0)(m, x, v),
         [S(arg(3, 4), arg())]),
    case("set_ellipsis", setter(lambda m: (Ellipsis, 1)), [S(arg(2, 3), arg(2))]),
    case("set_0d", setter(lambda m: ()), [S(arg(), arg())]),
]

GATHER = [
    case("gather", lambda m, x, i: x.gather(1, i),
         [S(arg(2, 3), Const(I([[0, 0], [2, 1]]))), S(arg(3, 2, noncontig=True),
                                                       Const(I([[1], [0], [1]]))),
          S(arg(2, 3), Const(I([[0, 1, 2, 0]])))]),
    case("gather_3d_neg_dim", lambda m, x, i: m.gather(x, -3, i),
         [S(arg(2, 3, 4), Const(I([[[1, 0, 1]], [[0, 0, 1]]])))]),
    case("gather_0d", lambda m, x, i: x.gather(0, i), [S(arg(), Const(I(0))),
                                                        S(arg(3), Const(I(2)))]),
    case("scatter", lambda m, x, i, s: x.scatter(1, i, s),
         [S(arg(2, 4), Const(I([[3, 0], [1, 2]])), arg(2, 2)),
          S(arg(3, 2, noncontig=True), Const(I([[1], [0]])), arg(2, 1))]),
    # PyTorch's scatter backward fails when src is larger than index: forward only here
    case("scatter_src_larger", lambda m, x, i, s: x.scatter(1, i, s),
         [S(arg(2, 4), Const(I([[3, 0], [1, 2]])), arg(2, 3))], grad=False),
    case("scatter_value", lambda m, x, i: x.scatter(0, i, 1.5),
         [S(arg(3, 2), Const(I([[2, 0], [1, 1]])))]),
    case("scatter_add", lambda m, x, i, s: x.scatter_add(0, i, s),
         [S(arg(3, 2), Const(I([[2, 0], [2, 0], [0, 1]])), arg(3, 2)),
          S(arg(3), Const(I([0, 0, 0])), arg(3))]),
    case("scatter_reduce_add", lambda m, x, i, s: x.scatter(0, i, s, reduce="add"),
         [S(arg(3), Const(I([1, 1])), arg(2))], grad=False),  # no derivative in PyTorch
    case("index_select", lambda m, x, i: x.index_select(-1, i),
         [S(arg(3, 4), Const(I([3, 0, 3]))), S(arg(3, 4, noncontig=True), Const(I([1]))),
          S(arg(3, 4), Const(I(2))), S(arg(3, 4), Const(I([], dtype=np.int64)))]),
    case("index_select_0d", lambda m, x, i: m.index_select(x, 0, i), [S(arg(), Const(I([0])))]),
    case("index_add", lambda m, x, i, s: x.index_add(0, i, s, alpha=2.0),
         [S(arg(3, 2), Const(I([2, 2, 0])), arg(3, 2)),
          S(arg(2, 3, noncontig=True), Const(I([1])), arg(1, 3))]),
    case("index_fill", lambda m, x, i: x.index_fill(1, i, -1.0),
         [S(arg(3, 4), Const(I([3, 0]))), S(arg(3, 4), Const(I([-1, 0])))]),  # (-1: the last)
    case("index_copy", lambda m, x, i, s: x.index_copy(1, i, s),
         [S(arg(2, 4), Const(I([3, 0])), arg(2, 2))]),
    case("index_put_accumulate", lambda m, x, i, v: x.index_put((i,), v, accumulate=True),
         [S(arg(3, 2), Const(I([0, 0, 2])), arg(3, 2)), S(arg(3, 2), Const(I([1, 1])), arg(2))]),
    case("index_put_2d", lambda m, x, i, j, v: x.index_put((i, j), v),
         [S(arg(3, 4), Const(I([0, 2])), Const(I([1, -1])), arg(2))]),
    case("take", lambda m, x, i: x.take(i),
         [S(arg(3, 4), Const(I([[0, -1], [5, 5]]))), S(arg(3, 4, noncontig=True),
                                                       Const(I([1, 4])))]),
    case("take_along_dim", lambda m, x, i: m.take_along_dim(x, i, 1),
         [S(arg(2, 3), Const(I([[2], [0]]))), S(arg(2, 3), Const(I([[2, 1]])))]),
    case("take_along_dim_flat", lambda m, x, i: x.take_along_dim(i),
         [S(arg(2, 3), Const(I([5, 0])))]),
]

MASKED = [
    case("masked_fill", lambda m, x, k: x.masked_fill(k, 2.0),
         [S(arg(2, 3), Const(I([True, False, True]))),
          S(arg(2, 3, noncontig=True), Const(I([[True], [False]])))]),
    case("masked_fill_tensor", lambda m, x, k, v: m.masked_fill(x, k, v),
         [S(arg(2, 3), Const(I([[True, False, False], [True, True, False]])), arg())]),
    case("masked_fill_broadcast_up", lambda m, x, k: x.masked_fill(k, 0.5),
         [S(arg(3), Const(I([[True, False, True], [False, False, True]])))]),
    case("masked_select", lambda m, x, k: x.masked_select(k),
         [S(arg(2, 3), Const(I([True, False, True]))), S(arg(3), Const(I([[True], [False]])))]),
]


def pad_case(name, pad, mode, samples, value=None):
    def fn(m, x):
        if m is torch:
            return F.pad(x, pad, mode=mode, value=value)
        return ember.pad(x, pad, mode=mode, value=value)
    return case(name, fn, samples)


PAD = [
    pad_case("pad_constant", (1, 2), "constant", [S(arg(2, 3)), S(arg(3)), S(arg(0, 2))]),
    pad_case("pad_constant_2d", (1, 0, 2, 1), "constant", [S(arg(2, 3, noncontig=True))], 0.5),
    pad_case("pad_constant_crop", (-1, 2, 0, -1), "constant", [S(arg(3, 4))]),
    pad_case("pad_reflect", (2, 1), "reflect", [S(arg(2, 4)), S(arg(1, 2, 3))]),
    pad_case("pad_reflect_2d", (1, 2, 2, 0), "reflect", [S(arg(1, 3, 4)),
                                                         S(arg(2, 1, 3, 3, noncontig=True))]),
    pad_case("pad_replicate", (3, 1), "replicate", [S(arg(2, 2))]),
    pad_case("pad_replicate_3d", (1, 1, 0, 2, 1, 0), "replicate", [S(arg(1, 2, 2, 3))]),
    pad_case("pad_circular", (2, 3), "circular", [S(arg(1, 3))]),
    pad_case("pad_circular_2d", (1, 1, 2, 0), "circular", [S(arg(1, 2, 3))]),
]

ONE_HOT = [
    OpCase("one_hot", ember.one_hot, F.one_hot, [S(Const(I([0, 2, 1]))),
                                                 S(Const(I([[1], [3]])), num_classes=5),
                                                 S(Const(I(2)), num_classes=3)], grad=False),
    case("nonzero", lambda m, x: m.nonzero(x > 0), M34 + [S(arg())], grad=False),
    case("argwhere", lambda m, x: m.argwhere(x > 0), M34, grad=False),
    case("nonzero_tuple", lambda m, x: (x > 0).nonzero(as_tuple=True), M34 + [S(arg())],
         grad=False),
]

CASES = GETITEM + SETITEM + GATHER + MASKED + PAD + ONE_HOT
pytestmark = pytest.mark.filterwarnings("ignore:The reduce argument of torch.scatter")
test_forward, test_backward, test_gradcheck, test_gradgradcheck, test_jvp = op_tests(CASES)


# -- semantics the table does not reach ----------------------------------------------------------
@pytest.mark.parametrize("fn", [
    lambda x, s: x.scatter(1, ember.tensor([[3, 0], [1, 2]]), s),  # src larger than index
    lambda x, s: x.scatter_add(1, ember.tensor([[3, 3], [1, 3]]), s),
    lambda x, s: x.scatter(1, ember.tensor([[0, 1], [1, 2]]), s, reduce="add"),
])
def test_scatter_gradients_where_torch_has_none(fn):
    rng = np.random.default_rng(0)
    x = ember.from_numpy(rng.standard_normal((2, 4))).requires_grad_()
    s = ember.from_numpy(rng.standard_normal((2, 3))).requires_grad_()
    assert ember.autograd.gradcheck(fn, (x, s))
    assert ember.autograd.gradgradcheck(fn, (x, s))


def test_index_fill_tensor_value_gradient_counts_a_repeated_index_once():
    """value's gradient summed the cotangent at each index entry, a repeated one twice (torch:
    each filled place once); input's is zero at the filled places."""
    rng = np.random.default_rng(0)
    x, c = rng.standard_normal((4, 5)), rng.standard_normal((4, 5))
    idx = [0, 2, 2, 4, 0]
    tx = torch.tensor(x, requires_grad=True)
    tv = torch.tensor(1.5, dtype=torch.float64, requires_grad=True)
    (tx.index_fill(-1, torch.tensor(idx), tv) * torch.tensor(c)).sum().backward()
    ex = ember.tensor(x, requires_grad=True)
    ev = ember.tensor(1.5, dtype=ember.float64, requires_grad=True)
    out = ex.index_fill(-1, ember.tensor(idx), ev)
    np.testing.assert_allclose(out.detach().numpy(), tx.index_fill(-1, torch.tensor(idx),
                                                                   1.5).detach().numpy())
    (out * ember.tensor(c)).sum().backward()
    np.testing.assert_allclose(ev.grad.numpy(), tv.grad.numpy(), rtol=1e-12)
    np.testing.assert_allclose(ex.grad.numpy(), tx.grad.numpy(), rtol=1e-12)
    fn = lambda a, v: a.index_fill(1, ember.tensor(idx), v)  # noqa: E731
    assert ember.autograd.gradcheck(fn, (ex, ev))
    assert ember.autograd.gradgradcheck(fn, (ex, ev))


def test_repeated_indices_accumulate_gradient():
    x = ember.zeros(3, requires_grad=True)
    x[[0, 0, 2, 0]].sum().backward()
    assert x.grad.tolist() == [3.0, 0.0, 1.0]


def test_setitem_bumps_version_and_views_see_it():
    x = ember.zeros(3, 4)
    row = x[1]
    v = x._version
    x[1, ::2] = 5.0
    assert x._version == v + 1 and row._version == v + 1
    assert row.tolist() == [5.0, 0.0, 5.0, 0.0]


def test_setitem_casts_values_to_the_tensor_dtype():
    x = ember.zeros(3, dtype=ember.int64)
    x[0] = 2.7
    x[1:] = ember.tensor([1.9, -1.5])
    assert x.dtype is ember.int64 and x.tolist() == [2, 1, -1]


def test_setitem_gradient_flows_to_values_and_rest():
    x = ember.tensor([1.0, 2.0, 3.0], requires_grad=True)
    v = ember.tensor(5.0, requires_grad=True)
    y = x * 2
    y[[0, 2]] = v * 3
    (y * ember.tensor([1.0, 10.0, 100.0])).sum().backward()
    assert x.grad.tolist() == [0.0, 20.0, 0.0]
    assert v.grad.item() == 303.0


def test_setitem_on_leaf_that_requires_grad_raises():
    x = ember.zeros(3, requires_grad=True)
    with pytest.raises(GradError, match="leaf tensor that requires grad"):
        x[0] = 1.0
    with ember.no_grad():
        x[0] = 1.0
    assert x.tolist() == [1.0, 0.0, 0.0]


@pytest.mark.parametrize("name, write", [
    ("add_", lambda x: x[1:].add_(1)),
    ("__setitem__", lambda x: x[1:].__setitem__(0, 2.0)),
    ("__imul__", lambda x: x.t().__imul__(2)),
    ("zero_", lambda x: x[0].zero_()),
    ("copy_", lambda x: x[:, 1:][0].copy_(x[1, 1:] * 2)),
    ("relu_", lambda x: x.view(6)[::2].relu_()),
    ("sub_", lambda x: x.diagonal().sub_(x[0, 1:])),
])
def test_in_place_write_into_a_view_of_a_leaf_that_requires_grad_raises_like_torch(name,
                                                                                   write):
    # the leaf would get a history and lose its gradient (x.grad silently 0 where written)
    x, ref = ember.ones(2, 3, requires_grad=True), torch.ones(2, 3, requires_grad=True)
    with pytest.raises(RuntimeError, match="a view of a leaf Variable that requires grad"):
        write(ref)
    with pytest.raises(GradError, match=rf"^{re.escape(name)}: a view \(shape .*\) of a leaf "
                                        r"tensor that requires grad \(shape \(2, 3\)\).*no_grad"):
        write(x)
    assert x.is_leaf and x._version == 0
    with ember.no_grad(), torch.no_grad():
        write(x)
        write(ref)
    assert x.is_leaf
    np.testing.assert_array_equal(x.detach().numpy(), ref.detach().numpy())
    y, y_ref = x.clone(), ref.clone()  # a clone's views may be written, with their history
    write(y)
    write(y_ref)
    (y * y).sum().backward()
    (y_ref * y_ref).sum().backward()
    np.testing.assert_array_equal(x.grad.numpy(), ref.grad.numpy())


def test_setitem_overlapping_source():
    x = ember.arange(5)
    x[1:] = x[:-1]
    assert x.tolist() == [0, 0, 1, 2, 3]


def test_setitem_into_expanded_tensor_raises():
    x = ember.zeros(3).expand(2, 3)
    with pytest.raises((OpError, GradError), match="clone"):
        x[:, 0] = 1.0  # (x[0, 0] shares no memory with another element: written, as torch)
    x[0, 0] = 1.0
    assert x.tolist() == [[1.0, 0.0, 0.0]] * 2


def test_setitem_value_shape_error():
    x = ember.zeros(3, 4)
    with pytest.raises(ShapeError, match=r"values of shape \(3,\) cannot be broadcast to the "
                                         r"indexed shape \(2, 4\)"):
        x[:2] = ember.ones(3)
    y = ember.zeros(3, 4, requires_grad=True) * 1
    with pytest.raises(ShapeError, match="cannot be broadcast"):
        y[[0, 1]] = ember.ones(3)


def test_index_put_inplace_accumulates():
    x = ember.zeros(4)
    x.index_put_((ember.tensor([1, 1, 3]),), ember.tensor([1.0, 2.0, 3.0]), accumulate=True)
    assert x.tolist() == [0.0, 3.0, 0.0, 3.0]


def test_inplace_index_ops():
    x = ember.zeros(2, 3)
    x.scatter_(1, ember.tensor([[2], [0]]), 1.0)
    x.index_fill_(0, ember.tensor([1]), 7.0)
    x.masked_fill_(x == 0, -1.0)
    assert x.tolist() == [[-1.0, -1.0, 1.0], [7.0, 7.0, 7.0]]
    x.index_add_(1, ember.tensor([0]), ember.ones(2, 1))
    x.scatter_add_(0, ember.tensor([[0, 0, 0]]), ember.ones(1, 3))
    assert x.tolist() == [[1.0, 0.0, 2.0], [8.0, 7.0, 7.0]]


@pytest.mark.filterwarnings("ignore:The reduce argument")
def test_scatter_multiply_matches_torch_and_has_no_gradient():
    x, i, s = np.arange(1.0, 7.0).reshape(2, 3), np.array([[0, 0, 1]]), np.full((1, 3), 3.0)
    mine = ember.from_numpy(x).scatter(0, ember.from_numpy(i), ember.from_numpy(s),
                                       reduce="multiply")
    ref = torch.from_numpy(x).scatter(0, torch.from_numpy(i), torch.from_numpy(s),
                                      reduce="multiply")
    np.testing.assert_allclose(mine.numpy(), ref.numpy())
    xg = ember.from_numpy(x.copy()).requires_grad_()
    out = xg.scatter(0, ember.from_numpy(i), 2.0, reduce="multiply")
    with pytest.raises(GradError, match="multiply"):
        out.sum().backward()


def test_index_saved_tensors_do_not_block_inplace_on_input():
    x = ember.ones(3, requires_grad=True)
    y = x * 1
    z = y[[0, 1]]
    y.add_(1)  # z's backward reads only the index, not y
    z.sum().backward()
    assert x.grad.tolist() == [1.0, 1.0, 0.0]


def test_uint8_index_is_a_mask_as_in_torch():
    x = ember.arange(3)
    assert x[ember.tensor([1, 0, 1], dtype=ember.uint8)].tolist() == [0, 2]


def test_iteration_uses_getitem():
    rows = [r.tolist() for r in ember.arange(4).reshape(2, 2)]
    assert rows == [[0, 1], [2, 3]]


# -- errors --------------------------------------------------------------------------------------
def test_out_of_range_indices_name_dim_and_size():
    x = ember.zeros(3, 4)
    with pytest.raises(IndexOutOfRange, match="index 5 is out of bounds for dimension 0 with "
                                              "size 3"):
        x[5]
    with pytest.raises(IndexOutOfRange, match="index -5 is out of bounds for dimension 1 with "
                                              "size 4"):
        x[0, -5]
    with pytest.raises(IndexOutOfRange, match="index 7 is out of bounds for dimension 1 with "
                                              "size 4"):
        x[:, [0, 7]]
    with pytest.raises(IndexOutOfRange, match="index -4 is out of bounds for dimension 0"):
        x[ember.tensor([-4])]
    with pytest.raises(IndexOutOfRange, match="too many indices"):
        x[0, 0, 0]
    with pytest.raises(IndexOutOfRange, match="single ellipsis"):
        x[..., ...]
    with pytest.raises(IndexOutOfRange, match="0-d tensor cannot be indexed"):
        ember.zeros(())[0]


def test_gather_family_rejects_negative_and_large_indices():
    x = ember.zeros(2, 3)
    with pytest.raises(IndexOutOfRange, match="gather: index -1 is out of bounds for dimension "
                                              "1 with size 3"):
        x.gather(1, ember.tensor([[-1]]))
    with pytest.raises(IndexOutOfRange, match="scatter: index 3 is out of bounds"):
        x.scatter(1, ember.tensor([[3]]), 1.0)
    with pytest.raises(IndexOutOfRange, match="index_select: index -1"):
        x.index_select(1, ember.tensor([-1]))
    with pytest.raises(IndexOutOfRange, match="index_add: index 2 is out of bounds"):
        x.index_add(0, ember.tensor([2]), ember.zeros(1, 3))
    with pytest.raises(IndexOutOfRange, match="take: index 6"):
        x.take(ember.tensor([6]))


def test_index_type_and_shape_errors():
    x = ember.zeros(3, 4)
    with pytest.raises(DTypeError, match="integer or bool"):
        x[ember.tensor([0.0])]
    with pytest.raises(IndexOutOfRange, match=r"shape of the mask \(3,\) at index 0 does not "
                                              r"match the shape of the indexed tensor"):
        x[:, ember.tensor([True, False, True])]
    with pytest.raises(ValueError, match="step must be greater than zero.*flip"):
        x[::-1]
    with pytest.raises(TypeError, match=r"__getitem__: slice indices must be integers.*slice\(1.0"):
        x[1.0:]
    with pytest.raises(TypeError, match=r"__setitem__: slice indices must be integers.*'2'"):
        x[:, ::"2"] = 1.0
    with pytest.raises(ShapeError, match="index tensors"):
        x[[0, 1], [0, 1, 2]]
    with pytest.raises(TypeError, match="cannot index"):
        x["a"]
    with pytest.raises(DTypeError, match="gather: index must be an integer tensor"):
        x.gather(0, ember.zeros(1, 1))
    with pytest.raises(ShapeError, match="same number of dimensions"):
        x.gather(0, ember.tensor([0]))
    with pytest.raises(ShapeError, match="larger than input"):
        x.gather(0, ember.tensor([[0, 0, 0, 0, 0]]))
    with pytest.raises(DTypeError, match="src .float64. must have the dtype of input"):
        x.scatter(0, ember.tensor([[0]]), ember.ones(1, 1, dtype=ember.float64))
    with pytest.raises(ShapeError, match="index must be a vector"):
        x.index_select(0, ember.tensor([[0]]))
    with pytest.raises(ShapeError, match="source of shape"):
        x.index_add(0, ember.tensor([0]), ember.ones(3))
    with pytest.raises(DTypeError, match="boolean masks"):
        x.masked_fill(ember.tensor([1, 0, 1, 0]), 1.0)
    with pytest.raises(ShapeError, match="0-dimensional value"):
        x.masked_fill(x > 0, ember.ones(4))
    with pytest.raises(ValueError, match="reduce must be"):
        x.scatter(0, ember.tensor([[0]]), 1.0, reduce="max")


def test_one_hot_errors():
    with pytest.raises(IndexOutOfRange, match=r"one_hot: class value -1 is out of range for 2 "
                                              r"classes; expected values in \[0, 1\]"):
        ember.one_hot(ember.tensor([1, -1]))
    with pytest.raises(IndexOutOfRange, match="class value 3 is out of range for 3 classes"):
        ember.one_hot(ember.tensor([1, 3]), 3)
    with pytest.raises(DTypeError, match="int64"):
        ember.one_hot(ember.tensor([1, 3], dtype=ember.int32))
    with pytest.raises(ShapeError, match="empty"):
        ember.one_hot(ember.tensor([], dtype=ember.int64))
    for n in (0, -2):  # as torch: an empty input needs num_classes > 0
        with pytest.raises(RuntimeError, match="empty tensor"):
            F.one_hot(torch.tensor([], dtype=torch.int64), n)
        with pytest.raises(ShapeError, match=rf"empty tensor \(num_classes={n}\)"):
            ember.one_hot(ember.tensor([], dtype=ember.int64), n)
    assert tuple(ember.one_hot(ember.tensor([], dtype=ember.int64), 3).shape) == (0, 3)


def test_pad_errors():
    x = ember.zeros(1, 3)
    with pytest.raises(ShapeError, match="divisible by 2"):
        ember.pad(x, (1,))
    with pytest.raises(ShapeError, match="too large"):
        ember.pad(x, (1, 1, 1, 1, 1, 1))
    with pytest.raises(ShapeError, match="reflect padding must be smaller"):
        ember.pad(x, (3, 3), mode="reflect")
    with pytest.raises(ShapeError, match="more than once"):
        ember.pad(x, (4, 0), mode="circular")
    with pytest.raises(ShapeError, match="negative output size"):
        ember.pad(x, (-2, -2))
    with pytest.raises(ValueError, match="unknown padding mode"):
        ember.pad(x, (1, 1), mode="foo")


def test_pad_replicate_gradient_accumulates_at_edges():
    x = ember.tensor([[1.0, 2.0, 3.0]], requires_grad=True)
    ember.pad(x, (2, 1), mode="replicate").sum().backward()
    assert x.grad.tolist() == [[3.0, 1.0, 2.0]]


def test_masked_select_size_is_data_dependent():
    x = ember.arange(6.0).reshape(2, 3)
    assert x.masked_select(x > 2.5).tolist() == [3.0, 4.0, 5.0]
    with pytest.raises(OpError, match="depends on the data"):
        ember.ops.PRIMITIVES["nonzero"].infer(ember.ops.TensorSpec((3,), ember.bool_))
    with pytest.raises(OpError, match=r"nonzero: the output size depends on the data .*"
                                      r"ember.nonzero_static\(input, size=n\)"):
        ember.jit.compile(lambda m: ember.nonzero(m))(x > 2.5)


def test_compiled_one_hot_follows_each_calls_classes_and_checks_them():
    fn = ember.jit.compile(lambda y: ember.one_hot(y, 4) * 2)
    for y in ([0, 3, 1], [2, 2, 0], [1, 0, 3]):
        y = ember.tensor(y)
        assert fn(y).tolist() == (ember.one_hot(y, 4) * 2).tolist()
    for bad in (-1, 4):  # NumPy would wrap -1 to the last class
        with pytest.raises(IndexOutOfRange, match=f"one_hot: class value {bad} is out of range"):
            fn(ember.tensor([0, bad, 1]))


def test_one_hot_without_num_classes_under_jit_or_vmap_asks_for_it():
    fn = ember.jit.compile(lambda y: ember.one_hot(y) * 2)
    with pytest.raises(OpError, match=r"one_hot: the output size depends on the data of "
                                      r"\(3,\) int64.*; the call at .*test_indexing.py:\d+ "
                                      r"\(`fn = .*pass num_classes"):
        fn(ember.tensor([0, 2, 1]))
    with pytest.raises(OpError, match="one_hot: the output size depends on the data"):
        ember.func.vmap(ember.one_hot)(ember.tensor([[0, 1], [2, 3]]))
    # a constant's classes are known while tracing: fine
    const = ember.jit.compile(lambda x: x * ember.one_hot(ember.tensor([0, 2])))
    assert const(ember.ones(2, 3)).tolist() == [[1, 0, 0], [0, 0, 1]]


@pytest.mark.parametrize("op", [
    lambda x, i: x.gather(0, i),
    lambda x, i: x.index_select(0, i),
    lambda x, i: ember.take(x, i),
    lambda x, i: x[i],
])
def test_compiled_index_ops_check_each_calls_indices(op):
    x = ember.arange(4.0)
    fast = ember.jit.compile(op)
    fast(x, ember.tensor([0, 3]))  # traced with valid indices
    np.testing.assert_array_equal(fast(x, ember.tensor([1, 2])).numpy(), [1.0, 2.0])
    with pytest.raises(IndexOutOfRange, match="out of bounds"):
        fast(x, ember.tensor([1, 4]))
    negative = ember.tensor([0, -1])  # take and x[i] count from the end; the others refuse
    try:
        expected = op(x, negative).numpy()
    except IndexOutOfRange:
        with pytest.raises(IndexOutOfRange):
            fast(x, negative)
    else:
        np.testing.assert_array_equal(fast(x, negative).numpy(), expected)


@pytest.mark.parametrize("key", [
    [[0, 1], [1, 0]], [0, slice(1, 3)], [None, 0], [0, [1, 2]], [Ellipsis, 1], [0, 1]])
def test_a_list_of_index_expressions_reads_as_a_tuple_like_torch(key):
    x, tx = ember.arange(12).reshape(3, 4), torch.arange(12).reshape(3, 4)
    legacy = any(not isinstance(k, int) for k in key)
    with warnings.catch_warnings(record=True) as seen:
        warnings.simplefilter("always")
        got = x[key]
        y = ember.zeros(3, 4, dtype=ember.int64)
        y[key] = 7
    assert (len(seen) == 2) == legacy and all("x[tuple(seq)]" in str(w.message) for w in seen)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        ty = torch.zeros(3, 4, dtype=torch.int64)
        ty[key if not legacy else tuple(key)] = 7
        np.testing.assert_array_equal(got.numpy(), tx[key].numpy())
    np.testing.assert_array_equal(y.numpy(), ty.numpy())
