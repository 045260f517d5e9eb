"""ONNX export of writes through an index (``index_put`` as ScatterND: ``x[i] = v``, scatter,
index_add, index_fill, one_hot) and of ``scatter_reduce``, against eager, at the
traced shapes and at others through dynamic axes."""

from __future__ import annotations

import numpy as np
import pytest

import ember
import ember.nn.functional as F
from ember.onnx import ExportError
from tests.export.onnx_helpers import eager, onnx, run_onnx


def check_feeds(fn, feeds, dynamic=None, **kwargs):
    """Exports ``fn`` on the first of ``feeds`` (tuples of tensors) with ``dynamic``
    (``{input index: {axis: name}}``) axes, and compares onnxruntime with eager on each."""
    names = [f"in{i}" for i in range(len(feeds[0]))]
    axes = {names[i]: spec for i, spec in (dynamic or {}).items()}
    proto = ember.onnx.to_model(fn, feeds[0], input_names=names, dynamic_axes=axes, **kwargs)
    onnx.checker.check_model(proto, full_check=True)
    for args in feeds:
        got = run_onnx(proto, *(a.numpy() for a in args))
        want = eager(fn, *args)
        for g, w in zip(got, want, strict=True):
            assert g.shape == w.shape and g.dtype == w.dtype, (g.shape, w.shape)
            np.testing.assert_allclose(g, w, rtol=1e-6, atol=1e-6)
    return proto


def _randn(*shape, seed=0):
    return ember.tensor(np.random.default_rng(seed).standard_normal(shape).astype(np.float32))


def _ints(high, *shape, seed=0):
    return ember.tensor(np.random.default_rng(seed).integers(0, high, shape))


def _set(key_fn, value):
    def fn(a, i):
        a = a.clone()
        a[key_fn(i)] = value
        return a
    return fn


@pytest.mark.parametrize("key_fn", [
    lambda i: i,                                 # a[i] = v
    lambda i: (slice(None), i),                  # a[:, i]
    lambda i: (slice(None), slice(None), i),     # a[:, :, i]
    lambda i: (0, i),                            # a[0, i]: basic, then index
    lambda i: (i, slice(1, None)),               # a[i, 1:]
    lambda i: (slice(None), i, slice(1, 3)),     # a[:, i, 1:3]
    lambda i: (i, slice(None), i),               # two index tensors, not adjacent
    lambda i: (slice(None), slice(1, 3)),        # basic only
    lambda i: (Ellipsis, 1),
])
def test_setitem_keys(key_fn):
    idx = ember.tensor([2, -1, 0])  # (negative: from the end)
    fn = _set(key_fn, 1.5)
    check_feeds(fn, [(_randn(4, 5, 4), idx), (_randn(4, 5, 4, seed=1), ember.tensor([1, 0, -2]))])


def test_setitem_of_tensor_values_broadcast_into_the_region():
    def fn(a, i, v):
        a = a.clone()
        a[:, i] = v
        return a
    check_feeds(fn, [(_randn(3, 5, 2), ember.tensor([4, 1]), _randn(2, 1, seed=2))])


def test_scatter_family_with_a_dynamic_batch():
    fns = [lambda a, i, v: a.scatter(1, i, v), lambda a, i, v: a.scatter_add(1, i, v),
           lambda a, i, v: a.scatter_reduce(1, i, v, "sum"),
           lambda a, i, v: a.scatter_reduce(1, i, v, "mean", include_self=False),
           lambda a, i, v: a.scatter_reduce(1, i, v, "prod")]
    feeds = [(_randn(3, 5), _ints(5, 3, 4), _randn(3, 4, seed=1)),
             (_randn(6, 5, seed=3), _ints(5, 6, 4, seed=4), _randn(6, 4, seed=5))]
    for fn in fns:
        check_feeds(fn, feeds, dynamic={0: {0: "b"}, 1: {0: "b"}, 2: {0: "b"}})


@pytest.mark.parametrize("reduce", ["amax", "amin", "prod"])
@pytest.mark.parametrize("include_self", [True, False])
def test_scatter_reduce_of_ints(reduce, include_self):
    fn = lambda a, i, v: a.scatter_reduce(0, i, v, reduce, include_self=include_self)  # noqa: E731
    feeds = [(_ints(9, 6, 2) - 4, _ints(6, 5, 2, seed=1), _ints(9, 5, 2, seed=2) - 4),
             (_ints(9, 6, 2, seed=3) - 4, _ints(6, 5, 2, seed=4), _ints(9, 5, 2, seed=5) - 4)]
    check_feeds(fn, feeds)


def test_index_add_index_fill_and_one_hot():
    check_feeds(lambda a, i, v: a.index_add(0, i, v),
                [(_randn(4, 3), ember.tensor([0, 2, 0, 3, 3]), _randn(5, 3, seed=1))])
    check_feeds(lambda a, i: a.index_fill(1, i, -7.0),
                [(_randn(2, 5), ember.tensor([0, -1])), (_randn(4, 5), ember.tensor([3]))],
                dynamic={0: {0: "b"}, 1: {0: "n"}})
    check_feeds(lambda i: F.one_hot(i, 6), [(ember.tensor([0, 2, 5]),),
                                            (ember.tensor([5, 1, 1, 0, 4]),)],
                dynamic={0: {0: "n"}})


def test_setitem_with_dynamic_axes():
    fn = _set(lambda i: (slice(None), i, slice(1, None)), 0.0)
    check_feeds(fn, [(_randn(2, 5, 3), ember.tensor([1, 3])),
                     (_randn(4, 5, 6, seed=1), ember.tensor([0, -1, 2]))],
                dynamic={0: {0: "b", 2: "w"}, 1: {0: "n"}})


def test_amax_of_floats_needs_opset_18():
    fn = lambda a, i, v: a.scatter_reduce(0, i, v, "amax")  # noqa: E731
    args = (_randn(3), ember.tensor([0, 0]), _randn(2, seed=1))
    with pytest.raises(ExportError, match="opset 18"):
        ember.onnx.to_model(fn, args, opset_version=17)


@pytest.mark.parametrize("reduce", ["amax", "amin", "prod"])
@pytest.mark.parametrize("include_self", [True, False])
def test_scatter_reduce_of_floats_with_nan_and_infinities(reduce, include_self):
    nan, inf = float("nan"), float("inf")
    fn = lambda a, i, v: a.scatter_reduce(0, i, v, reduce, include_self=include_self)  # noqa: E731
    check_feeds(fn, [(ember.tensor([1.0, nan, 3.0, inf, -2.0]), ember.tensor([0, 0, 2, 3, 3, 1]),
                      ember.tensor([nan, 2.0, -inf, 5.0, nan, 4.0])),
                     (_randn(5), _ints(5, 6, seed=1), _randn(6, seed=2))])
