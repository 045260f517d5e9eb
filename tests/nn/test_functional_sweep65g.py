"""Fixes from the nn.functional misc sweep of session 65 (sweep65g), checked against torch
2.13."""

import itertools

import numpy as np
import pytest
import torch

import ember
import ember.nn.functional as F


@pytest.mark.parametrize("mode, padding_mode", itertools.product(
    ["bilinear", "nearest"], ["zeros", "border", "reflection"]))
@pytest.mark.parametrize("value", [np.nan, np.inf, -np.inf])
def test_grid_sample_5d_non_finite_grid_points_read_as_torch(mode, padding_mode, value):
    # torch's 5-D CPU sampler sends NaN to the last pixel under border/reflection (its 4-D
    # one to the first) and reads 0 at a non-finite point with zeros padding; ember read the
    # first pixel, and NaN for bilinear with zeros padding
    x = np.arange(48.0).reshape(1, 2, 2, 3, 4) + 1
    g = np.full((1, 2, 1, 3, 3), 0.3)
    g[0, 0, 0, 0, 0] = value
    g[0, 1, 0, 1, 1] = value
    g[0, 0, 0, 2, 2] = value
    for align_corners in (False, True):
        want = torch.nn.functional.grid_sample(torch.tensor(x), torch.tensor(g), mode=mode,
                                               padding_mode=padding_mode,
                                               align_corners=align_corners)
        got = F.grid_sample(ember.tensor(x), ember.tensor(g), mode=mode,
                            padding_mode=padding_mode, align_corners=align_corners)
        np.testing.assert_allclose(got.numpy(), want.numpy())


def test_grid_sample_5d_zeros_non_finite_point_gives_zero_gradients():
    # the point reads 0 (torch: every corner out of bounds), and sends no NaN back
    x = ember.ones(1, 1, 2, 2, 2, dtype=ember.float64, requires_grad=True)
    g = ember.tensor([[[[[np.nan, 0.2, 0.1], [0.1, 0.2, 0.3]]]]], dtype=ember.float64,
                     requires_grad=True)
    out = F.grid_sample(x, g, align_corners=False)
    out.sum().backward()
    assert out.detach().numpy().ravel().tolist() == [0.0, 1.0]
    assert np.isfinite(x.grad.numpy()).all() and np.isfinite(g.grad.numpy()).all()
    assert g.grad.numpy()[0, 0, 0, 0].tolist() == [0.0, 0.0, 0.0]


@pytest.mark.parametrize("dtype, norm_type", [("float16", 2.0), ("bfloat16", 2.0),
                                              ("float16", 3.0), ("float32", 1.0),
                                              ("float32", float("inf"))])
@pytest.mark.parametrize("max_norm", [1.0, 0.1, 0.7])
def test_embedding_max_norm_renormalises_rows_bit_for_bit_as_torch(dtype, norm_type, max_norm):
    # torch compares each norm with max_norm and makes the scale in float64, then multiplies
    # the row by the scale in the weight's dtype; ember made the scale in the weight's dtype
    # (float32 rows off by an ulp, half ones by one half ulp, in ~40 of 200 rows)
    w = np.random.default_rng(0).standard_normal((200, 7)) * 2
    idx = np.random.default_rng(1).integers(0, 200, 300)
    got = ember.tensor(w).to(getattr(ember, dtype))
    want = torch.tensor(w).to(getattr(torch, dtype))
    out = F.embedding(ember.tensor(idx), got, max_norm=max_norm, norm_type=norm_type)
    ref = torch.nn.functional.embedding(torch.tensor(idx), want, max_norm=max_norm,
                                        norm_type=norm_type)
    np.testing.assert_array_equal(got.float().numpy(), want.float().numpy())
    np.testing.assert_array_equal(out.float().numpy(), ref.float().numpy())


@pytest.mark.parametrize("padding_idx", [1.0, 1.5, True, "1"])
def test_embedding_bag_padding_idx_must_be_an_int_as_torch(padding_idx):
    # torch: TypeError; ember took 1.0 as 1 and 1.5 as no padding at all
    with pytest.raises(TypeError):
        torch.nn.functional.embedding_bag(torch.tensor([[0, 1]]), torch.ones(3, 2),
                                          padding_idx=padding_idx)
    with pytest.raises(TypeError, match="embedding_bag: padding_idx must be an int"):
        F.embedding_bag(ember.tensor([[0, 1]]), ember.ones(3, 2), padding_idx=padding_idx)
    out = F.embedding_bag(ember.tensor([[0, 1]]), ember.ones(3, 2), padding_idx=np.int64(1))
    assert out.tolist() == [[1.0, 1.0]]


@pytest.mark.parametrize("name", ["max_norm", "norm_type"])
def test_embedding_renorm_arguments_must_be_numbers(name):
    kwargs = {"max_norm": 1.0, name: "2"}
    with pytest.raises(TypeError, match=f"embedding: {name} must be a number"):
        F.embedding(ember.tensor([0]), ember.ones(3, 2), **kwargs)


@pytest.mark.parametrize("values", [[-1], [-3, -1]])
def test_one_hot_of_negative_values_with_inferred_classes_says_so(values):
    # torch: "Class values must be non-negative."; ember said "out of range for 0 classes;
    # expected values in [0, -1]"
    with pytest.raises(RuntimeError, match="non-negative"):
        torch.nn.functional.one_hot(torch.tensor(values))
    with pytest.raises(IndexError, match="one_hot: class values must be non-negative"):
        F.one_hot(ember.tensor(values))


@pytest.mark.parametrize("mode", ["sum", "mean"])
def test_embedding_bag_scale_grad_by_freq_divides_by_each_index_own_count(mode):
    # Left on purpose unlike torch 2.13's CPU embedding_bag, which divides each index's
    # gradient by the count of the index at its group's position in the sorted indices
    # (indices [1, 2, 1]: index 2's gradient halved by index 1's count). The reference is
    # torch's plain embedding with the bags reduced by hand, as the flag documents.
    w = np.arange(8.0).reshape(4, 2)
    indices, offsets = [2, 2, 0, 2, 0, 1, 2, 1], [0, 5]
    ref_w = torch.tensor(w, requires_grad=True)
    rows = torch.nn.functional.embedding(torch.tensor(indices), ref_w, scale_grad_by_freq=True)
    bags = [rows[:5], rows[5:]]
    ref = torch.stack([b.sum(0) if mode == "sum" else b.mean(0) for b in bags])
    ref.sum().backward()
    got_w = ember.tensor(w, requires_grad=True)
    got = F.embedding_bag(ember.tensor(indices), got_w, ember.tensor(offsets), mode=mode,
                          scale_grad_by_freq=True)
    got.sum().backward()
    np.testing.assert_allclose(got.detach().numpy(), ref.detach().numpy())
    np.testing.assert_allclose(got_w.grad.numpy(), ref_w.grad.numpy())


@pytest.mark.parametrize("dtype", ["float32", "float16", "bfloat16", "float64"])
@pytest.mark.parametrize("size", [(2, 1, 37, 29), (1, 3, 5, 7), (2, 1, 4, 5, 6)])
@pytest.mark.parametrize("align_corners", [False, True])
def test_affine_grid_bit_for_bit_as_torch(dtype, size, align_corners):
    # torch scales its base coordinates by (n - 1) then / n (ember by one rounded (n - 1) / n)
    # and adds x·θ0 + y·θ1 + θ2 in order in its bmm (ember's BLAS matmul fused or reordered):
    # float32 grids were an ulp off in 5-20% of entries, half ones in up to half of them
    nd = len(size) - 2
    theta = np.random.default_rng(0).standard_normal((size[0], nd, nd + 1))
    got = F.affine_grid(ember.tensor(theta).to(getattr(ember, dtype)), size,
                        align_corners=align_corners)
    want = torch.nn.functional.affine_grid(torch.tensor(theta).to(getattr(torch, dtype)),
                                           size, align_corners=align_corners)
    assert got.dtype.name == dtype and tuple(got.shape) == tuple(want.shape)
    np.testing.assert_array_equal(got.float().numpy(), want.float().numpy())


@pytest.mark.parametrize("mode, padding_mode", [
    ("bilinear", "zeros"), ("bilinear", "border"), ("bilinear", "reflection"),
    ("bicubic", "zeros"), ("nearest", "zeros")])
@pytest.mark.parametrize("bad", [np.inf, np.nan])
@pytest.mark.parametrize("nd", [2, 3])
def test_grid_sample_taps_outside_read_zero_not_an_inf_pixel_times_zero(mode, padding_mode,
                                                                       bad, nd):
    # a tap outside the image read pixel 0 with a zero weight: an inf or NaN there made NaN
    # of points near the far corner (torch: the tap adds nothing)
    if nd == 3 and mode == "bicubic":
        return
    shape = (1, 2, 3, 4) if nd == 2 else (1, 2, 2, 3, 4)
    x = np.arange(float(np.prod(shape))).reshape(shape)
    x.reshape(-1)[0] = bad
    points = np.array([[0.9] * nd, [1.5, 0.3, 0.2][:nd], [0.5] * nd, [-0.2] * nd])
    grid = points.reshape((1,) * nd + (4, nd))
    got_x = ember.tensor(x, requires_grad=True)
    got_g = ember.tensor(grid, requires_grad=True)
    got = F.grid_sample(got_x, got_g, mode=mode, padding_mode=padding_mode,
                        align_corners=False)
    want_x = torch.tensor(x, requires_grad=True)
    want = torch.nn.functional.grid_sample(want_x, torch.tensor(grid), mode=mode,
                                           padding_mode=padding_mode, align_corners=False)
    np.testing.assert_allclose(got.detach().numpy(), want.detach().numpy(), equal_nan=True)
    got.sum().backward()
    want.sum().backward()
    np.testing.assert_allclose(got_x.grad.numpy(), want_x.grad.numpy())
