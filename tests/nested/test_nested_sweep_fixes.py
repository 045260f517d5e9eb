"""Nested-tensor ops PyTorch's jagged layout has and Ember lacked (each raised "not supported"):
reshape/view with -1, unsqueeze/squeeze, sum/mean over several dims, amax/amin/all/any/prod/
argmax, nested @ nested, where/masked_fill/maximum/minimum/%/&/|, rounding, *_like. Values and
gradients against torch.nested (jagged)."""

import numpy as np
import pytest
import torch

import ember
from tests.nested.helpers import assert_close, pair

INNER = (2, 3)

# (name, fn(lib, x)): the same code runs on Ember and on PyTorch, x of shape (3, j, 2, 3)
CASES = [
    ("reshape", lambda lib, x: x.reshape(3, -1, 6)),
    ("reshape_batch_-1", lambda lib, x: x.reshape(-1, -1, 3, 2)),
    ("reshape_shape_tuple", lambda lib, x: x.reshape((3, -1, 6, 1))),
    ("reshape_function", lambda lib, x: lib.reshape(x, (3, -1, 6))),
    ("view", lambda lib, x: x.view(3, -1, 6)),
    ("unsqueeze_last", lambda lib, x: x.unsqueeze(-1)),
    ("unsqueeze_before_ragged", lambda lib, x: lib.unsqueeze(x, 1)),
    ("squeeze", lambda lib, x: x.unsqueeze(3).squeeze(3)),
    ("squeeze_not_one", lambda lib, x: x.squeeze(2)),
    ("sum_inner_dims", lambda lib, x: x.sum((2, 3))),
    ("sum_inner_dims_keepdim", lambda lib, x: x.sum((2, -1), keepdim=True)),
    ("sum_batch_and_ragged", lambda lib, x: x.sum((0, 1))),
    ("mean_inner_dims", lambda lib, x: x.mean((2, 3))),
    ("mean_batch_and_ragged", lambda lib, x: lib.mean(x, (0, 1))),
    ("mean_ragged_tuple", lambda lib, x: x.mean((1,))),
    ("amax_last", lambda lib, x: x.amax(-1)),
    ("amax_ragged", lambda lib, x: lib.amax(x, 1)),
    ("amin_inner_dims", lambda lib, x: x.amin((2, 3))),
    ("amin_ragged_keepdim", lambda lib, x: x.amin(1, keepdim=True)),
    ("prod_last", lambda lib, x: x.prod(-1)),
    ("sum_no_dims", lambda lib, x: x.sum(())),  # () means every dim, as None
    ("sum_empty_list_keepdim", lambda lib, x: x.sum([], keepdim=True)),
    ("sum_all_keepdim", lambda lib, x: x.sum(None, keepdim=True)),
    ("mean_no_dims", lambda lib, x: lib.mean(x, ())),
    ("mean_no_dims_keepdim", lambda lib, x: x.mean((), keepdim=True)),
    ("amax_no_dims_keepdim", lambda lib, x: x.amax((), keepdim=True)),
    ("prod_ragged", lambda lib, x: x.prod(1)),
    ("stack", lambda lib, x: lib.stack([x, x * 2], -1)),
    ("stack_inner", lambda lib, x: lib.stack([x, x * 2], 2)),
    ("matmul_nested", lambda lib, x: lib.matmul(x, x.transpose(-1, -2))),
    ("matmul_nested_op", lambda lib, x: x.transpose(-1, -2) @ x),
    ("where", lambda lib, x: lib.where(x > 0, x, x * 2)),
    ("where_scalar", lambda lib, x: lib.where(x > 0, x, 0.0)),
    ("masked_fill", lambda lib, x: x.masked_fill(x > 0, 0.5)),
    ("maximum", lambda lib, x: x.maximum(x * -1)),
    ("minimum", lambda lib, x: x.minimum(x * -1)),
    ("maximum_function", lambda lib, x: lib.maximum(x, lib.zeros(3))),
    ("minimum_function", lambda lib, x: lib.minimum(x, x * -1)),
    ("max_all", lambda lib, x: x.max()),
    ("clamp", lambda lib, x: lib.clamp(x, -0.5, 0.5)),
    ("clamp_min", lambda lib, x: x.clamp(min=0.0)),
    ("remainder", lambda lib, x: x % 0.7),
    ("floor", lambda lib, x: x.floor() + x.ceil() + x.trunc() + x.round()),
    ("neg", lambda lib, x: x.neg()),
]


@pytest.mark.parametrize("name,fn", CASES, ids=[c[0] for c in CASES])
def test_matches_torch(name, fn):
    nt, tnt = pair(INNER)
    got, want = fn(ember, nt), fn(torch, tnt)
    assert type(got).__name__ == ("NestedTensor" if want.is_nested else "Tensor")
    if want.is_nested:
        assert got._ragged_idx == want._ragged_idx
    else:
        assert tuple(got.shape) == tuple(want.shape)
    assert_close(got, want)


@pytest.mark.parametrize("name,fn", [c for c in CASES if c[0] in (
    "reshape", "unsqueeze_last", "amax_last", "amax_ragged", "matmul_nested", "where")],
    ids=lambda c: c if isinstance(c, str) else "")
def test_gradients_match_torch(name, fn):
    nt, tnt = pair(INNER, requires_grad=True)
    got, want = fn(ember, nt), fn(torch, tnt)
    values = (lambda v: v.values()) if want.is_nested else (lambda v: v)
    weight = np.random.default_rng(4).standard_normal(tuple(values(want).shape))
    (values(got) * ember.tensor(weight)).sum().backward()
    (values(want) * torch.tensor(weight)).sum().backward()
    assert_close(nt.grad, tnt.grad)


@pytest.mark.parametrize("name", ["sum_inner_dims", "sum_batch_and_ragged",
                                  "mean_batch_and_ragged", "prod_last", "maximum"])
def test_gradcheck(name):
    # PyTorch's jagged backward fails for these (no _nested_sum_backward, masked_fill_)
    fn = dict(CASES)[name]
    nt, _ = pair(INNER)

    def f(values):
        out = fn(ember, ember.nested.nested_tensor_from_jagged(values, nt.offsets()))
        return out.values() if isinstance(out, ember.nested.NestedTensor) else out
    assert ember.autograd.gradcheck(f, (nt.values().detach().requires_grad_(),))


def test_prod_over_several_dims_takes_them_all():
    # PyTorch's prod takes one dim; Ember's takes several, and used to reduce only the first
    nt, tnt = pair(INNER)
    assert_close(nt.prod((2, 3)), tnt.prod(3).prod(2))
    assert_close(nt.prod((0, 1, 2), keepdim=True), tnt.prod(1).prod(0).prod(0)[None, None, None])


@pytest.mark.parametrize("op", ["all", "any"])
def test_logical_reductions(op):
    nt, tnt = pair(INNER)
    for dim in (-1, 1):
        assert_close(getattr(nt > 0, op)(dim), getattr(tnt > 0, op)(dim))
        assert_close(getattr(ember, op)(nt > 0, dim), getattr(torch, op)(tnt > 0, dim))


@pytest.mark.parametrize("op", ["max", "min"])
@pytest.mark.parametrize("dim", [-1, 1])
def test_max_min_along_dim(op, dim):
    nt, tnt = pair(INNER)
    for x, tx in ((nt, tnt), (nt > 0, tnt > 0)):
        got, want = getattr(x, op)(dim), getattr(tx, op)(dim)
        assert_close(got.values, want.values)
        assert_close(got.indices, want.indices)


def test_argmax_along_inner_and_ragged_dims():
    nt, tnt = pair(INNER)
    assert_close(nt.argmax(-1), tnt.argmax(-1))
    assert_close(ember.argmax(nt, 1), torch.argmax(tnt, 1))


@pytest.mark.parametrize("name", ["zeros_like", "ones_like", "empty_like"])
def test_like(name):
    nt, tnt = pair(INNER)
    got, want = getattr(ember, name)(nt), getattr(torch, name)(tnt)
    assert got.shape[1] is nt.shape[1] and got.dtype == nt.dtype
    if name != "empty_like":
        assert_close(got, want)
    assert_close(ember.full_like(nt, 2.5), torch.full_like(tnt, 2.5))


def test_bitwise_operators():
    nt, tnt = pair(INNER)
    a, ta = (nt * 4).to(ember.int64), (tnt * 4).to(torch.int64)
    assert_close((a & 3) | (a ^ 1), (ta & 3) | (ta ^ 1))


@pytest.mark.parametrize("call,match", [
    (lambda nt: nt.reshape(3, 4, 6), "reshapes only the dims right of its ragged one"),
    (lambda nt: nt.transpose(1, 2).reshape(3, 2, -1, 3), "reshapes only"),
    (lambda nt: nt.unsqueeze(0), "batch dimension"),
    (lambda nt: nt.squeeze(1), "ragged dimension"),
    (lambda nt: nt.sum((1, 2)), "not supported, as in PyTorch"),
    (lambda nt: nt.amax(0), "batch dimension"),
    (lambda nt: ember.stack([nt, nt]), "batch dimension"),
])
def test_errors(call, match):  # (PyTorch raises for these too)
    nt, _ = pair(INNER)
    with pytest.raises(RuntimeError, match=match):
        call(nt)


def test_embedding_of_nested_ids():
    ids = [np.array([1, 4, 2]), np.array([3]), np.array([0, 4])]
    weight = np.random.default_rng(5).standard_normal((5, 3))
    nt = ember.nested.nested_tensor([ember.tensor(i) for i in ids])
    tnt = torch.nested.nested_tensor([torch.tensor(i) for i in ids], layout=torch.jagged)
    w = ember.tensor(weight, requires_grad=True)
    tw = torch.tensor(weight, requires_grad=True)
    got = ember.nn.functional.embedding(nt, w)
    want = torch.nn.functional.embedding(tnt, tw)
    assert_close(got, want)
    got.values().sum().backward()
    want.values().sum().backward()
    assert_close(w.grad, tw.grad)


@pytest.mark.parametrize("name", ["float", "double", "half", "bfloat16", "bool", "int", "long"])
def test_dtype_conversions(name):
    nt, tnt = pair(INNER)
    got, want = getattr(nt * 3, name)(), getattr(tnt * 3, name)()
    assert str(got.dtype).split(".")[-1] == str(want.dtype).split(".")[-1]
    assert_close(got.float(), want.float())
    assert nt.type_as(got).dtype == got.dtype


@pytest.mark.parametrize("call", [
    lambda lib, x: x.clip(-0.5, 0.5), lambda lib, x: x.clamp_(min=0.0),
    lambda lib, x: x.fill_(1.5), lambda lib, x: x.zero_(), lambda lib, x: x.copy_(x * 2),
])
def test_in_place_and_clip(call):
    nt, tnt = pair(INNER)
    got, want = call(ember, nt), call(torch, tnt)
    assert_close(got, want)
    assert_close(nt, tnt)


def test_masked_fill_in_place():  # (torch 2.13's jagged layout has no masked_fill_)
    nt, tnt = pair(INNER)
    nt.masked_fill_(nt > 0, 0.25)
    assert_close(nt, tnt.masked_fill(tnt > 0, 0.25))


@pytest.mark.parametrize("dim", [-1, 2])
def test_softmin(dim):
    nt, tnt = pair(INNER)
    assert_close(ember.nn.functional.softmin(nt, dim), torch.nn.functional.softmin(tnt, dim))


def test_softmin_along_ragged_dim_is_per_sequence():  # (torch 2.13 refuses the ragged dim)
    nt, _ = pair(INNER)
    got = ember.nn.functional.softmin(nt, 1).unbind()
    for g, seq in zip(got, nt.unbind()):
        np.testing.assert_allclose(g.numpy(), ember.nn.functional.softmin(seq, 0).numpy())


def test_lerp():
    nt, tnt = pair(INNER)
    assert_close(nt.lerp(nt * 2, 0.3), tnt.lerp(tnt * 2, 0.3))


@pytest.mark.parametrize("op", ["sum", "mean", "prod", "amax", "amin", "all", "any"])
def test_reductions_take_a_numpy_integer_dim(op):
    # a NumPy integer is an int dim, as in a dense tensor (``dim == ()`` broke on one)
    nt, tnt = pair(INNER)
    if op in ("all", "any"):
        nt, tnt = nt > 0, tnt > 0
    for dim in (np.int64(-1), np.int32(1)):
        assert_close(getattr(nt, op)(dim), getattr(tnt, op)(int(dim)))
    assert_close(getattr(nt, op)((np.int64(2), np.int64(3))),
                 getattr(getattr(tnt, op)(3), op)(2))


def test_reduction_over_a_repeated_dim_is_an_error():  # as a dense tensor's
    nt, _ = pair(INNER)
    with pytest.raises(ember.errors.ShapeError, match="sum: a dim appears more than once"):
        nt.sum((2, -2))


def test_argmax_argmin_of_all_values_as_torch():
    nt, tnt = pair()
    for op in ("argmax", "argmin"):
        assert getattr(nt, op)().item() == getattr(tnt, op)().item()
        assert getattr(ember, op)(nt).item() == getattr(torch, op)(tnt).item()
        got, want = getattr(nt, op)(keepdim=True), getattr(tnt, op)(keepdim=True)
        assert tuple(got.shape) == tuple(want.shape) == (1, 1, 1)
        assert_close(got, want)
