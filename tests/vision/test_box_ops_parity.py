"""Box ops where torchvision 0.29.1's behaviour is more than the formula: result dtypes (half
floats and small integers upcast), batched ``(..., N, 4)`` pairs, the ``fmt`` argument, empty
masks, and the order NMS returns ties and NaN scores in. Expected values were recorded by
running torchvision 0.29.1 on the same inputs, or are computed by torch 2.13."""

import numpy as np
import pytest
import torch

import ember
from ember.vision import ops

RNG = np.random.default_rng(7)


def random_boxes(shape, scale=10.0):
    xy = RNG.uniform(0, scale, (*shape, 2))
    return np.concatenate([xy, xy + RNG.uniform(0.5, scale / 2, (*shape, 2))], -1)


PAIRWISE = [ops.box_iou, ops.generalized_box_iou, ops.distance_box_iou, ops.complete_box_iou]
LOSSES = [ops.generalized_box_iou_loss, ops.distance_box_iou_loss, ops.complete_box_iou_loss]


@pytest.mark.parametrize("dtype, expected", [
    (ember.float16, ember.float32), (ember.bfloat16, ember.float32),
    (ember.float64, ember.float64), (ember.uint8, ember.int32), (ember.int16, ember.int32),
    (ember.int64, ember.int64)])
def test_box_area_upcasts_as_torchvision(dtype, expected):
    # torchvision's _upcast: half floats compute in float32, small integers in int32 (their
    # products would overflow: a 200x200 uint8 box has area 40000)
    boxes = ember.tensor([[0, 0, 200, 200], [1, 2, 4, 8]]).to(dtype)
    area = ops.box_area(boxes)
    assert area.dtype is expected
    assert area.tolist() == [40000, 18]


@pytest.mark.parametrize("fn", PAIRWISE)
def test_pairwise_overlaps_of_half_boxes_are_float32(fn):
    b = ember.tensor(random_boxes((3,)))
    out = fn(b.half(), b.half())
    assert out.dtype is ember.float32  # recorded from torchvision 0.29.1 (float16 in, float32 out)
    np.testing.assert_allclose(out.numpy(), fn(b.half().float(), b.half().float()).numpy(),
                               atol=2e-3)


@pytest.mark.parametrize("loss", LOSSES)
def test_losses_of_half_and_integer_boxes_are_float32(loss):
    a = ember.tensor([[0, 0, 4, 4], [1, 1, 3, 5]])
    b = ember.tensor([[1, 1, 3, 5], [0, 0, 4, 4]])
    for dt in (ember.int64, ember.uint8, ember.float16):
        out = loss(a.to(dt), b.to(dt))
        assert out.dtype is ember.float32
        np.testing.assert_allclose(out.numpy(), loss(a.float(), b.float()).numpy(), rtol=1e-6)


@pytest.mark.parametrize("fn", PAIRWISE)
def test_pairwise_overlaps_take_leading_batch_dimensions(fn):
    a = ember.tensor(random_boxes((2, 3, 4)))
    b = ember.tensor(random_boxes((2, 3, 5)))
    out = fn(a, b)
    assert out.shape == (2, 3, 4, 5)
    for i in range(2):
        for j in range(3):
            np.testing.assert_allclose(out[i, j].numpy(), fn(a[i, j], b[i, j]).numpy(),
                                       rtol=1e-12)


def test_pairwise_overlaps_backpropagate_through_batches():
    a = torch.tensor(random_boxes((2, 3)), requires_grad=True)
    b = torch.tensor(random_boxes((2, 4)))
    ea = ember.tensor(a.detach().numpy(), requires_grad=True)
    ops.complete_box_iou(ea, ember.tensor(b.numpy())).sum().backward()
    # torch 2.13, per batch entry through the unbatched op's own definition
    ref = torch.zeros_like(a)
    for i in range(2):
        ai = ember.tensor(a.detach()[i].numpy(), requires_grad=True)
        ops.complete_box_iou(ai, ember.tensor(b[i].numpy())).sum().backward()
        ref[i] = torch.from_numpy(ai.grad.numpy())
    np.testing.assert_allclose(ea.grad.numpy(), ref.numpy(), rtol=1e-10)


@pytest.mark.parametrize("fmt", ["xywh", "cxcywh"])
def test_box_area_and_iou_take_a_format(fmt):
    xyxy = ember.tensor(random_boxes((4,)))
    other = ember.tensor(random_boxes((3,)))
    conv = lambda b: ops.box_convert(b, "xyxy", fmt)  # noqa: E731
    np.testing.assert_allclose(ops.box_area(conv(xyxy), fmt=fmt).numpy(),
                               ops.box_area(xyxy).numpy(), rtol=1e-12)
    np.testing.assert_allclose(ops.box_iou(conv(xyxy), conv(other), fmt=fmt).numpy(),
                               ops.box_iou(xyxy, other).numpy(), rtol=1e-12)
    with pytest.raises(ValueError, match="box_iou: unsupported box format 'xywhr'"):
        ops.box_iou(xyxy, other, fmt="xywhr")


def test_masks_to_boxes_gives_zeros_for_empty_masks():
    masks = ember.tensor([[[0, 1], [0, 0]], [[0, 0], [0, 0]]])
    # recorded from torchvision 0.29.1: an empty mask's box is [0, 0, 0, 0]
    assert ops.masks_to_boxes(masks).tolist() == [[1, 0, 1, 0], [0, 0, 0, 0]]
    none = ops.masks_to_boxes(ember.zeros(2, 3, 0, dtype=ember.float64, device="meta"))
    assert none.shape == (0, 4) and none.dtype == ember.float32  # no pixels: no boxes
    assert none.device.type == "meta"  # (torchvision: float32 on the masks' device)


def test_nms_compares_the_iou_with_the_threshold_in_double():
    # IoU 3/10 in float32 is float32(0.3), above the double 0.3 (torchvision's kernel keeps
    # only box 0; recorded from torchvision 0.29.1); a float32 comparison kept both
    boxes = ember.tensor([[6.0, 3, 9, 6], [8, 3, 9, 7]])
    scores = ember.tensor([0.9, 0.8])
    assert ops.nms(boxes, scores, 0.3).tolist() == [0]
    assert ops.batched_nms(boxes, scores, ember.tensor([0, 0]), 0.3).tolist() == [0]


def test_nms_puts_nan_scores_first_as_torch_sorts_them():
    boxes = ember.tensor([[0.0, 0, 1, 1], [2, 2, 3, 3], [4, 4, 5, 5], [6, 6, 7, 7]])
    scores = ember.tensor([0.1, float("nan"), 0.3, 0.2])
    # torch's descending sort puts NaN first; recorded from torchvision 0.29.1
    assert ops.nms(boxes, scores, 0.5).tolist() == [1, 2, 3, 0]


def test_batched_nms_orders_tied_scores_by_index_across_categories():
    boxes = ember.tensor([[0.0, 0, 1, 1], [2, 2, 3, 3], [4, 4, 5, 5], [6, 6, 7, 7], [8, 8, 9, 9],
                          [10, 10, 11, 11]])
    scores = ember.tensor([0.5, 0.5, 0.9, 0.5, 0.5, 0.5])
    idxs = ember.tensor([1, 0, 1, 0, 1, 2])
    # torchvision sorts all kept boxes once by score (ties in index order), not category by
    # category; recorded from torchvision 0.29.1 (these boxes do not overlap)
    assert ops.batched_nms(boxes, scores, idxs, 0.5).tolist() == [2, 0, 1, 3, 4, 5]
