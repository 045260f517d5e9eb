"""lp_pool, max_unpool, the *_with_indices names, channel_shuffle, pdist and embedding_bag
against PyTorch and finite differences."""

import doctest

import numpy as np
import pytest
import torch
import torch.nn.functional as TF

import ember
import ember.nn.functional as F
from ember.errors import IndexOutOfRange
from ember.ops import lp_pool, unpool
from tests.ops.optable import Const, OpCase, S, arg, op_tests


def _unpool(fn_pool, fn_unpool):
    """Pool with indices, then unpool: the gradient reaches the input through both."""
    def run(x, kernel_size, stride=None, padding=0, output_size=None):
        values, indices = fn_pool(x, kernel_size, stride, padding, return_indices=True)
        return fn_unpool(values, indices, kernel_size, stride, padding, output_size)
    return run


def _positive(*shape, **kw):
    return arg(*shape, low=0.5, high=2.0, **kw)


def _bag(fn):
    """(weight, indices, offsets, per_sample_weights) in the order both libraries take."""
    def run(weight, input, offsets=None, per_sample_weights=None, **kw):
        return fn(input, weight, offsets, per_sample_weights=per_sample_weights, **kw)
    return run


IDX = np.array([1, 2, 4, 5, 4, 3, 2, 0, 9], np.int64)
OFFSETS = np.array([0, 2, 2, 6], np.int64)  # bag 1 is empty

CASES = [
    OpCase("lp_pool2d", F.lp_pool2d, TF.lp_pool2d, [
        S(_positive(2, 3, 5, 5), norm_type=2, kernel_size=2),
        S(_positive(2, 3, 6, 5), norm_type=3, kernel_size=(3, 2), stride=(2, 1)),
        S(_positive(2, 3, 5, 5), norm_type=1.5, kernel_size=2, ceil_mode=True),
        S(arg(2, 3, 5, 5), norm_type=1, kernel_size=2, stride=1),  # signed sums
        S(_positive(3, 5, 5, noncontig=True), norm_type=2, kernel_size=3, stride=2),
        S(arg(2, 3, 5, 4), norm_type=float("inf"), kernel_size=2),  # the largest |x|
    ]),
    OpCase("lp_pool1d", F.lp_pool1d, TF.lp_pool1d, [
        S(_positive(2, 3, 7), norm_type=2, kernel_size=3, stride=2, ceil_mode=True),
        S(_positive(3, 7), norm_type=4, kernel_size=2),
        S(arg(2, 3, 7), norm_type=float("inf"), kernel_size=3, stride=2, ceil_mode=True),
        S(arg(3, 6), norm_type=-float("inf"), kernel_size=2),  # the smallest |x|
    ]),
    OpCase("lp_pool3d", F.lp_pool3d, TF.lp_pool3d, [
        S(_positive(1, 2, 4, 5, 4), norm_type=2, kernel_size=2, stride=(1, 2, 2)),
        S(_positive(2, 4, 4, 5), norm_type=3, kernel_size=(2, 3, 2), ceil_mode=True),
    ]),
    OpCase("max_unpool2d", _unpool(F.max_pool2d, F.max_unpool2d),
           _unpool(TF.max_pool2d, TF.max_unpool2d), [
               S(arg(2, 3, 4, 4), kernel_size=2),
               S(arg(2, 3, 5, 5), kernel_size=2, output_size=(5, 5)),
               S(arg(1, 2, 5, 5), kernel_size=2, output_size=(1, 2, 5, 5)),
               S(arg(2, 3, 5, 5), kernel_size=2, stride=2, padding=1, output_size=(5, 5)),
               S(arg(3, 6, 4, noncontig=True), kernel_size=(2, 1), stride=(2, 1)),  # unbatched
           ]),
    OpCase("max_unpool1d", _unpool(F.max_pool1d, F.max_unpool1d),
           _unpool(TF.max_pool1d, TF.max_unpool1d), [
               S(arg(2, 3, 8), kernel_size=2),
               S(arg(3, 7), kernel_size=2, stride=2, padding=1, output_size=(7,)),
           ]),
    OpCase("max_unpool3d", _unpool(F.max_pool3d, F.max_unpool3d),
           _unpool(TF.max_pool3d, TF.max_unpool3d), [
               S(arg(1, 2, 4, 4, 5), kernel_size=2, output_size=(4, 4, 5)),
           ]),
    OpCase("max_pool2d_with_indices", F.max_pool2d_with_indices, TF.max_pool2d_with_indices,
           [S(arg(2, 3, 5, 5), kernel_size=3, stride=2, padding=1)]),
    OpCase("max_pool1d_with_indices", F.max_pool1d_with_indices, TF.max_pool1d_with_indices,
           [S(arg(2, 3, 7), kernel_size=2)]),
    OpCase("max_pool3d_with_indices", F.max_pool3d_with_indices, TF.max_pool3d_with_indices,
           [S(arg(1, 2, 4, 4, 4), kernel_size=2)]),
    OpCase("adaptive_max_pool2d_with_indices", F.adaptive_max_pool2d_with_indices,
           TF.adaptive_max_pool2d_with_indices, [S(arg(2, 3, 5, 7), output_size=(2, 3))]),
    OpCase("adaptive_max_pool1d_with_indices", F.adaptive_max_pool1d_with_indices,
           TF.adaptive_max_pool1d_with_indices, [S(arg(2, 3, 7), output_size=3)]),
    OpCase("adaptive_max_pool3d_with_indices", F.adaptive_max_pool3d_with_indices,
           TF.adaptive_max_pool3d_with_indices, [S(arg(1, 2, 3, 4, 5), output_size=2)]),
    OpCase("channel_shuffle", F.channel_shuffle, TF.channel_shuffle, [
        S(arg(2, 6, 3, 2), groups=3),
        S(arg(2, 6, 5), groups=2),
        S(arg(1, 4, 2, 2, 2, noncontig=True), groups=4),
    ]),
    OpCase("pdist", F.pdist, torch.pdist, [
        S(arg(5, 3), p=p) for p in (0.5, 1, 1.5, 2, 3, float("inf"))
    ] + [S(arg(1, 3)), S(arg(4, 0), p=2)]),
    OpCase("embedding_bag", _bag(F.embedding_bag), _bag(TF.embedding_bag), [
        S(arg(10, 3), Const(IDX), Const(OFFSETS), mode=mode) for mode in ("sum", "mean", "max")
    ] + [
        S(arg(10, 3), Const(IDX), Const(OFFSETS), arg(9), mode="sum"),
        S(arg(10, 3), Const(IDX[:8].reshape(2, 4)), mode="mean", padding_idx=4),
        S(arg(10, 3), Const(IDX[:8].reshape(4, 2)), mode="max", padding_idx=2),
        S(arg(10, 3), Const(IDX), Const(np.append(OFFSETS, 9)), mode="sum",
          include_last_offset=True),
        S(arg(10, 3), Const(IDX), Const(OFFSETS), arg(9), mode="sum", padding_idx=4),
    ]),
]

(test_forward, test_backward, test_gradcheck, test_gradgradcheck,
 test_jvp) = op_tests(CASES)


@pytest.mark.parametrize("fn", [torch.pdist, torch.cdist])
def test_pdist_and_cdist_inf_send_the_whole_gradient_to_every_tie_like_torch(fn):
    x = np.array([[0.0, 0.0, 1.0], [1.0, -1.0, 1.0], [1.0, 1.0, 1.0], [1.0, 1.0, 1.0]])
    mine, ref = ember.tensor(x, requires_grad=True), torch.tensor(x, requires_grad=True)
    call = (lambda lib, t: lib.pdist(t, float("inf"))) if fn is torch.pdist else \
        (lambda lib, t: lib.cdist(t, t[:2] * 2, float("inf")))
    call(F if fn is torch.pdist else ember, mine).sum().backward()
    call(torch, ref).sum().backward()
    np.testing.assert_array_equal(mine.grad.numpy(), ref.grad.numpy())


def test_max_unpool_of_overlapping_windows_has_torch_gradient():
    # a repeated winner is written once but gathers the gradient once per window, as in
    # PyTorch (so finite differences disagree with both)
    x = np.random.default_rng(1).standard_normal((2, 3, 5, 5))
    grads = []
    for lib, fn in ((ember, F), (torch, TF)):
        t = lib.tensor(x, requires_grad=True)
        out = fn.max_unpool2d(*fn.max_pool2d(t, 3, 2, 1, return_indices=True), 3, 2, 1)
        (out * lib.tensor(np.arange(out.numel()).reshape(tuple(out.shape)) % 7)).sum().backward()
        grads.append(np.asarray(t.grad.numpy()))
    np.testing.assert_allclose(*grads)


@pytest.mark.parametrize("mode", ["sum", "mean"])
def test_embedding_bag_scale_grad_by_freq_divides_by_each_index_count(mode):
    # PyTorch 2.13's CPU embedding_bag divides by a wrong count (pytorch/pytorch#190063);
    # its embedding does not, and a bag is a sum or mean of embeddings
    w = np.random.default_rng(2).standard_normal((10, 3))
    idx = IDX[:8].reshape(2, 4)
    mine, ref = ember.tensor(w, requires_grad=True), torch.tensor(w, requires_grad=True)
    F.embedding_bag(ember.tensor(idx), mine, mode=mode, scale_grad_by_freq=True).sum().backward()
    rows = TF.embedding(torch.tensor(idx), ref, scale_grad_by_freq=True)
    (rows.sum(1) if mode == "sum" else rows.mean(1)).sum().backward()
    np.testing.assert_allclose(mine.grad.numpy(), ref.grad.numpy(), atol=1e-12)


def test_max_unpool_errors():
    values, indices = F.max_pool2d(ember.randn(1, 1, 4, 4), 2, return_indices=True)
    with pytest.raises(ember.ShapeError, match=r"max_unpool2d: output_size \(6, 6\) is "
                                               r"invalid: dim 0 must lie strictly between 2 "
                                               r"and 6"):
        F.max_unpool2d(values, indices, 2, output_size=(6, 6))
    with pytest.raises(IndexOutOfRange, match=r"max_unpool2d: index \d+ is out of bounds"):
        F.max_unpool2d(values, indices, 2, output_size=(3, 3))
    with pytest.raises(ember.ShapeError, match="same shape"):
        F.max_unpool2d(values, indices[..., :1], 2)
    with pytest.raises(ember.DTypeError, match="int64"):
        F.max_unpool2d(values, indices.int(), 2)
    # indices from an odd-sized input: the default output (4, 4) is too small; say so
    values, indices = F.max_pool2d(ember.arange(25.0).reshape(1, 1, 5, 5), 2,
                                   return_indices=True)  # (indices 6, 8, 16, 18)
    with pytest.raises(IndexOutOfRange, match=r"index 16 .* output of spatial size \(4, 4\)"
                                              r".*pass output_size=its spatial size$"):
        F.max_unpool2d(values, indices, 2)
    with pytest.raises(IndexOutOfRange, match=r"index 16 .*pass output_size"):
        ember.jit.compile(lambda v, i: F.max_unpool2d(v, i, 2))(values, indices)
    indices[0, 0, 0, 0] = -1  # (no output size would hold it: no hint)
    with pytest.raises(IndexOutOfRange, match=r"index -1 is out of bounds") as caught:
        F.max_unpool2d(values, indices, 2, output_size=(5, 5))
    assert "output_size" not in str(caught.value)
    with pytest.raises(ember.ShapeError, match="max_unpool2d: expected a 3-D"):
        F.max_unpool2d(values[0, 0], indices[0, 0], 2)


def test_other_errors():
    with pytest.raises(ember.DTypeError, match="lp_pool2d: expected a floating"):
        F.lp_pool2d(ember.ones(1, 1, 4, 4, dtype=ember.int32), 2, 2)  # (torch's avg_pool too)
    with pytest.raises(ember.ShapeError, match="channel_shuffle: the 6 channels"):
        F.channel_shuffle(ember.ones(1, 6, 2), 4)
    with pytest.raises(ember.ShapeError, match="more than 2 dims"):
        F.channel_shuffle(ember.ones(4, 6), 2)
    with pytest.raises(ember.ShapeError, match=r"pdist: expected a 2-D"):
        F.pdist(ember.ones(3))
    w, idx = ember.randn(10, 3), ember.tensor(IDX)
    with pytest.raises(ValueError, match="only supported for mode='sum'"):
        F.embedding_bag(idx, w, ember.tensor(OFFSETS), per_sample_weights=ember.ones(9))
    with pytest.raises(ValueError, match=r"offsets\[0\] must be 0"):
        F.embedding_bag(idx, w, ember.tensor([1, 3]))
    with pytest.raises(ember.ShapeError, match="offsets must be None"):
        F.embedding_bag(idx.reshape(3, 3), w, ember.tensor([0]))
    with pytest.raises(ValueError, match="mode must be one of"):
        F.embedding_bag(idx.reshape(3, 3), w, mode="min")
    with pytest.raises(IndexOutOfRange, match="embedding: index 12"):
        F.embedding_bag(ember.tensor([[12]]), w)


@pytest.mark.parametrize("module", [lp_pool, unpool])
def test_docstring_examples(module):
    result = doctest.testmod(module, extraglobs={"ember": ember, "F": F})
    assert result.attempted and result.failed == 0


@pytest.mark.parametrize("dtype", ["int64", "bool"])
@pytest.mark.parametrize("name, shape", [("lp_pool1d", (2, 3, 7)), ("lp_pool2d", (2, 3, 5, 5)),
                                         ("lp_pool2d", (3, 5, 5)),
                                         ("lp_pool3d", (1, 2, 4, 4, 5))])
@pytest.mark.parametrize("p", [1, 2, 3, 3.0])
@pytest.mark.parametrize("ceil_mode", [False, True])
def test_lp_pool_of_integers_is_torch_float32(dtype, name, shape, p, ceil_mode):
    # torch's composite: an integer power, int64 average pooling (truncated), then a float32
    # root; Ember refused any non-floating input
    a = np.random.default_rng(0).integers(-9, 10, shape)
    t = torch.from_numpy(a).to(getattr(torch, dtype))
    want = getattr(TF, name)(t, p, 2, ceil_mode=ceil_mode)
    got = getattr(F, name)(ember.from_numpy(t.numpy()), p, 2, ceil_mode=ceil_mode)
    assert got.dtype is ember.float32 and want.dtype is torch.float32
    # (torch's float32 root is vectorised, at times an ulp from the rounded one Ember gives;
    # an untruncated average would be off by far more)
    np.testing.assert_allclose(got.numpy(), want.numpy(), rtol=1e-6, atol=1e-6)


@pytest.mark.parametrize("name", ["lp_pool2d", "lp_pool3d"])
def test_lp_pool_inf_of_int64_keeps_int64(name):
    a = np.random.default_rng(1).integers(-9, 10, (1, 2, 4, 4, 4)[:2 + int(name[-2])])
    want = getattr(TF, name)(torch.from_numpy(a), float("inf"), 2)
    got = getattr(F, name)(ember.from_numpy(a), float("inf"), 2)
    assert got.dtype is ember.int64
    np.testing.assert_array_equal(got.numpy(), want.numpy())
