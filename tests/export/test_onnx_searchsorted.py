"""ONNX export of ``searchsorted`` (and ``bucketize``, EmbeddingBag with offsets): eager's
binary search unrolled, against eager in onnxruntime, NaN and ties included."""

from __future__ import annotations

import numpy as np
import pytest

import ember
import ember.nn as nn
from ember.onnx import ExportError
from tests.export.test_onnx_scatter import check_feeds

nan = float("nan")


@pytest.mark.parametrize("right", [False, True])
@pytest.mark.parametrize("n", [1, 4, 7, 8])
def test_one_row_of_boundaries_with_ties_and_nan(right, n):
    rng = np.random.default_rng(n)
    seq = np.sort(rng.integers(-3, 4, n).astype(np.float32))
    seq[-1] = nan if n > 2 else seq[-1]  # (sort puts NaN last)
    vals = np.concatenate([np.arange(-4, 5, 0.5), [nan, float("inf")]]).astype(np.float32)
    fn = lambda s, v: ember.searchsorted(s, v, right=right)  # noqa: E731
    check_feeds(fn, [(ember.tensor(seq), ember.tensor(vals)),
                     (ember.tensor(seq), ember.tensor(vals[::-1][:7].copy()))],
                dynamic={1: {0: "m"}})


def test_rows_of_boundaries_a_sorter_and_int32():
    seq = ember.tensor(np.sort(np.random.default_rng(0).integers(0, 9, (3, 5)), axis=1))
    vals = ember.tensor(np.random.default_rng(1).integers(-1, 10, (3, 4)))
    check_feeds(lambda s, v: ember.searchsorted(s, v, out_int32=True), [(seq, vals)])
    check_feeds(lambda s, v: ember.searchsorted(s, v, side="right"),
                [(seq, vals), (seq[:1].expand(5, 5), vals[:1].expand(5, 4).clone())],
                dynamic={0: {0: "b"}, 1: {0: "b"}})
    unsorted = ember.tensor([5.0, 1.0, 3.0, 2.0])
    check_feeds(lambda s, v: ember.searchsorted(s, v, sorter=s.argsort()),
                [(unsorted, ember.tensor([0.0, 2.0, 2.5, 6.0]))])
    check_feeds(lambda v: ember.bucketize(v, ember.tensor([1, 3, 5, 7])),
                [(ember.tensor([[1, 5], [3, 9]]),)])


def test_embedding_bag_with_offsets():
    bag = nn.EmbeddingBag(10, 3, mode="sum").eval()
    check_feeds(lambda i, o: bag(i, o), [(ember.tensor([1, 2, 4, 5, 4, 3, 2, 9]),
                                          ember.tensor([0, 3, 3, 6]))])


def test_boundaries_of_a_dynamic_length():
    # (refused before: the search took the traced length's steps; now 31, from the shape)
    rng = np.random.default_rng(0)
    feeds = []
    for n in (3, 1, 2, 17, 1000, 0):  # (0: a Gather out of bounds in onnxruntime; eager 0s)
        seq = np.sort(rng.integers(-50, 50, n).astype(np.float32))
        feeds.append((ember.tensor(seq), ember.tensor(rng.uniform(-60, 60, 40)
                                                       .astype(np.float32))))
    check_feeds(lambda s, v: ember.searchsorted(s, v, right=True), feeds,
                dynamic={0: {0: "n"}, 1: {0: "m"}})
    check_feeds(lambda s, v: ember.searchsorted(s, v, sorter=s.argsort()),
                [(ember.tensor([5.0, 1.0, 3.0]), ember.tensor([0.0, 2.0, 6.0])),
                 (ember.tensor(np.zeros(0, np.float32)), ember.tensor([0.0, 2.0, 6.0]))],
                dynamic={0: {0: "n"}})


@pytest.mark.parametrize("mode, weighted", [("sum", False), ("sum", True), ("mean", False)])
def test_embedding_bag_with_a_dynamic_number_of_bags(mode, weighted):
    ember.manual_seed(0)
    bag = nn.EmbeddingBag(10, 3, mode=mode).eval()
    fn = (lambda i, o, w: bag(i, o, per_sample_weights=w)) if weighted else \
        (lambda i, o: bag(i, o))
    feeds = [(ember.tensor(i), ember.tensor(np.array(o, np.int64))) for i, o in [
        ([1, 2, 4, 5, 4, 3, 2, 9], [0, 2, 5]), ([3, 3, 0, 7, 1], [0, 0, 4]),
        ([1, 2, 3, 4, 5, 6, 7, 8, 9, 0, 1], [0, 1, 2, 3, 3, 10]),
        ([1, 2, 3], [])]]  # (no bags: failed in onnxruntime, eager's (0, 3))
    if weighted:
        feeds = [(i, o, ember.rand(len(i))) for i, o in feeds]
    dynamic = {0: {0: "n"}, 1: {0: "bags"}, 2: {0: "n"}}
    check_feeds(fn, feeds, dynamic={k: v for k, v in dynamic.items() if k < len(feeds[0])})


@pytest.mark.parametrize("mode, last", [("sum", True), ("max", False)])
def test_embedding_bag_forms_a_dynamic_number_of_bags_cannot_follow_are_refused(mode, last):
    bag = nn.EmbeddingBag(10, 3, mode=mode, include_last_offset=last).eval()
    offsets = ember.tensor([0, 2, 5, 8] if last else [0, 2, 5])
    with pytest.raises(ExportError, match="dynamic"):
        ember.onnx.to_model(lambda i, o: bag(i, o), (ember.arange(8), offsets),
                            input_names=["i", "o"], dynamic_axes={"o": {0: "bags"}})


@pytest.mark.parametrize("right", [False, True])
def test_bfloat16_boundaries_and_values(right):
    # (onnxruntime has no bfloat16 Greater: they are compared as float32, exactly)
    fn = lambda b, v: ember.searchsorted(b.bfloat16(), v.bfloat16(), right=right)  # noqa: E731
    b = ember.tensor([1.0, 3.0, 3.0, 5.0, 256.0, 257.0, float("nan")])
    v = ember.tensor([[0.0, 3.0, 4.0, 258.0], [float("nan"), 257.0, 5.0, 1.0]])
    check_feeds(fn, [(b, v)])
