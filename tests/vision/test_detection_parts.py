"""The parts detectors share, against hand-computed values and plain-torch transcriptions of
torchvision's formulas: BoxCoder, Matcher, the sampler, AnchorGenerator, the R-CNN transform,
the feature pyramid and MultiScaleRoIAlign (with a float64 gradient check)."""

import math
from collections import OrderedDict

import numpy as np
import pytest
import torch

import ember
from ember import nn
from ember.vision import ops
from ember.vision.models.detection._utils import (
    BalancedPositiveNegativeSampler,
    BoxCoder,
    Matcher,
)
from ember.vision.models.detection.anchor_utils import AnchorGenerator
from ember.vision.models.detection.image_list import ImageList
from ember.vision.models.detection.transform import GeneralizedRCNNTransform, resize_boxes

RNG = np.random.default_rng(0)


def random_boxes(n, size=50.0):
    xy = RNG.uniform(0, size, (n, 2))
    wh = RNG.uniform(1, size, (n, 2))
    return np.concatenate([xy, xy + wh], 1).astype(np.float32)


def torch_encode(gt, ex, w):
    ew, eh = ex[:, 2] - ex[:, 0], ex[:, 3] - ex[:, 1]
    ex_x, ex_y = ex[:, 0] + 0.5 * ew, ex[:, 1] + 0.5 * eh
    gw, gh = gt[:, 2] - gt[:, 0], gt[:, 3] - gt[:, 1]
    gx, gy = gt[:, 0] + 0.5 * gw, gt[:, 1] + 0.5 * gh
    return torch.stack([w[0] * (gx - ex_x) / ew, w[1] * (gy - ex_y) / eh,
                        w[2] * torch.log(gw / ew), w[3] * torch.log(gh / eh)], 1)


def torch_decode(codes, boxes, w, clip):
    widths, heights = boxes[:, 2] - boxes[:, 0], boxes[:, 3] - boxes[:, 1]
    cx, cy = boxes[:, 0] + 0.5 * widths, boxes[:, 1] + 0.5 * heights
    dx, dy = codes[:, 0::4] / w[0], codes[:, 1::4] / w[1]
    dw = torch.clamp(codes[:, 2::4] / w[2], max=clip)
    dh = torch.clamp(codes[:, 3::4] / w[3], max=clip)
    px, py = dx * widths[:, None] + cx[:, None], dy * heights[:, None] + cy[:, None]
    pw, ph = torch.exp(dw) * widths[:, None], torch.exp(dh) * heights[:, None]
    return torch.stack([px - 0.5 * pw, py - 0.5 * ph, px + 0.5 * pw, py + 0.5 * ph],
                       2).flatten(1)


def test_box_coder_against_torch_and_round_trip():
    weights = (10.0, 10.0, 5.0, 5.0)
    coder = BoxCoder(weights)
    gt, ex = random_boxes(7), random_boxes(7)
    codes = coder.encode([ember.tensor(gt[:3]), ember.tensor(gt[3:])],
                         [ember.tensor(ex[:3]), ember.tensor(ex[3:])])
    assert [tuple(c.shape) for c in codes] == [(3, 4), (4, 4)]
    want = torch_encode(torch.tensor(gt), torch.tensor(ex), weights)
    np.testing.assert_allclose(ember.cat(codes).numpy(), want.numpy(), rtol=1e-5, atol=1e-6)
    # decoding the codes gives the ground truth back; several classes' codes at once
    decoded = coder.decode(ember.cat(codes), [ember.tensor(ex)])
    np.testing.assert_allclose(decoded[:, 0].numpy(), gt, rtol=1e-4, atol=1e-3)
    many = RNG.normal(0, 3, (7, 12)).astype(np.float32)  # large deltas hit the clip
    got = coder.decode_single(ember.tensor(many), ember.tensor(ex))
    ref = torch_decode(torch.tensor(many), torch.tensor(ex), weights, math.log(1000 / 16))
    np.testing.assert_allclose(got.numpy(), ref.numpy(), rtol=1e-5, atol=1e-3)


def test_matcher_thresholds_and_low_quality_matches():
    quality = ember.tensor([[0.9, 0.5, 0.1, 0.2],
                            [0.1, 0.2, 0.2, 0.25]])
    assert Matcher(0.7, 0.3)(quality).tolist() == [0, -2, -1, -1]
    # each ground truth keeps its best prediction (ties included) however poor
    assert Matcher(0.7, 0.3, True)(quality).tolist() == [0, -2, -1, 1]
    tie = ember.tensor([[0.2, 0.2, 0.1]])
    assert Matcher(0.7, 0.3, True)(tie).tolist() == [0, 0, -1]
    with pytest.raises(ValueError, match="No ground-truth boxes"):
        Matcher(0.7, 0.3)(ember.zeros(0, 3))
    with pytest.raises(ValueError, match="No proposal boxes"):
        Matcher(0.7, 0.3)(ember.zeros(2, 0))
    with pytest.raises(ValueError, match="low_threshold"):
        Matcher(0.3, 0.7)


def test_sampler_is_balanced_and_skips_ignored():
    ember.manual_seed(0)
    labels = ember.tensor([1, 1, 1, 1, 0, 0, 0, 0, 0, 0, -1, -1])
    pos, neg = BalancedPositiveNegativeSampler(8, 0.25)([labels, labels[4:]])
    assert pos[0].dtype == ember.uint8
    assert int(pos[0].sum()) == 2 and int(neg[0].sum()) == 6
    assert bool((pos[0][4:] == 0).all()) and bool((neg[0][:4] == 0).all())
    assert not bool(pos[0][10:].any()) and not bool(neg[0][10:].any())
    # too few positives: the negatives fill the batch
    assert int(pos[1].sum()) == 0 and int(neg[1].sum()) == 6


def test_anchor_generator_against_torch_transcription():
    gen = AnchorGenerator(((32, 64), (128,)), ((0.5, 1.0, 2.0), (1.0,)))
    assert gen.num_anchors_per_location() == [6, 1]
    images = ImageList(ember.zeros(2, 3, 64, 96), [(60, 90), (64, 96)])
    feats = [ember.zeros(2, 4, 8, 12), ember.zeros(2, 4, 4, 6)]
    anchors = gen(images, feats)
    assert len(anchors) == 2 and tuple(anchors[0].shape) == (8 * 12 * 6 + 4 * 6, 4)

    def reference(sizes, ratios, rows, cols, stride):
        scales, ratios = torch.tensor(sizes, dtype=torch.float32), torch.tensor(ratios)
        h = torch.sqrt(ratios)
        ws, hs = (1 / h[:, None] * scales[None]).view(-1), (h[:, None] * scales[None]).view(-1)
        base = (torch.stack([-ws, -hs, ws, hs], 1) / 2).round()
        sy, sx = torch.meshgrid(torch.arange(rows) * stride, torch.arange(cols) * stride,
                                indexing="ij")
        shifts = torch.stack([sx.reshape(-1), sy.reshape(-1)] * 2, 1)
        return (shifts.view(-1, 1, 4) + base.view(1, -1, 4)).reshape(-1, 4)

    want = torch.cat([reference([32, 64], [0.5, 1.0, 2.0], 8, 12, 8),
                      reference([128], [1.0], 4, 6, 16)])
    np.testing.assert_array_equal(anchors[1].numpy(), want.numpy())
    # torchvision's documented base anchors of size 32
    assert AnchorGenerator.generate_anchors((32,), (0.5, 1.0, 2.0)).tolist() == [
        [-23, -11, 23, 11], [-16, -16, 16, 16], [-11, -23, 11, 23]]
    with pytest.raises(ValueError, match="2 feature maps but anchors for 1"):
        AnchorGenerator(((32,),), ((1.0,),))(images, feats)


def test_transform_resizes_pads_and_maps_back():
    t = GeneralizedRCNNTransform(32, 48, [0.5, 0.5, 0.5], [0.25, 0.25, 0.25])
    image = ember.rand(3, 20, 40)
    target = {"boxes": ember.tensor([[4.0, 2.0, 20.0, 10.0]]), "labels": ember.tensor([1]),
              "masks": ember.ones(1, 20, 40, dtype=ember.uint8)}
    images, targets = t([image, ember.rand(3, 30, 30)], [target, dict(target)])
    # short side 32 would make the long side 64 > 48: the long side is 48
    assert images.image_sizes == [(24, 48), (32, 32)]
    assert tuple(images.tensors.shape) == (2, 3, 32, 64)  # padded to multiples of 32
    np.testing.assert_allclose(targets[0]["boxes"].numpy(), [[4.8, 2.4, 24.0, 12.0]],
                               rtol=1e-6)
    assert tuple(targets[0]["masks"].shape) == (1, 24, 48)
    assert tuple(target["boxes"].tolist()[0]) == (4.0, 2.0, 20.0, 10.0)  # caller's dict kept
    normalized = (image - 0.5) / 0.25
    resized = torch.nn.functional.interpolate(torch.tensor(normalized.numpy())[None],
                                              scale_factor=1.2, mode="bilinear",
                                              recompute_scale_factor=True,
                                              align_corners=False)[0]
    np.testing.assert_allclose(images.tensors[0, :, :24, :48].numpy(), resized.numpy(),
                               rtol=1e-5, atol=1e-5)
    assert float(images.tensors[0, :, 24:].abs().sum()) == 0.0
    t.eval()
    out = t.postprocess([{"boxes": ember.tensor([[4.8, 2.4, 24.0, 12.0]])}], [(24, 48)],
                        [(20, 40)])
    np.testing.assert_allclose(out[0]["boxes"].numpy(), [[4.0, 2.0, 20.0, 10.0]], rtol=1e-6)
    assert resize_boxes(ember.tensor([[1.0, 2.0, 3.0, 4.0]]), (10, 10), (20, 5)).tolist() == [
        [0.5, 4.0, 1.5, 8.0]]
    with pytest.raises(TypeError, match="floating point"):
        t([ember.zeros(3, 8, 8, dtype=ember.uint8)])


def torch_fpn(inputs, fpn):
    """torchvision's top-down pathway in plain torch, with the Ember module's weights."""
    def conv(block, x):
        c = block[0]
        return torch.nn.functional.conv2d(x, torch.tensor(c.weight.detach().numpy()),
                                          torch.tensor(c.bias.detach().numpy()), padding=c.padding)
    xs = [torch.tensor(v.numpy()) for v in inputs]
    last = conv(fpn.inner_blocks[-1], xs[-1])
    results = [conv(fpn.layer_blocks[-1], last)]
    for i in range(len(xs) - 2, -1, -1):
        lateral = conv(fpn.inner_blocks[i], xs[i])
        last = lateral + torch.nn.functional.interpolate(last, size=lateral.shape[-2:],
                                                         mode="nearest")
        results.insert(0, conv(fpn.layer_blocks[i], last))
    results.append(torch.nn.functional.max_pool2d(results[-1], 1, 2, 0))
    return results


def test_feature_pyramid_against_torch():
    fpn = ops.FeaturePyramidNetwork([4, 6, 8], 5, extra_blocks=ops.LastLevelMaxPool())
    assert [k for k, _ in fpn.state_dict().items()][:2] == ["inner_blocks.0.0.weight",
                                                          "inner_blocks.0.0.bias"]
    inputs = [ember.randn(2, 4, 13, 11), ember.randn(2, 6, 7, 6), ember.randn(2, 8, 3, 3)]
    out = fpn(OrderedDict(zip("abc", inputs)))
    assert list(out) == ["a", "b", "c", "pool"]
    for got, want in zip(out.values(), torch_fpn(inputs, fpn)):
        np.testing.assert_allclose(got.detach().numpy(), want.numpy(), rtol=1e-4, atol=1e-5)
    p6p7 = ops.LastLevelP6P7(8, 5)
    results, names = p6p7([out["c"]], [inputs[-1]], ["c"])
    assert names == ["c", "p6", "p7"] and not p6p7.use_P5  # reads C5 when the widths differ
    assert tuple(results[1].shape) == (2, 5, 2, 2) and tuple(results[2].shape) == (2, 5, 1, 1)
    with pytest.raises(ValueError, match="in_channels=0"):
        ops.FeaturePyramidNetwork([0, 4], 5)


def test_multiscale_roi_align_picks_levels_and_has_gradients():
    pool = ops.MultiScaleRoIAlign(["0", "1", "skip"], 2, 2)
    feats = OrderedDict([("0", ember.randn(1, 3, 32, 32, dtype=ember.float64)),
                         ("1", ember.randn(1, 3, 16, 16, dtype=ember.float64)),
                         ("other", ember.randn(1, 3, 8, 8, dtype=ember.float64))])
    # sides 20 and 120 on a 128 image: levels floor(4 + log2(s / 224)) = 0 and 3, clamped to
    # the present levels 2 (scale 1/4) and 3 (scale 1/8)
    boxes = [ember.tensor([[0.0, 0, 120, 120], [4.0, 4, 24, 24]], dtype=ember.float64)]
    out = pool(feats, boxes, [(128, 128)])
    assert tuple(out.shape) == (2, 3, 2, 2)
    np.testing.assert_allclose(
        out[0].numpy(), ops.roi_align(feats["1"], [boxes[0][:1]], 2, 1 / 8, 2)[0].numpy())
    np.testing.assert_allclose(
        out[1].numpy(), ops.roi_align(feats["0"], [boxes[0][1:]], 2, 1 / 4, 2)[0].numpy())

    a = ember.randn(1, 2, 8, 8, dtype=ember.float64, requires_grad=True)
    b = ember.randn(1, 2, 4, 4, dtype=ember.float64, requires_grad=True)
    two = [ember.tensor([[0.0, 0, 30, 30], [1.0, 2, 9, 7]], dtype=ember.float64)]
    assert ember.autograd.gradcheck(
        lambda a, b: pool(OrderedDict([("0", a), ("1", b)]), two, [(32, 32)]), (a, b))
    with pytest.raises(KeyError, match="none of the maps"):
        pool({"x": feats["0"]}, boxes, [(128, 128)])


def test_backbone_with_fpn_names_and_freezing():
    from ember.vision.models.detection.backbone_utils import (
        IntermediateLayerGetter,
        mobilenet_backbone,
        resnet_fpn_backbone,
    )
    fpn = resnet_fpn_backbone(backbone_name="resnet18", trainable_layers=2,
                              returned_layers=[2, 4], norm_layer=nn.BatchNorm2d)
    out = fpn(ember.randn(1, 3, 64, 64))
    assert [(k, tuple(v.shape)) for k, v in out.items()] == [
        ("0", (1, 256, 8, 8)), ("1", (1, 256, 2, 2)), ("pool", (1, 256, 1, 1))]
    trainable = {n.split(".")[0] for n, p in fpn.body.named_parameters() if p.requires_grad}
    assert trainable == {"layer3", "layer4"}
    assert "fc" not in dict(fpn.body.named_children())  # the getter stops at layer4
    net = mobilenet_backbone(backbone_name="mobilenet_v3_large", fpn=False, trainable_layers=0)
    assert net.out_channels == 256 and not any(p.requires_grad for p in net[0].parameters())
    with pytest.raises(ValueError, match="not among its children"):
        IntermediateLayerGetter(nn.Sequential(nn.ReLU()), {"5": "x"})
    with pytest.raises(ValueError, match=r"range \[0,5\]"):
        resnet_fpn_backbone(backbone_name="resnet18", trainable_layers=6)


def test_rpn_keeps_the_top_anchors_per_level_then_suppresses():
    from ember.vision.models.detection.rpn import RegionProposalNetwork, RPNHead
    rpn = RegionProposalNetwork(AnchorGenerator(((8,),), ((1.0,),)), RPNHead(1, 1), 0.7, 0.3,
                                4, 0.5, {"training": 2, "testing": 2},
                                {"training": 3, "testing": 3}, 0.5).eval()
    proposals = ember.tensor([[[0.0, 0, 10, 10], [1.0, 1, 10, 10], [20.0, 20, 30, 30],
                               [0.0, 0, 5, 5], [40.0, 40, 50, 50], [0.0, 0, 1e-4, 5]]])
    # level 0: anchors 0-2, level 1: anchors 3-5; the two best of each level survive
    logits = ember.tensor([3.0, 2.0, 1.0, 0.5, 0.0, 9.0])
    boxes, scores = rpn.filter_proposals(proposals, logits, [(32, 32)], [3, 3])
    # level 0 keeps 0 and 1, NMS drops 1 (IoU 0.81); level 1 keeps 5 (too thin: dropped) and
    # 3, not 4; NMS runs per level, so 3 (inside 0) stays
    assert boxes[0].tolist() == [[0.0, 0.0, 10.0, 10.0], [0.0, 0.0, 5.0, 5.0]]
    expected = torch.sigmoid(torch.tensor([3.0, 0.5])).tolist()
    assert np.allclose(scores[0].tolist(), expected)


def test_box_head_losses_and_detections_against_torch():
    from ember.vision.models.detection.roi_heads import RoIHeads, fastrcnn_loss
    logits = RNG.normal(size=(5, 3)).astype(np.float32)
    deltas = RNG.normal(size=(5, 12)).astype(np.float32)
    labels = np.array([0, 2, 1, 0, 2])
    targets = RNG.normal(size=(5, 4)).astype(np.float32)
    cls, box = fastrcnn_loss(ember.tensor(logits), ember.tensor(deltas),
                             [ember.tensor(labels[:2]), ember.tensor(labels[2:])],
                             [ember.tensor(targets[:2]), ember.tensor(targets[2:])])
    t_cls = torch.nn.functional.cross_entropy(torch.tensor(logits), torch.tensor(labels))
    pos = labels > 0
    chosen = torch.tensor(deltas).reshape(5, 3, 4)[torch.tensor(np.flatnonzero(pos)),
                                                    torch.tensor(labels[pos])]
    t_box = torch.nn.functional.smooth_l1_loss(chosen, torch.tensor(targets[pos]), beta=1 / 9,
                                               reduction="sum") / 5
    assert np.isclose(float(cls), float(t_cls), rtol=1e-5)
    assert np.isclose(float(box), float(t_box), rtol=1e-5)

    heads = RoIHeads(None, None, None, 0.5, 0.5, 4, 0.25, None, score_thresh=0.3,
                     nms_thresh=0.5, detections_per_img=2)
    proposals = [ember.tensor([[0.0, 0, 10, 10], [1.0, 0, 10, 10], [20.0, 20, 30, 40]])]
    class_logits = ember.tensor([[0.0, 3.0, 0.0], [0.0, 2.5, 0.0], [0.0, 0.0, 4.0]])
    boxes, scores, classes = heads.postprocess_detections(class_logits, ember.zeros(3, 12),
                                                          proposals, [(32, 32)])
    # class 2 on proposal 2 (clipped to the image), then class 1 on proposal 0; proposal 1
    # overlaps 0 too much for class 1, and every background or low score is gone
    assert classes[0].tolist() == [2, 1]
    assert boxes[0].tolist() == [[20.0, 20.0, 30.0, 32.0], [0.0, 0.0, 10.0, 10.0]]
    want = torch.softmax(torch.tensor([[0.0, 0.0, 4.0], [0.0, 3.0, 0.0]]), 1)[[0, 1], [2, 1]]
    assert np.allclose(scores[0].tolist(), want.tolist())


def test_mask_loss_against_torch():
    from ember.vision.models.detection.roi_heads import maskrcnn_inference, maskrcnn_loss
    logits = RNG.normal(size=(2, 3, 4, 4)).astype(np.float32)
    gt = np.zeros((1, 16, 16), np.uint8)
    gt[0, 4:12, 4:12] = 1
    boxes = ember.tensor([[4.0, 4, 12, 12], [0.0, 0, 8, 8]])
    loss = maskrcnn_loss(ember.tensor(logits), [boxes], [ember.tensor(gt)],
                         [ember.tensor([2])], [ember.tensor([0, 0])])
    # the targets: the mask cropped to each box and resampled 4×4 (RoI Align, as torchvision)
    crops = ops.roi_align(ember.tensor(gt[:, None].astype(np.float32)),
                          ember.cat([ember.zeros(2, 1), boxes], 1), (4, 4), 1.0)[:, 0]
    assert float(crops[0].mean()) > 0.8 and float(crops[1, 0, 0]) == 0.0
    want = torch.nn.functional.binary_cross_entropy_with_logits(
        torch.tensor(logits[:, 2]), torch.tensor(crops.numpy()))
    assert np.isclose(float(loss), float(want), rtol=1e-5)
    probs = maskrcnn_inference(ember.tensor(logits), [ember.tensor([1]), ember.tensor([2])])
    assert [tuple(p.shape) for p in probs] == [(1, 1, 4, 4), (1, 1, 4, 4)]
    np.testing.assert_allclose(probs[1][0, 0].numpy(),
                               torch.sigmoid(torch.tensor(logits[1, 2])).numpy(), rtol=1e-6)


def test_resize_boxes_of_integer_boxes_scales_in_floating_point():
    # torchvision's ratios are float32 tensors: integer boxes come back float, not truncated
    boxes = ember.tensor([[1, 2, 3, 4]])
    out = resize_boxes(boxes, (10, 10), (15, 25))
    assert out.dtype == ember.float32
    assert out.tolist() == [[2.5, 3.0, 7.5, 6.0]]
    wide = resize_boxes(ember.tensor([[1.0, 2.0, 3.0, 4.0]], dtype=ember.float64), (3, 7),
                        (800, 1100))
    expected = torch.tensor([[1.0, 2.0, 3.0, 4.0]], dtype=torch.float64) * (
        torch.tensor([1100.0, 800.0, 1100.0, 800.0]) / torch.tensor([7.0, 3.0, 7.0, 3.0]))
    assert wide.dtype == ember.float64
    np.testing.assert_array_equal(wide.numpy(), expected.numpy())
