"""Regressions from a review of the ops added with the torch.nn catch-up (losses, pooling,
grid_sample, embedding_bag, gumbel_softmax, shrinks, alpha dropout): empty batches, kinks
and ties, dtypes, against PyTorch."""

import numpy as np
import pytest
import torch
import torch.nn.functional as TF

import ember
import ember.nn.functional as F
from ember.autograd.gradcheck import gradcheck
from ember.errors import DTypeError, IndexOutOfRange


def _grads(fn_ember, fn_torch, *arrays, out_grad=None):
    """Each library's value and gradients wrt every array, for one output gradient."""
    results = []
    for lib, fn in ((ember, fn_ember), (torch, fn_torch)):
        inputs = [lib.tensor(a, requires_grad=True) for a in arrays]
        out = fn(*inputs)
        g = np.ones(tuple(out.shape)) if out_grad is None else out_grad
        (out * lib.tensor(g)).sum().backward()
        results.append([np.asarray(out.detach().numpy())] +
                       [np.asarray(t.grad.numpy()) for t in inputs])
    return results


def test_max_unpool_and_grid_sample_of_an_empty_batch_or_no_channels():
    values, indices = TF.max_pool2d(torch.randn(0, 2, 4, 4), 2, return_indices=True)
    out = F.max_unpool2d(ember.tensor(values.numpy()), ember.tensor(indices.numpy()), 2)
    assert out.shape == (0, 2, 4, 4)
    for n, c in ((0, 1), (1, 0)):
        out = F.grid_sample(ember.zeros(n, c, 3, 3), ember.zeros(n, 2, 2, 2),
                            align_corners=False)
        assert out.shape == (n, c, 2, 2)


@pytest.mark.parametrize("padding_mode", ["border", "reflection"])
@pytest.mark.parametrize("mode", ["bilinear", "bicubic"])
def test_grid_sample_gradient_at_the_clip_bounds_is_torchs_zero(mode, padding_mode):
    # points exactly on the image's edge, and reflected onto it: PyTorch's clip passes no
    # gradient there (a clamp's own would pass it through)
    grid = np.array([[[[-1.0, -1.0], [1.0, 1.0], [3.0, -3.0], [0.5, -0.5]]]])
    x = np.random.default_rng(0).standard_normal((1, 2, 3, 3))
    mine, ref = _grads(
        lambda a, g: F.grid_sample(a, g, mode, padding_mode, align_corners=True),
        lambda a, g: TF.grid_sample(a, g, mode, padding_mode, align_corners=True), x, grid)
    for got, want in zip(mine, ref, strict=True):
        np.testing.assert_allclose(got, want, atol=1e-12)


@pytest.mark.parametrize("loss", ["multi_margin_loss", "multilabel_margin_loss"])
def test_margin_losses_pass_no_gradient_at_the_hinge_kink(loss):
    # x[target] - x[i] == margin exactly: PyTorch's kernels count only terms above 0
    x = np.array([[1.0, 0.0, 2.0], [0.5, 1.5, -0.5]])
    target = np.array([0, 1]) if loss == "multi_margin_loss" else np.array([[0, -1, 0],
                                                                            [1, -1, 0]])
    mine, ref = _grads(lambda a: getattr(F, loss)(a, ember.tensor(target)),
                       lambda a: getattr(TF, loss)(a, torch.tensor(target)), x)
    for got, want in zip(mine, ref, strict=True):
        np.testing.assert_allclose(got, want, atol=1e-12)


def test_multilabel_margin_loss_checks_targets_after_the_first_minus_one():
    with pytest.raises(IndexOutOfRange, match="multilabel_margin_loss"):
        F.multilabel_margin_loss(ember.zeros(1, 3), ember.tensor([[0, -1, 7]]))


def test_embedding_bag_max_sends_a_tied_maximum_whole_to_the_first_row():
    weight = np.array([[1.0, 5.0], [1.0, 5.0], [3.0, 2.0], [0.0, 0.0]])
    indices, offsets = np.array([1, 0, 2, 1, 0, 3]), np.array([0, 2, 2])
    mine, ref = _grads(
        lambda w: F.embedding_bag(ember.tensor(indices), w, ember.tensor(offsets), mode="max"),
        lambda w: TF.embedding_bag(torch.tensor(indices), w, torch.tensor(offsets),
                                   mode="max"), weight, out_grad=np.arange(6.0).reshape(3, 2))
    for got, want in zip(mine, ref, strict=True):
        np.testing.assert_array_equal(got, want)
    w = ember.tensor(np.random.default_rng(2).standard_normal((4, 2)), requires_grad=True)
    assert gradcheck(lambda t: F.embedding_bag(ember.tensor(indices), t, ember.tensor(offsets),
                                               mode="max"), (w,))
    no_bags = F.embedding_bag(ember.tensor(indices), w, ember.tensor([0]), mode="max",
                              include_last_offset=True)
    assert no_bags.shape == (0, 2)


@pytest.mark.parametrize("indices", [[[0, 1]], [[2, 0, 1], [1, 2, 2]]])
def test_embedding_bag_max_2d_sends_a_tied_maximum_whole_to_the_first_row(indices):
    # a 2-D input takes its own path (one bag per row): distinct rows holding equal values
    weight = np.array([[1.0, 2.0], [1.0, 2.0], [1.0, -1.0]])
    mine, ref = _grads(lambda w: F.embedding_bag(ember.tensor(indices), w, mode="max"),
                       lambda w: TF.embedding_bag(torch.tensor(indices), w, mode="max"), weight,
                       out_grad=np.arange(1.0, 2 * len(indices) + 1).reshape(-1, 2))
    for got, want in zip(mine, ref, strict=True):
        np.testing.assert_array_equal(got, want)


@pytest.mark.parametrize("mode", ["sum", "mean", "max"])
@pytest.mark.parametrize("offsets", [[0, 2, 2, 5], [0, 2, 2, 8], [0, 3, 6, 1]])
def test_embedding_bag_last_bag_runs_to_the_end_of_the_input_as_in_torch(offsets, mode):
    # include_last_offset: PyTorch's last bag takes every index from its start on, whatever
    # the last offset says
    indices, w = [1, 2, 4, 5, 4, 3, 2, 9], np.random.default_rng(0).standard_normal((10, 3))
    outs = []
    for lib, fn in ((ember, F.embedding_bag), (torch, TF.embedding_bag)):
        weight = lib.tensor(w, requires_grad=True)
        out = fn(lib.tensor(indices), weight, lib.tensor(offsets), mode=mode,
                 include_last_offset=True)
        (out * lib.arange(out.numel(), dtype=out.dtype).reshape(out.shape)).sum().backward()
        outs.append((out.detach().numpy(), weight.grad.numpy()))
    for got, want in zip(*outs):
        np.testing.assert_allclose(got, want, rtol=1e-12)


@pytest.mark.parametrize("mode", ["sum", "mean"])
@pytest.mark.parametrize("padding_idx, offsets", [(None, [0, 2, 2]), (2, [0, 2, 2]),
                                                  (None, [0])])
def test_embedding_bag_sums_into_the_bags_rows_alone_where_none_is_left_out(
        mode, padding_idx, offsets):
    # without padding and with bags, every entry is in a bag: no spare row to slice off (one
    # op fewer each way); padding entries (and no bags at all) keep it. Values: torch's
    indices, w = [1, 2, 4, 5, 2], np.random.default_rng(0).standard_normal((10, 3))
    outs = []
    for lib, fn in ((ember, F.embedding_bag), (torch, TF.embedding_bag)):
        weight = lib.tensor(w, requires_grad=True)
        out = fn(lib.tensor(indices), weight, lib.tensor(offsets, dtype=lib.int64), mode=mode,
                 padding_idx=padding_idx)
        (out * lib.arange(out.numel(), dtype=out.dtype).reshape(out.shape)).sum().backward()
        outs.append((out, weight.grad.numpy()))
    (got, gw), (want, tw) = outs
    none = F.embedding_bag(ember.tensor(indices), ember.tensor(w), ember.tensor([0]), mode=mode,
                           include_last_offset=True, padding_idx=padding_idx)
    assert none.shape == (0, 3)
    np.testing.assert_allclose(got.detach().numpy(), want.detach().numpy(), rtol=1e-15)
    np.testing.assert_allclose(gw, tw, rtol=1e-15)
    spare = padding_idx is not None
    if mode == "sum" and got.grad_fn is not None:
        assert (got.grad_fn.name() == "SliceBackward0") == spare


def test_embedding_bag_offsets_that_decrease_are_an_error():
    with pytest.raises(ValueError, match="offsets must not decrease"):
        F.embedding_bag(ember.tensor([1, 2, 0]), ember.zeros(3, 2), ember.tensor([0, 2, 1]))


def test_embedding_bag_offsets_past_the_input_are_an_error():
    with pytest.raises(IndexOutOfRange, match="embedding_bag: offsets must not exceed"):
        F.embedding_bag(ember.tensor([1, 2]), ember.zeros(3, 2), ember.tensor([0, 3]))


@pytest.mark.parametrize("dtype", ["bfloat16", "float16"])
def test_gumbel_softmax_in_half_precision_never_gives_nan(dtype):
    # a bfloat16 uniform sample is 0 once in 256: its Gumbel noise was inf, the softmax NaN
    gen = ember.Generator().manual_seed(0)
    logits = ember.zeros(4000, 4, dtype=getattr(ember, dtype))
    for hard in (False, True):
        y = F.gumbel_softmax(logits, tau=0.5, hard=hard, generator=gen)
        assert y.dtype is logits.dtype
        assert not bool(ember.isnan(y.float()).any())


def test_threshold_keeps_integers_and_the_shrinks_reject_them():
    x = ember.tensor([-1, 0, 2])
    out = F.threshold(x, 0.5, 5.5)
    assert out.dtype is ember.int64
    np.testing.assert_array_equal(out.numpy(), TF.threshold(torch.tensor([-1, 0, 2]), 0.5,
                                                            5.5).numpy())
    with pytest.raises(DTypeError, match="threshold: bool"):
        F.threshold(ember.tensor([True]), 0, 1)
    for fn in (F.hardshrink, F.softshrink):
        with pytest.raises(DTypeError, match=fn.__name__):
            fn(x)


def test_feature_alpha_dropout_needs_channels_only_when_it_draws():
    x = ember.randn(3)
    assert F.feature_alpha_dropout(x, 0.5, training=False) is x
    with pytest.raises(ember.ShapeError, match="feature_alpha_dropout"):
        F.feature_alpha_dropout(x, 0.5, training=True)


@pytest.mark.parametrize("mode", ["sum", "mean", "max"])
@pytest.mark.parametrize("offsets", [None, [0, 2]])
def test_embedding_bag_refuses_an_integer_weight_in_every_mode_as_torch(mode, offsets):
    indices = [[0, 1], [2, 0]] if offsets is None else [0, 1, 2, 0]
    args = [torch.tensor(indices), torch.tensor([[1, 5], [3, 2], [0, 4]])]
    with pytest.raises(RuntimeError, match="scalar types"):
        TF.embedding_bag(*args, None if offsets is None else torch.tensor(offsets), mode=mode)
    with pytest.raises(DTypeError, match=r"embedding_bag: weight .* int64.*weight\.float\(\)"):
        F.embedding_bag(ember.tensor(indices), ember.tensor([[1, 5], [3, 2], [0, 4]]),
                        None if offsets is None else ember.tensor(offsets), mode=mode)


@pytest.mark.parametrize("kwargs, torch_error, ember_error, match", [
    (dict(mode="bogus"), ValueError, ember.errors.ArgumentError, "mode must be one of"),
    (dict(mode="max", sparse=True), ValueError, ember.errors.ArgumentError, "sparse"),
    (dict(mode="max", scale_grad_by_freq=True), ValueError, ember.errors.ArgumentError,
     "frequency"),
    (dict(mode="sum", per_sample_weights=[1.0] * 3), ValueError, ember.errors.ShapeError,
     "per_sample_weights"),
    (dict(mode="mean", per_sample_weights=[1.0] * 4), NotImplementedError,
     ember.errors.ArgumentError, "only supported for mode='sum'"),
    (dict(padding_idx=9), RuntimeError, IndexOutOfRange, "padding_idx 9"),
    # the weight's dtype is checked before per_sample_weights' (both in torch's kernel)
    (dict(mode="sum", per_sample_weights=[1.0] * 4), RuntimeError, DTypeError, "weight must"),
])
def test_embedding_bag_checks_its_arguments_before_an_integer_weight_as_torch(
        kwargs, torch_error, ember_error, match):
    # the weight's dtype was checked first, so each of these became a DTypeError
    def call(lib, functional):
        kw = dict(kwargs)
        if "per_sample_weights" in kw:
            kw["per_sample_weights"] = lib.tensor(kw["per_sample_weights"], dtype=lib.float64)
        functional.embedding_bag(lib.tensor([0, 1, 1, 2]), lib.ones(4, 3, dtype=lib.int64),
                                 lib.tensor([0, 2]), **kw)

    with pytest.raises(torch_error):
        call(torch, TF)
    with pytest.raises(ember_error, match=match):
        call(ember, F)


@pytest.mark.parametrize("dtype", ["float8_e4m3fn", "float8_e5m2"])
def test_embedding_bag_refuses_a_float8_weight_as_torch(dtype):
    # float8 passed the floating-point check and failed later inside index_add
    with pytest.raises(RuntimeError, match="Half, BFloat16, Float, Double"):
        TF.embedding_bag(torch.tensor([0, 1]), torch.ones(3, 2).to(getattr(torch, dtype)),
                         torch.tensor([0]))
    with pytest.raises(DTypeError, match=rf"weight must be float16, bfloat16, float32 or "
                       rf"float64, got {dtype}"):
        F.embedding_bag(ember.tensor([0, 1]), ember.ones(3, 2).to(getattr(ember, dtype)),
                        ember.tensor([0]))
