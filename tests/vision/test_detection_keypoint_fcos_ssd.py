"""Keypoint R-CNN, FCOS, SSD and SSDlite: torchvision's published parameter counts and
state-dict names; for Keypoint R-CNN and FCOS the train/eval contract on tiny models (losses
fall on one synthetic box, detections in the input's pixels), clear errors, and the pure-math
cores (heatmap coding, FCOS assignment and centerness) against plain-torch transcriptions of
torchvision's formulas on the same inputs. SSD's own tests are in ``test_detection_ssd``."""

import math

import numpy as np
import pytest
import torch

import ember
from ember import nn
from ember.nn import init
from ember.vision import models
from ember.vision.models import detection
from ember.vision.models.detection import (
    FCOS,
    FCOSHead,
    KeypointRCNN,
    KeypointRCNNHeads,
    KeypointRCNNPredictor,
)
from ember.vision.models.detection._utils import BoxLinearCoder
from ember.vision.models.detection.anchor_utils import AnchorGenerator
from ember.vision.models.detection.fcos import centerness, match_positions
from ember.vision.models.detection.image_list import ImageList
from ember.vision.models.detection.roi_heads import (
    heatmaps_to_keypoints,
    keypointrcnn_loss,
    keypoints_to_heatmap,
)
from ember.vision.ops import MultiScaleRoIAlign

RNG = np.random.default_rng(0)
# torchvision's published num_params of each builder's COCO weights
PARAMS = {"keypointrcnn_resnet50_fpn": 59_137_258, "fcos_resnet50_fpn": 32_269_600,
          "ssd300_vgg16": 35_641_826, "ssdlite320_mobilenet_v3_large": 3_440_060}
BOX = [12.0, 16.0, 44.0, 52.0]


def one_box(keypoints=False):
    target = {"boxes": ember.tensor([BOX]), "labels": ember.tensor([1])}
    if keypoints:  # three keypoints, the last one not labelled
        target["keypoints"] = ember.tensor([[[20.0, 24.0, 1.0], [36.0, 44.0, 1.0],
                                             [0.0, 0.0, 0.0]]])
    return target


def train(model, target, steps, lr):
    ember.manual_seed(0)
    image = ember.rand(3, 64, 64)
    optimizer = ember.optim.SGD([p for p in model.parameters() if p.requires_grad], lr=lr,
                                momentum=0.9)
    history = []
    for _ in range(steps):
        losses = model([image], [target])
        assert all(math.isfinite(float(v)) for v in losses.values()), losses
        optimizer.zero_grad()
        sum(losses.values()).backward()
        optimizer.step()
        history.append({k: float(v) for k, v in losses.items()})
    return history, list(losses)


def check_detections(model, extra_keys=()):
    model.eval()
    with ember.no_grad():
        out = model([ember.rand(3, 64, 64), ember.rand(3, 40, 56)])
    assert len(out) == 2
    for det, (h, w) in zip(out, [(64, 64), (40, 56)]):
        assert sorted(det) == sorted(["boxes", "labels", "scores", *extra_keys])
        n = len(det["boxes"])
        assert tuple(det["boxes"].shape) == (n, 4) and tuple(det["scores"].shape) == (n,)
        assert det["labels"].dtype == ember.int64
        if n:  # in the original image's pixels
            assert float(det["boxes"][:, 2].max()) <= w + 1e-4
            assert float(det["boxes"][:, 3].max()) <= h + 1e-4
            assert float(det["boxes"].min()) >= 0.0
    return out


def tiny_trunk(channels=16):
    trunk = nn.Sequential(nn.Conv2d(3, channels, 3, stride=2, padding=1), nn.ReLU(),
                          nn.Conv2d(channels, channels, 3, stride=2, padding=1), nn.ReLU())
    trunk.out_channels = channels
    return trunk


# --- parameter counts and names --------------------------------------------------------------

@pytest.fixture(scope="module")
def builders():
    with init.skipping():
        return {name: models.get_model(name) for name in PARAMS}


@pytest.mark.parametrize("name", sorted(PARAMS))
def test_parameter_count_is_torchvisions(builders, name):
    model = builders[name]
    total = sum(p.numel() for p in model.parameters())
    if "resnet" in name:  # torchvision's figure counts frozen batch norms: buffers there
        total -= sum(p.numel() for m in model.modules() if isinstance(m, nn.BatchNorm2d)
                     for p in m.parameters())
    assert total == PARAMS[name]


def test_state_dict_names_are_torchvisions(builders):
    def shapes(name):
        return {k: tuple(v.shape) for k, v in builders[name].state_dict().items()}

    keypoint = shapes("keypointrcnn_resnet50_fpn")
    assert [k for k in keypoint if "keypoint" in k] == [
        *[f"roi_heads.keypoint_head.{i}.{p}" for i in range(0, 16, 2) for p in ("weight", "bias")],
        "roi_heads.keypoint_predictor.kps_score_lowres.weight",
        "roi_heads.keypoint_predictor.kps_score_lowres.bias"]
    assert keypoint["roi_heads.keypoint_predictor.kps_score_lowres.weight"] == (512, 17, 4, 4)
    assert keypoint["roi_heads.box_predictor.cls_score.weight"] == (2, 1024)
    fcos = shapes("fcos_resnet50_fpn")
    for key, shape in {"head.classification_head.conv.0.weight": (256, 256, 3, 3),
                       "head.classification_head.conv.1.weight": (256,),  # GroupNorm
                       "head.classification_head.conv.9.bias": (256,),
                       "head.classification_head.cls_logits.weight": (91, 256, 3, 3),
                       "head.regression_head.bbox_reg.weight": (4, 256, 3, 3),
                       "head.regression_head.bbox_ctrness.weight": (1, 256, 3, 3),
                       "backbone.fpn.extra_blocks.p7.weight": (256, 256, 3, 3),
                       "backbone.fpn.inner_blocks.0.0.weight": (256, 512, 1, 1)}.items():
        assert fcos[key] == shape, key
    ssd = shapes("ssd300_vgg16")
    assert list(ssd)[0] == "backbone.scale_weight" and ssd["backbone.scale_weight"] == (512,)
    for key, shape in {"backbone.features.21.weight": (512, 512, 3, 3),  # conv4_3
                       "backbone.extra.0.1.weight": (512, 512, 3, 3),  # conv5_1
                       "backbone.extra.0.7.1.weight": (1024, 512, 3, 3),  # fc6
                       "backbone.extra.0.7.3.weight": (1024, 1024, 1, 1),  # fc7
                       "backbone.extra.4.2.weight": (256, 128, 3, 3),
                       "head.classification_head.module_list.0.weight": (4 * 91, 512, 3, 3),
                       "head.regression_head.module_list.1.weight": (6 * 4, 1024, 3, 3),
                       "head.regression_head.module_list.5.bias": (16,)}.items():
        assert ssd[key] == shape, key
    assert not any(k.startswith("backbone.features.23") for k in ssd)  # pool4 starts extra.0
    lite = shapes("ssdlite320_mobilenet_v3_large")
    for key, shape in {"backbone.features.0.0.0.weight": (16, 3, 3, 3),
                       "backbone.features.0.13.0.weight": (672, 112, 1, 1),  # C4 expansion
                       "backbone.features.1.0.1.0.weight": (672, 1, 5, 5),  # C4 depthwise
                       "backbone.features.1.3.0.weight": (480, 80, 1, 1),  # reduced tail
                       "backbone.extra.0.0.0.weight": (256, 480, 1, 1),
                       "backbone.extra.3.2.1.running_var": (128,),
                       "head.classification_head.module_list.0.0.0.weight": (672, 1, 3, 3),
                       "head.classification_head.module_list.0.1.weight": (6 * 91, 672, 1, 1),
                       "head.regression_head.module_list.5.1.weight": (24, 128, 1, 1)}.items():
        assert lite[key] == shape, key


def test_builder_defaults_are_torchvisions(builders):
    keypoint = builders["keypointrcnn_resnet50_fpn"]
    assert keypoint.transform.min_size == (640, 672, 704, 736, 768, 800)
    assert keypoint.roi_heads.keypoint_roi_pool.output_size == (14, 14)
    fcos = builders["fcos_resnet50_fpn"]
    assert (fcos.score_thresh, fcos.nms_thresh, fcos.center_sampling_radius) == (0.2, 0.6, 1.5)
    assert fcos.anchor_generator.sizes == ((8,), (16,), (32,), (64,), (128,))
    ssd = builders["ssd300_vgg16"]
    assert ssd.transform.fixed_size == (300, 300) and ssd.neg_to_pos_ratio == 3.0
    assert ssd.anchor_generator.num_anchors_per_location() == [4, 6, 6, 6, 4, 4]
    lite = builders["ssdlite320_mobilenet_v3_large"]
    assert (lite.score_thresh, lite.nms_thresh, lite.topk_candidates) == (0.001, 0.55, 300)
    assert lite.transform.image_mean == [0.5, 0.5, 0.5]
    assert lite.backbone.out_channels == [672, 480, 512, 256, 256, 128]
    assert models.list_models(detection, include=["keypoint*", "fcos*", "ssd*"]) == sorted(
        PARAMS)


def test_ssd300_feature_maps_have_the_papers_sizes():
    with ember.device("meta"):  # shapes only
        maps = detection.ssd300_vgg16(num_classes=3).backbone(ember.zeros(1, 3, 300, 300))
    assert [tuple(m.shape[1:]) for m in maps.values()] == [
        (512, 38, 38), (1024, 19, 19), (512, 10, 10), (256, 5, 5), (256, 3, 3), (256, 1, 1)]


# --- Keypoint R-CNN ----------------------------------------------------------------------------

def tiny_keypoint_rcnn(num_keypoints=3):
    return KeypointRCNN(
        tiny_trunk(), 2, min_size=64, max_size=64,
        rpn_anchor_generator=AnchorGenerator(((16, 32),), ((0.5, 1.0, 2.0),)),
        rpn_pre_nms_top_n_train=100, rpn_post_nms_top_n_train=30, rpn_pre_nms_top_n_test=50,
        rpn_post_nms_top_n_test=10, box_batch_size_per_image=16,
        box_roi_pool=MultiScaleRoIAlign(["0"], 5, 2),
        keypoint_roi_pool=MultiScaleRoIAlign(["0"], 7, 2),
        keypoint_head=KeypointRCNNHeads(16, [16, 16]),
        keypoint_predictor=KeypointRCNNPredictor(16, num_keypoints))


def test_keypoint_rcnn_learns_one_box_and_outputs_keypoints():
    ember.manual_seed(0)
    model = tiny_keypoint_rcnn()
    history, keys = train(model, one_box(keypoints=True), 10, 0.02)
    assert keys == ["loss_classifier", "loss_box_reg", "loss_keypoint", "loss_objectness",
                    "loss_rpn_box_reg"]
    # (the box loss starts near 0: the first proposals miss the box; it grows as they find it)
    first, last = history[0], history[-1]
    assert last["loss_keypoint"] < 0.95 * first["loss_keypoint"], history
    assert all(b["loss_keypoint"] < a["loss_keypoint"] for a, b in zip(history, history[1:]))
    for key in ("loss_classifier", "loss_objectness"):
        assert last[key] < first[key], history
    model.roi_heads.score_thresh = 0.0  # keep what a barely trained model finds
    out = check_detections(model, ("keypoints", "keypoints_scores"))
    assert len(out[0]["boxes"]) > 0
    for det in out:
        n = len(det["boxes"])
        assert tuple(det["keypoints"].shape) == (n, 3, 3)
        assert tuple(det["keypoints_scores"].shape) == (n, 3)
        if n:  # each keypoint lies in its box, in the input's pixels, visibility 1
            points, boxes = det["keypoints"], det["boxes"]
            assert bool((points[..., 0] >= boxes[:, None, 0] - 1e-3).all())
            assert bool((points[..., 0] <= boxes[:, None, 2] + 1e-3).all())
            assert bool((points[..., 1] <= boxes[:, None, 3] + 1e-3).all())
            assert bool((points[..., 2] == 1).all())


def test_keypoint_rcnn_errors():
    model = tiny_keypoint_rcnn()
    image = ember.rand(3, 64, 64)
    with pytest.raises(ValueError, match="'keypoints'"):
        model([image], [one_box()])
    bad = one_box(keypoints=True)
    bad["keypoints"] = bad["keypoints"].to(ember.int64)
    with pytest.raises(TypeError, match="keypoints must be of float type"):
        model([image], [bad])
    bad["keypoints"] = ember.zeros(2, 3, 3)
    with pytest.raises(ValueError, match=r"\(N, K, 3\).*1 boxes.*\(2, 3, 3\)"):
        model([image], [bad])
    bad["keypoints"] = ember.zeros(1, 5, 3)  # the predictor makes 3 heatmaps, not 5
    with pytest.raises(ValueError, match="5 keypoints per box but the predictor makes 3"):
        model([image], [bad])
    with pytest.raises(ValueError, match="num_keypoints should be None"):
        KeypointRCNN(tiny_trunk(), 2, num_keypoints=3,
                     keypoint_predictor=KeypointRCNNPredictor(16, 3))
    with pytest.raises(TypeError, match="MultiScaleRoIAlign"):
        KeypointRCNN(tiny_trunk(), 2, keypoint_roi_pool=nn.ReLU())


def torch_keypoints_to_heatmap(keypoints, rois, size):
    x0, y0 = rois[:, 0][:, None], rois[:, 1][:, None]
    sx = size / (rois[:, 2] - rois[:, 0])[:, None]
    sy = size / (rois[:, 3] - rois[:, 1])[:, None]
    x, y = keypoints[..., 0], keypoints[..., 1]
    xi = ((x - x0) * sx).floor().long()
    yi = ((y - y0) * sy).floor().long()
    xi[x == rois[:, 2][:, None]] = size - 1
    yi[y == rois[:, 3][:, None]] = size - 1
    valid = ((xi >= 0) & (yi >= 0) & (xi < size) & (yi < size) & (keypoints[..., 2] > 0)).long()
    return (yi * size + xi) * valid, valid


def test_keypoints_to_heatmap_against_torch():
    rois = np.array([[4.0, 6.0, 30.0, 40.0], [0.0, 0.0, 16.0, 16.0]], np.float32)
    keypoints = np.concatenate([RNG.uniform(-5, 45, (2, 9, 2)),
                                RNG.integers(0, 3, (2, 9, 1))], 2).astype(np.float32)
    keypoints[0, 0, :2] = [30.0, 40.0]  # on the right and bottom edges: the last cell
    cells, valid = keypoints_to_heatmap(ember.tensor(keypoints), ember.tensor(rois), 56)
    want_cells, want_valid = torch_keypoints_to_heatmap(torch.tensor(keypoints),
                                                        torch.tensor(rois), 56)
    assert cells.tolist() == want_cells.tolist() and valid.tolist() == want_valid.tolist()
    assert int(cells[0, 0]) == 56 * 56 - 1 or int(valid[0, 0]) == 0


def test_keypoint_loss_against_torch():
    logits = RNG.standard_normal((3, 4, 8, 8)).astype(np.float32)
    proposals = [np.array([[2.0, 2.0, 30.0, 26.0], [0.0, 4.0, 20.0, 40.0]], np.float32),
                 np.array([[5.0, 5.0, 25.0, 25.0]], np.float32)]
    gt = [np.concatenate([RNG.uniform(0, 32, (2, 4, 2)), RNG.integers(0, 2, (2, 4, 1))],
                         2).astype(np.float32),
          np.concatenate([RNG.uniform(0, 32, (1, 4, 2)), np.ones((1, 4, 1))],
                         2).astype(np.float32)]
    matched = [np.array([1, 0]), np.array([0])]
    got = keypointrcnn_loss(ember.tensor(logits), [ember.tensor(p) for p in proposals],
                            [ember.tensor(g) for g in gt], [ember.tensor(m) for m in matched])
    cells, valid = zip(*[torch_keypoints_to_heatmap(torch.tensor(g)[torch.tensor(m)],
                                                    torch.tensor(p), 8)
                         for p, g, m in zip(proposals, gt, matched)])
    cells, rows = torch.cat(cells).reshape(-1), torch.where(torch.cat(valid).reshape(-1))[0]
    want = torch.nn.functional.cross_entropy(torch.tensor(logits).reshape(12, 64)[rows],
                                             cells[rows])
    assert float(got) == pytest.approx(float(want), rel=1e-5)
    # no keypoint counts: a zero loss that still reaches the logits
    none = keypointrcnn_loss(ember.tensor(logits), [ember.tensor(proposals[1])],
                             [ember.zeros(1, 4, 3)], [ember.tensor(matched[1])])
    assert float(none) == 0.0


def torch_heatmaps_to_keypoints(maps, rois):
    widths = (rois[:, 2] - rois[:, 0]).clamp(min=1)
    heights = (rois[:, 3] - rois[:, 1]).clamp(min=1)
    k = maps.shape[1]
    points, scores = torch.zeros(len(rois), k, 3), torch.zeros(len(rois), k)
    for i in range(len(rois)):
        w, h = int(widths[i].ceil()), int(heights[i].ceil())
        m = torch.nn.functional.interpolate(maps[i][:, None], size=(h, w), mode="bicubic",
                                            align_corners=False)[:, 0]
        pos = m.reshape(k, -1).argmax(1)
        xi, yi = pos % w, pos // w
        points[i, :, 0] = (xi.float() + 0.5) * widths[i] / w + rois[i, 0]
        points[i, :, 1] = (yi.float() + 0.5) * heights[i] / h + rois[i, 1]
        points[i, :, 2] = 1
        scores[i] = m[torch.arange(k), yi, xi]
    return points, scores


def test_heatmaps_to_keypoints_against_torch():
    maps = RNG.standard_normal((3, 4, 14, 14)).astype(np.float32)
    rois = np.array([[3.2, 5.5, 29.7, 21.1], [0.0, 0.0, 0.5, 0.4], [10.0, 2.0, 50.3, 61.9]],
                    np.float32)
    points, scores = heatmaps_to_keypoints(ember.tensor(maps), ember.tensor(rois))
    want_points, want_scores = torch_heatmaps_to_keypoints(torch.tensor(maps),
                                                           torch.tensor(rois))
    np.testing.assert_allclose(points.numpy(), want_points.numpy(), rtol=1e-5, atol=1e-4)
    np.testing.assert_allclose(scores.numpy(), want_scores.numpy(), rtol=1e-4, atol=1e-4)
    empty_points, empty_scores = heatmaps_to_keypoints(ember.zeros(0, 4, 14, 14),
                                                       ember.zeros(0, 4))
    assert tuple(empty_points.shape) == (0, 4, 3) and tuple(empty_scores.shape) == (0, 4)


# --- FCOS --------------------------------------------------------------------------------------

def tiny_fcos():
    return FCOS(tiny_trunk(32), 3, min_size=64, max_size=64, topk_candidates=30,
                anchor_generator=AnchorGenerator(((16,),), ((1.0,),)),
                head=FCOSHead(32, 1, 3, num_convs=1))


def test_fcos_learns_one_box_and_detects():
    ember.manual_seed(0)
    model = tiny_fcos()
    history, keys = train(model, one_box(), 10, 0.01)
    assert keys == ["classification", "bbox_regression", "bbox_ctrness"]
    assert sum(history[-1].values()) < 0.8 * sum(history[0].values()), history
    assert history[-1]["bbox_regression"] < history[0]["bbox_regression"]
    model.score_thresh = 0.0
    out = check_detections(model)
    assert all(len(d["boxes"]) <= 100 and int(d["labels"].max()) <= 2 for d in out)
    # an image without objects trains the classifier only
    empty = {"boxes": ember.zeros(0, 4), "labels": ember.zeros(0, dtype=ember.int64)}
    losses = model.train()([ember.rand(3, 64, 64)], [empty])
    assert float(losses["bbox_regression"]) == 0.0 and float(losses["classification"]) > 0


def test_fcos_heads_take_a_norm_layer():
    head = detection.fcos.FCOSClassificationHead(32, 1, 3, num_convs=1, norm_layer=nn.BatchNorm2d)
    assert isinstance(head.conv[1], nn.BatchNorm2d)
    regression = detection.fcos.FCOSRegressionHead(32, 1, num_convs=2)
    assert isinstance(regression.conv[4], nn.GroupNorm) and regression.conv[4].num_groups == 32


def test_fcos_refuses_several_anchors_per_position():
    with pytest.raises(ValueError, match=r"num_anchors_per_location\(\)\[0\] should be 1 "
                                         r"instead of 2"):
        FCOS(tiny_trunk(32), 3, anchor_generator=AnchorGenerator(((16, 32),), ((1.0,),)))


def torch_match_positions(anchors, gt, counts, radius):
    gt_c = (gt[:, :2] + gt[:, 2:]) / 2
    c = (anchors[:, :2] + anchors[:, 2:]) / 2
    size = anchors[:, 2] - anchors[:, 0]
    match = (c[:, None, :] - gt_c[None]).abs().max(2).values < radius * size[:, None]
    x, y = c[:, 0:1], c[:, 1:2]
    dist = torch.stack([x - gt[None, :, 0], y - gt[None, :, 1], gt[None, :, 2] - x,
                        gt[None, :, 3] - y], 2)
    match &= dist.min(2).values > 0
    lower, upper = size * 4, size * 8
    lower[:counts[0]] = 0
    upper[-counts[-1]:] = float("inf")
    reach = dist.max(2).values
    match &= (reach > lower[:, None]) & (reach < upper[:, None])
    area = (gt[:, 2] - gt[:, 0]) * (gt[:, 3] - gt[:, 1])
    best, idx = (match * (1e8 - area[None])).max(1)
    idx[best < 1e-5] = -1
    return idx


def test_fcos_assignment_centerness_and_coder_against_torch():
    gen = AnchorGenerator(((8,), (16,), (32,)), ((1.0,),) * 3)
    maps = [ember.zeros(1, 1, 16, 16), ember.zeros(1, 1, 8, 8), ember.zeros(1, 1, 4, 4)]
    anchors = gen(ImageList(ember.zeros(1, 3, 128, 128), [(128, 128)]), maps)[0]
    counts = [256, 64, 16]
    xy = RNG.uniform(0, 90, (6, 2))
    gt = np.concatenate([xy, xy + RNG.uniform(4, 100, (6, 2))], 1).astype(np.float32)
    matched = match_positions(anchors, ember.tensor(gt), counts, 1.5)
    want = torch_match_positions(torch.tensor(anchors.numpy()), torch.tensor(gt), counts, 1.5)
    assert matched.tolist() == want.tolist() and int((want >= 0).sum()) > 10
    assert len(set(matched.tolist()) - {-1}) > 1  # several boxes claim positions

    rows = ember.where(matched >= 0)[0]
    coder = BoxLinearCoder(normalize_by_size=True)
    a, g = anchors[rows], ember.tensor(gt)[matched[rows]]
    codes = coder.encode(a, g)
    ta, tg = torch.tensor(a.numpy()), torch.tensor(g.numpy())
    tc = (ta[:, :2] + ta[:, 2:]) / 2
    twh = (ta[:, 2:] - ta[:, :2]).repeat(1, 2)
    want_codes = torch.cat([tc - tg[:, :2], tg[:, 2:] - tc], 1) / twh
    np.testing.assert_allclose(codes.numpy(), want_codes.numpy(), rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(coder.decode(codes, a).numpy(), g.numpy(), atol=1e-4)
    lr, tb = want_codes[:, [0, 2]], want_codes[:, [1, 3]]
    want_ctr = torch.sqrt(lr.min(1).values / lr.max(1).values
                          * tb.min(1).values / tb.max(1).values)
    np.testing.assert_allclose(centerness(codes).numpy(), want_ctr.numpy(), rtol=1e-5)


def torch_giou_loss(b1, b2, eps=1e-7):
    lt, rb = torch.max(b1[:, :2], b2[:, :2]), torch.min(b1[:, 2:], b2[:, 2:])
    inter = (rb - lt).clamp(min=0).prod(1)
    union = (b1[:, 2:] - b1[:, :2]).prod(1) + (b2[:, 2:] - b2[:, :2]).prod(1) - inter
    hull = (torch.max(b1[:, 2:], b2[:, 2:]) - torch.min(b1[:, :2], b2[:, :2])).prod(1)
    return 1 - (inter / (union + eps) - (hull - union) / (hull + eps))


def test_fcos_head_loss_against_torch():
    gen = AnchorGenerator(((8,), (16,)), ((1.0,),) * 2)
    anchors = gen(ImageList(ember.zeros(2, 3, 64, 64), [(64, 64)] * 2),
                  [ember.zeros(1, 1, 8, 8), ember.zeros(1, 1, 4, 4)])
    xy = RNG.uniform(0, 30, (4, 2))
    gt = np.concatenate([xy, xy + RNG.uniform(6, 30, (4, 2))], 1).astype(np.float32)
    targets = [{"boxes": ember.tensor(gt), "labels": ember.tensor([0, 2, 1, 2])},
               {"boxes": ember.zeros(0, 4), "labels": ember.zeros(0, dtype=ember.int64)}]
    matched = [match_positions(anchors[0], targets[0]["boxes"], [64, 16], 1.5),
               ember.full((80,), -1, dtype=ember.int64)]
    outputs = {"cls_logits": RNG.standard_normal((2, 80, 3)),
               "bbox_regression": np.abs(RNG.standard_normal((2, 80, 4))),
               "bbox_ctrness": RNG.standard_normal((2, 80, 1))}
    outputs = {k: v.astype(np.float32) for k, v in outputs.items()}
    got = FCOSHead(8, 1, 3, num_convs=0).compute_loss(
        targets, {k: ember.tensor(v) for k, v in outputs.items()}, anchors, matched)

    a = torch.tensor(anchors[0].numpy()).expand(2, -1, -1)
    m = torch.stack([torch.tensor(x.numpy()) for x in matched])
    classes = torch.where(m >= 0, torch.tensor([0, 2, 1, 2])[m.clamp(min=0)], -1)
    boxes = torch.tensor(gt)[m.clamp(min=0)]
    fg = classes >= 0
    logits, deltas, ctr = (torch.tensor(outputs[k]) for k in outputs)
    one_hot = torch.zeros_like(logits)
    one_hot[fg, classes[fg]] = 1.0
    p = logits.sigmoid()
    p_t = p * one_hot + (1 - p) * (1 - one_hot)
    focal = (0.25 * one_hot + 0.75 * (1 - one_hot)) * (1 - p_t) ** 2 * (
        torch.nn.functional.binary_cross_entropy_with_logits(logits, one_hot, reduction="none"))
    centre, size = (a[..., :2] + a[..., 2:]) / 2, (a[..., 2:] - a[..., :2]).repeat(1, 1, 2)
    decoded = torch.cat([centre, centre], 2) + deltas * size * torch.tensor([-1, -1, 1, 1])
    codes = torch.cat([centre - boxes[..., :2], boxes[..., 2:] - centre], 2) / size
    lr, tb = codes[..., 0::2], codes[..., 1::2]
    wanted_ctr = (lr.min(-1).values / lr.max(-1).values * tb.min(-1).values
                  / tb.max(-1).values).sqrt()
    n = fg.sum()
    want = {"classification": focal.sum() / n,
            "bbox_regression": torch_giou_loss(decoded[fg], boxes[fg]).sum() / n,
            "bbox_ctrness": torch.nn.functional.binary_cross_entropy_with_logits(
                ctr[..., 0][fg], wanted_ctr[fg], reduction="sum") / n}
    assert int(n) > 3
    for key, value in want.items():
        assert float(got[key]) == pytest.approx(float(value), rel=1e-5), key
