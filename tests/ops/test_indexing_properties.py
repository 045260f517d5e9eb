"""Property tests: random shapes and index expressions (ints, slices with steps, None,
Ellipsis, integer arrays, 0-d index tensors, boolean masks) give PyTorch's shapes, values and
gradients; basic indexing gives views; broadcasting agrees with ``torch.broadcast_shapes``."""

import math

import numpy as np
import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

import ember
from ember.errors import ShapeError

FAST = settings(max_examples=60, deadline=None)

shapes = st.lists(st.integers(0, 4), min_size=0, max_size=4).map(tuple)


@st.composite
def slices(draw, n):
    bound = st.none() | st.integers(-n - 2, n + 2)
    return ("slice", (draw(bound), draw(bound), draw(st.none() | st.integers(1, 3))))


@st.composite
def keys(draw):
    """``(shape, items)``: a shape and a framework-neutral description of an index."""
    shape = draw(shapes)
    ndim = len(shape)
    ellipsis = draw(st.booleans())
    front = draw(st.integers(0, ndim))
    back = draw(st.integers(0, ndim - front)) if ellipsis else 0
    adv = draw(st.sampled_from(["arrays", "masks"]))
    adv_shape = tuple(draw(st.lists(st.integers(0, 3), max_size=2)))
    consumed = list(range(front)) + list(range(ndim - back, ndim))
    items = []
    i = 0
    while i < len(consumed):
        d = consumed[i]
        n = shape[d]
        kinds = ["slice"] + (["int", "tensor0d"] if n else [])
        if adv == "arrays" and (n or 0 in adv_shape):
            kinds.append("array")
        if adv == "masks":
            kinds.append("mask")
        kind = draw(st.sampled_from(kinds))
        if kind == "slice":
            items.append(draw(slices(n)))
        elif kind in ("int", "tensor0d"):
            items.append((kind, draw(st.integers(-n, n - 1))))
        elif kind == "array":
            values = draw(st.lists(st.integers(-n, n - 1) if n else st.nothing(),
                                   min_size=math.prod(adv_shape), max_size=math.prod(adv_shape)))
            items.append(("array", np.array(values, dtype=np.int64).reshape(adv_shape)))
        else:  # a mask over this dim, and the next one when it is consumed too
            k = 2 if i + 1 < len(consumed) and consumed[i + 1] == d + 1 and \
                i + 1 != front and draw(st.booleans()) else 1
            mask_shape = shape[d:d + k]
            bits = draw(st.lists(st.booleans(), min_size=math.prod(mask_shape),
                                 max_size=math.prod(mask_shape)))
            items.append(("mask", np.array(bits, dtype=bool).reshape(mask_shape)))
            i += k - 1
        i += 1
    if ellipsis:  # after the items of the first ``front`` dims (a mask never spans the gap)
        at = next((j for j in range(len(items) + 1)
                   if sum(_dims(item) for item in items[:j]) >= front), len(items))
        items.insert(at, ("ellipsis",))
    for _ in range(draw(st.integers(0, 2))):  # None (or a Python bool) anywhere
        extra = draw(st.sampled_from([("none",), ("none",), ("bool", True), ("bool", False)]))
        items.insert(draw(st.integers(0, len(items))), extra)
    masks = [j for j, item in enumerate(items) if item[0] == "mask"]
    for j in masks[1:][::-1]:  # two masks' hit counts would rarely broadcast
        items[j:j + 1] = [("slice", (None, None, None))] * items[j][1].ndim
    if any(item[0] in ("array", "mask") for item in items):  # [] would not broadcast
        items = [("bool", True) if item[0] == "bool" else item for item in items]
    return shape, items


def _dims(item):
    return item[1].ndim if item[0] == "mask" else item[0] in ("slice", "int", "tensor0d",
                                                              "array")


def build(m, items):
    out = []
    for item in items:
        kind = item[0]
        if kind == "slice":
            out.append(slice(*item[1]))
        elif kind == "int":
            out.append(item[1])
        elif kind == "tensor0d":
            out.append(m.tensor(item[1]))
        elif kind == "array":
            out.append(m.tensor(item[1].tolist(), dtype=m.int64) if item[1].ndim
                       else item[1].tolist())
        elif kind == "mask":
            out.append(m.tensor(item[1]))
        elif kind == "ellipsis":
            out.append(Ellipsis)
        elif kind == "none":
            out.append(None)
        else:
            out.append(item[1])
    return tuple(out)


def data(shape):
    return np.arange(math.prod(shape), dtype=np.float64).reshape(shape)


@FAST
@given(keys())
def test_getitem_matches_torch(case):
    shape, items = case
    ref = torch.from_numpy(data(shape))[build(torch, items)]
    mine = ember.from_numpy(data(shape))[build(ember, items)]
    assert tuple(mine.shape) == tuple(ref.shape), items
    np.testing.assert_array_equal(mine.numpy(), ref.numpy())


@FAST
@given(keys())
def test_getitem_gradient_matches_torch(case):
    shape, items = case
    tx = torch.from_numpy(data(shape)).requires_grad_()
    ty = tx[build(torch, items)]
    weights = np.arange(1.0, ty.numel() + 1.0).reshape(tuple(ty.shape))
    (ty * torch.from_numpy(weights)).sum().backward()
    x = ember.from_numpy(data(shape)).requires_grad_()
    (x[build(ember, items)] * ember.from_numpy(weights)).sum().backward()
    np.testing.assert_array_equal(x.grad.numpy(), tx.grad.numpy())


@FAST
@given(keys())
def test_setitem_matches_torch(case):
    shape, items = case
    ref = torch.from_numpy(data(shape))
    ref[build(torch, items)] = -1.0
    mine = ember.from_numpy(data(shape))
    mine[build(ember, items)] = -1.0
    np.testing.assert_array_equal(mine.numpy(), ref.numpy())
    if not any(item[0] == "array" for item in items):  # no repeated targets: values too
        target = tuple(ref[build(torch, items)].shape)
        values = np.asarray(-np.arange(1.0, math.prod(target) + 1.0).reshape(target))
        ref[build(torch, items)] = torch.from_numpy(values)
        mine[build(ember, items)] = ember.from_numpy(values)
        np.testing.assert_array_equal(mine.numpy(), ref.numpy())


@FAST
@given(keys())
def test_basic_indexing_is_a_view(case):
    shape, items = case
    if any(item[0] in ("array", "mask", "bool") for item in items):
        return
    x = ember.from_numpy(data(shape))
    y = x[build(ember, items)]
    if y.numel():
        assert np.shares_memory(x.numpy(), y.numpy())
    assert y._vc is x._vc


@st.composite
def gathers(draw):
    shape = tuple(draw(st.lists(st.integers(1, 4), min_size=1, max_size=3)))
    dim = draw(st.integers(-len(shape), len(shape) - 1))
    index_shape = tuple(draw(st.integers(0, 5)) if d == dim % len(shape) else
                        draw(st.integers(0, s)) for d, s in enumerate(shape))
    n = shape[dim]
    values = draw(st.lists(st.integers(0, n - 1), min_size=math.prod(index_shape),
                           max_size=math.prod(index_shape)))
    return shape, dim, np.array(values, dtype=np.int64).reshape(index_shape)


@FAST
@given(gathers())
def test_gather_and_scatter_add_match_torch(case):
    shape, dim, index = case
    tx = torch.from_numpy(data(shape)).requires_grad_()
    x = ember.from_numpy(data(shape)).requires_grad_()
    ref = tx.gather(dim, torch.from_numpy(index))
    mine = x.gather(dim, ember.from_numpy(index))
    np.testing.assert_array_equal(mine.detach().numpy(), ref.detach().numpy())
    weights = np.arange(1.0, index.size + 1.0).reshape(index.shape)
    (ref * torch.from_numpy(weights)).sum().backward()
    (mine * ember.from_numpy(weights)).sum().backward()
    np.testing.assert_array_equal(x.grad.numpy(), tx.grad.numpy())
    src = -np.arange(1.0, index.size + 1.0).reshape(index.shape)
    added = ember.from_numpy(data(shape)).scatter_add(dim, ember.from_numpy(index),
                                                      ember.from_numpy(src))
    expected = torch.from_numpy(data(shape)).scatter_add(dim, torch.from_numpy(index),
                                                         torch.from_numpy(src))
    np.testing.assert_array_equal(added.numpy(), expected.numpy())


@st.composite
def broadcastable(draw):
    """Shapes that mostly broadcast (sizes of a common shape, some set to 1, leading dims
    dropped), sometimes not."""
    base = draw(st.lists(st.integers(0, 4), max_size=4))
    out = []
    for _ in range(draw(st.integers(1, 4))):
        keep = draw(st.integers(0, len(base)))
        shape = [1 if draw(st.booleans()) else s for s in base[len(base) - keep:]]
        if draw(st.integers(0, 9)) == 0 and shape:
            shape[draw(st.integers(0, len(shape) - 1))] = draw(st.integers(0, 4))
        out.append(tuple(shape))
    return out


@settings(max_examples=150, deadline=None)
@given(broadcastable())
def test_broadcast_shapes_matches_torch(shape_list):
    try:
        ref = tuple(torch.broadcast_shapes(*shape_list))
    except RuntimeError:
        with pytest.raises(ShapeError, match="do not broadcast"):
            ember.broadcast_shapes(*shape_list)
        return
    assert ember.broadcast_shapes(*shape_list) == ref
    tensors = [ember.zeros(s) for s in shape_list]
    assert all(t.shape == ref for t in ember.broadcast_tensors(*tensors))


def test_broadcast_shapes_takes_integer_sizes_only():
    np = __import__("numpy")
    assert ember.broadcast_shapes((2, 1), (np.int64(3),), (ember.tensor(3),)) == (2, 3)
    assert ember.broadcast_shapes(ember.tensor(3), (2, 1)) == (2, 3)  # (a 0-d tensor: a size)
    assert ember.broadcast_shapes(ember.tensor([2, 1]), np.array([1, 3])) == (2, 3)  # (sizes)
    for size in (3.0, "3"):  # (a tensor of 3 was kept in the Size as a tensor)
        with pytest.raises(TypeError, match="broadcast_shapes: a size must be an int"):
            ember.broadcast_shapes((2, 1), (size,))
    with pytest.raises(ember.errors.ShapeError, match="^broadcast_shapes: shapes"):
        ember.broadcast_shapes((2,), (3,))
