"""ember.vision.ops against independent references: box overlaps computed pair by pair, a
literal transcription of the greedy NMS loop, and torch evaluating the published formulas
(values and gradients)."""

import math

import numpy as np
import pytest
import torch

import ember
from ember import nn
from ember.vision import ops

RNG = np.random.default_rng(0)


def random_boxes(n, scale=10.0):
    xy = RNG.uniform(0, scale, (n, 2))
    wh = RNG.uniform(0.5, scale / 2, (n, 2))
    return np.concatenate([xy, xy + wh], 1)


def pair_iou(a, b):
    w = max(0.0, min(a[2], b[2]) - max(a[0], b[0]))
    h = max(0.0, min(a[3], b[3]) - max(a[1], b[1]))
    inter = w * h
    area = lambda r: (r[2] - r[0]) * (r[3] - r[1])  # noqa: E731
    return inter / (area(a) + area(b) - inter)


def torch_overlaps(b1, b2, kind, eps=1e-7):
    """The published GIoU / DIoU / CIoU definitions, evaluated by torch for every pair."""
    lo = torch.maximum(b1[:, None, :2], b2[None, :, :2])
    hi = torch.minimum(b1[:, None, 2:], b2[None, :, 2:])
    inter = (hi - lo).clamp(min=0).prod(-1)
    area = lambda b: (b[:, 2] - b[:, 0]) * (b[:, 3] - b[:, 1])  # noqa: E731
    union = area(b1)[:, None] + area(b2)[None, :] - inter
    iou = inter / union
    hull = (torch.maximum(b1[:, None, 2:], b2[None, :, 2:])
            - torch.minimum(b1[:, None, :2], b2[None, :, :2])).clamp(min=0)
    if kind == "giou":
        c = hull.prod(-1)
        return iou - (c - union) / c
    centre = lambda b: (b[:, :2] + b[:, 2:]) / 2  # noqa: E731
    d2 = ((centre(b1)[:, None] - centre(b2)[None]) ** 2).sum(-1)
    diou = iou - d2 / ((hull ** 2).sum(-1) + eps)
    if kind == "diou":
        return diou
    ratio = lambda b: torch.atan((b[:, 2] - b[:, 0]) / (b[:, 3] - b[:, 1]))  # noqa: E731
    v = 4 / math.pi ** 2 * (ratio(b2)[None] - ratio(b1)[:, None]) ** 2
    alpha = (v / (1 - iou + v + eps)).detach()
    return diou - alpha * v


def test_box_iou_matches_pairwise_reference():
    a, b = random_boxes(7), random_boxes(5)
    expected = np.array([[pair_iou(x, y) for y in b] for x in a])
    np.testing.assert_allclose(ops.box_iou(ember.tensor(a), ember.tensor(b)).numpy(), expected,
                               rtol=1e-12)
    assert ops.box_area(ember.tensor(a)).shape == (7,)


@pytest.mark.parametrize("kind, fn", [("giou", ops.generalized_box_iou),
                                      ("diou", ops.distance_box_iou),
                                      ("ciou", ops.complete_box_iou)])
def test_overlap_variants_values_and_gradients(kind, fn):
    a, b = random_boxes(4), random_boxes(3)
    ea, eb = ember.tensor(a, requires_grad=True), ember.tensor(b, requires_grad=True)
    ta, tb = torch.tensor(a, requires_grad=True), torch.tensor(b, requires_grad=True)
    out, ref = fn(ea, eb), torch_overlaps(ta, tb, kind)
    np.testing.assert_allclose(out.detach().numpy(), ref.detach().numpy(), rtol=1e-10)
    w = RNG.standard_normal(ref.shape)
    (out * ember.tensor(w)).sum().backward()
    (ref * torch.tensor(w)).sum().backward()
    np.testing.assert_allclose(ea.grad.numpy(), ta.grad.numpy(), rtol=1e-9, atol=1e-12)
    np.testing.assert_allclose(eb.grad.numpy(), tb.grad.numpy(), rtol=1e-9, atol=1e-12)
    if kind != "ciou":  # (CIoU's alpha is held constant, so it is not a true gradient)
        assert ember.autograd.gradcheck(fn, (ea, eb))


@pytest.mark.parametrize("kind, loss", [("giou", ops.generalized_box_iou_loss),
                                        ("diou", ops.distance_box_iou_loss),
                                        ("ciou", ops.complete_box_iou_loss)])
def test_paired_losses_are_one_minus_the_diagonal(kind, loss):
    a, b = random_boxes(6), random_boxes(6)
    a[0] = [0, 0, 1, 1]
    b[0] = [3, 3, 4, 4]  # disjoint: the losses still see the distance
    ref = 1 - torch.diagonal(torch_overlaps(torch.tensor(a), torch.tensor(b), kind))
    got = loss(ember.tensor(a), ember.tensor(b))
    np.testing.assert_allclose(got.numpy(), ref.numpy(), rtol=1e-6)
    assert loss(ember.tensor(a), ember.tensor(b), reduction="mean").item() == \
        pytest.approx(ref.mean().item(), rel=1e-6)
    assert loss(ember.zeros(0, 4), ember.zeros(0, 4), reduction="mean").item() == 0.0
    with pytest.raises(ValueError, match="invalid reduction 'avg'"):
        loss(ember.tensor(a), ember.tensor(b), reduction="avg")


def test_sigmoid_focal_loss_matches_definition():
    x = RNG.standard_normal((5, 3))
    t = (RNG.uniform(size=(5, 3)) > 0.5).astype(float)
    tx, tt = torch.tensor(x, requires_grad=True), torch.tensor(t)
    p = torch.sigmoid(tx)
    ce = torch.nn.functional.binary_cross_entropy_with_logits(tx, tt, reduction="none")
    p_t = p * tt + (1 - p) * (1 - tt)
    ref = (0.25 * tt + 0.75 * (1 - tt)) * ce * (1 - p_t) ** 2
    ex = ember.tensor(x, requires_grad=True)
    got = ops.sigmoid_focal_loss(ex, ember.tensor(t), reduction="sum")
    assert got.item() == pytest.approx(ref.sum().item(), rel=1e-12)
    got.backward()
    ref.sum().backward()
    np.testing.assert_allclose(ex.grad.numpy(), tx.grad.numpy(), rtol=1e-10)
    assert math.isnan(ops.sigmoid_focal_loss(ember.zeros(0), ember.zeros(0), reduction="mean")
                      .item())


def reference_nms(boxes, scores, threshold):
    """The greedy loop of torchvision's CPU kernel, one pair at a time."""
    order = sorted(range(len(scores)), key=lambda i: -scores[i])  # (stable)
    suppressed, keep = set(), []
    for pos, i in enumerate(order):
        if i in suppressed:
            continue
        keep.append(i)
        for j in order[pos + 1:]:
            if j not in suppressed and pair_iou(boxes[i], boxes[j]) > threshold:
                suppressed.add(j)
    return keep


@pytest.mark.parametrize("threshold", [0.0, 0.3, 0.7])
def test_nms_and_batched_nms_match_the_greedy_loop(threshold):
    boxes = random_boxes(60, scale=6.0)
    scores = RNG.uniform(size=60)
    scores[5] = scores[9]  # a tie: the earlier index comes first
    keep = ops.nms(ember.tensor(boxes), ember.tensor(scores), threshold)
    assert keep.dtype is ember.int64
    assert keep.tolist() == reference_nms(boxes, scores, threshold)
    groups = RNG.integers(0, 3, 60)
    expected = [int(np.flatnonzero(groups == g)[k]) for g in range(3)
                for k in reference_nms(boxes[groups == g], scores[groups == g], threshold)]
    expected.sort(key=lambda i: (-scores[i], i))  # one score order, ties by index (torchvision)
    got = ops.batched_nms(ember.tensor(boxes), ember.tensor(scores), ember.tensor(groups),
                          threshold)
    assert got.tolist() == expected


def test_nms_errors_and_empty_input():
    assert ops.nms(ember.zeros(0, 4), ember.zeros(0), 0.5).tolist() == []
    assert ops.batched_nms(ember.zeros(0, 4), ember.zeros(0), ember.zeros(0, dtype=ember.int64),
                           0.5).tolist() == []
    with pytest.raises(ember.ShapeError, match="scores must have shape \\(3,\\)"):
        ops.nms(ember.zeros(3, 4), ember.zeros(2), 0.5)
    with pytest.raises(ember.DTypeError, match="same dtype"):
        ops.nms(ember.zeros(3, 4), ember.zeros(3, dtype=ember.float64), 0.5)


@pytest.mark.parametrize("src, dst", [("xyxy", "xywh"), ("xyxy", "cxcywh"), ("xywh", "cxcywh")])
def test_box_convert_round_trips(src, dst):
    b = ember.tensor(random_boxes(5))
    there = ops.box_convert(b, "xyxy", src)
    np.testing.assert_allclose(ops.box_convert(ops.box_convert(there, src, dst), dst, "xyxy")
                               .numpy(), b.numpy(), rtol=1e-12)
    with pytest.raises(ValueError, match="unknown box format 'xyz'"):
        ops.box_convert(b, "xyz", "xyxy")


def test_clipping_filtering_and_masks():
    b = ember.tensor([[-2.0, 1.0, 30.0, 7.0], [1.0, 1.0, 1.5, 9.0]])
    assert ops.clip_boxes_to_image(b, (5, 20)).tolist() == [[0, 1, 20, 5], [1, 1, 1.5, 5]]
    assert ops.remove_small_boxes(b, 1.0).tolist() == [0]
    masks = ember.zeros(2, 6, 7, dtype=ember.bool)
    masks[0, 2:4, 1:6] = True
    masks[1, 5, 0] = True
    assert ops.masks_to_boxes(masks).tolist() == [[1, 2, 5, 3], [0, 5, 0, 5]]
    assert ops.masks_to_boxes(ember.zeros(1, 3, 3)).tolist() == [[0, 0, 0, 0]]  # torchvision
    assert ops.masks_to_boxes(ember.zeros(0, 3, 3)).shape == (0, 4)


def test_layers():
    ember.manual_seed(0)
    x = ember.ones(1000, 4)
    dropped = ops.stochastic_depth(x, 0.3, "row")
    rows = dropped[:, 0].numpy()
    np.testing.assert_allclose(rows[rows > 0], 1 / 0.7, rtol=1e-6)
    assert (rows >= 0).all() and 0.6 < (rows > 0).mean() < 0.8
    assert (dropped.numpy() == dropped.numpy()[:, :1]).all()    # whole rows
    batch = ops.stochastic_depth(x, 0.5, "batch")
    assert len(np.unique(batch.numpy())) == 1
    with pytest.raises(ValueError, match="mode has to be"):
        ops.stochastic_depth(x, 0.5, "col")
    block = ops.Conv2dNormActivation(3, 8, 3, stride=2, norm_layer=nn.BatchNorm2d)
    assert [type(m).__name__ for m in block] == ["Conv2d", "BatchNorm2d", "ReLU"]
    assert block[0].bias is None and block[0].padding == (1, 1)
    assert ops.Conv2dNormActivation(3, 8, 5, dilation=2)[0].padding == (4, 4)
    assert ops.MLP(4, [8, 2], dropout=0.1)(ember.randn(3, 4)).shape == (3, 2)


def test_conv_norm_activation_defaults_to_the_batch_norm_of_its_dimension():
    """torchvision's defaults: a BatchNorm2d/BatchNorm3d and no conv bias; None means no norm
    (a conv bias then)."""
    for block, norm in [(ops.Conv2dNormActivation(3, 8), "BatchNorm2d"),
                        (ops.Conv3dNormActivation(3, 8), "BatchNorm3d")]:
        assert [type(m).__name__ for m in block] == [type(block[0]).__name__, norm, "ReLU"]
        assert block[0].bias is None
    plain = ops.Conv3dNormActivation(3, 8, norm_layer=None, activation_layer=None)
    assert len(plain) == 1 and plain[0].bias is not None


def test_frozen_batch_norm_equals_batch_norm_in_eval_and_loads_its_state():
    bn = nn.BatchNorm2d(3)
    bn.train()
    bn(ember.randn(8, 3, 4, 4) * 3 + 1)        # running statistics that are not trivial
    bn.eval()
    frozen = ops.FrozenBatchNorm2d(3)
    state = bn.state_dict()
    frozen.load_state_dict(state)
    assert "num_batches_tracked" in state     # the caller's dict is left whole
    x = ember.randn(2, 3, 4, 4)
    np.testing.assert_allclose(frozen(x).numpy(), bn(x).detach().numpy(), rtol=1e-5, atol=1e-6)
    assert not list(frozen.parameters())
