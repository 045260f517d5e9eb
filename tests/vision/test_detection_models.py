"""ember.vision.models.detection: torchvision's published parameter counts and state-dict
names (old checkpoint names too), the train/eval contract (losses in training, per-image
detections in eval, in the input's pixels), training on a synthetic box, and the errors."""

import math
import re

import pytest

import ember
from ember import nn
from ember.nn import init
from ember.vision import models
from ember.vision.models import detection
from ember.vision.models.detection import (
    FasterRCNN,
    MaskRCNN,
    MaskRCNNHeads,
    MaskRCNNPredictor,
    RetinaNet,
)
from ember.vision.models.detection.anchor_utils import AnchorGenerator
from ember.vision.ops import MultiScaleRoIAlign

# torchvision's published num_params of each builder's COCO weights (frozen batch norms)
PARAMS = {"fasterrcnn_resnet50_fpn": 41_755_286,
          "fasterrcnn_mobilenet_v3_large_fpn": 19_386_354,
          "maskrcnn_resnet50_fpn": 44_401_393, "retinanet_resnet50_fpn": 34_014_999}
SMALL = {"min_size": 64, "max_size": 64, "rpn_pre_nms_top_n_train": 100,
         "rpn_post_nms_top_n_train": 50, "rpn_pre_nms_top_n_test": 50,
         "rpn_post_nms_top_n_test": 20, "box_batch_size_per_image": 16}


def one_box_target(masks=False):
    target = {"boxes": ember.tensor([[12.0, 16.0, 44.0, 52.0]]), "labels": ember.tensor([1])}
    if masks:
        target["masks"] = ember.zeros(1, 64, 64, dtype=ember.uint8)
        target["masks"][0, 16:52, 12:44] = 1
    return target


@pytest.mark.parametrize("name", sorted(PARAMS))
def test_parameter_count_and_names_are_torchvisions(name):
    with init.skipping():
        model = models.get_model(name)
    # untrained backbones get batch norms, whose affine parameters are buffers once frozen
    frozen = sum(p.numel() for m in model.modules() if isinstance(m, nn.BatchNorm2d)
                 for p in m.parameters())
    assert sum(p.numel() for p in model.parameters()) - frozen == PARAMS[name]
    keys = list(model.state_dict())
    assert keys[0] == ("backbone.body.conv1.weight" if "resnet" in name
                       else "backbone.body.0.0.weight")
    if name.startswith("retinanet"):
        assert [k for k in keys if k.startswith("head.regression_head")] == [
            *[f"head.regression_head.conv.{i}.0.{p}" for i in range(4)
              for p in ("weight", "bias")],
            "head.regression_head.bbox_reg.weight", "head.regression_head.bbox_reg.bias"]
        assert "backbone.fpn.extra_blocks.p7.bias" in keys
        assert tuple(model.state_dict()["head.classification_head.cls_logits.weight"].shape) == (
            9 * 91, 256, 3, 3)
        return
    for key in ("backbone.fpn.inner_blocks.0.0.weight", "backbone.fpn.layer_blocks.1.0.bias",
                "rpn.head.conv.0.0.weight", "rpn.head.cls_logits.weight",
                "rpn.head.bbox_pred.bias", "roi_heads.box_head.fc6.weight",
                "roi_heads.box_head.fc7.bias", "roi_heads.box_predictor.cls_score.weight",
                "roi_heads.box_predictor.bbox_pred.weight"):
        assert key in keys
    assert tuple(model.state_dict()["roi_heads.box_predictor.bbox_pred.weight"].shape) == (
        91 * 4, 1024)
    if name.startswith("mask"):
        assert [k for k in keys if "mask" in k] == [
            *[f"roi_heads.mask_head.{i}.0.{p}" for i in range(4) for p in ("weight", "bias")],
            "roi_heads.mask_predictor.conv5_mask.weight",
            "roi_heads.mask_predictor.conv5_mask.bias",
            "roi_heads.mask_predictor.mask_fcn_logits.weight",
            "roi_heads.mask_predictor.mask_fcn_logits.bias"]
    # the trunk stops before the classifier, and all of it trains when untrained
    assert not any(k.startswith(("backbone.body.fc", "backbone.body.avgpool")) for k in keys)
    assert all(p.requires_grad for p in model.parameters())


def test_checkpoints_with_pre_0_13_names_load():
    with init.skipping():
        model = models.get_model("maskrcnn_resnet50_fpn", num_classes=2)
    state = model.state_dict()
    old = {}
    for key, value in state.items():
        key = re.sub(r"^(backbone\.fpn\.\w+_blocks\.\d+)\.0\.", r"\1.", key)
        key = re.sub(r"^rpn\.head\.conv\.0\.0\.", "rpn.head.conv.", key)
        key = re.sub(r"^roi_heads\.mask_head\.(\d)\.0\.",
                     lambda m: f"roi_heads.mask_head.mask_fcn{int(m[1]) + 1}.", key)
        # known values: init.skipping() leaves the parameters uninitialised (NaN at times)
        old[key] = ember.full_like(value, 2)
    assert "rpn.head.conv.weight" in old and "roi_heads.mask_head.mask_fcn4.bias" in old
    before = set(old)
    model.load_state_dict(old)
    assert set(old) == before  # the caller's dict is left as it was
    assert bool((model.roi_heads.mask_head[3][0].bias == 2).all())
    assert bool((model.rpn.head.conv[0][0].weight == 2).all())


def tiny(kind=FasterRCNN, num_classes=3, **kwargs):
    """A detector on a two-convolution backbone (one stride-4 feature map)."""
    backbone = nn.Sequential(nn.Conv2d(3, 16, 3, stride=2, padding=1), nn.ReLU(),
                             nn.Conv2d(16, 16, 3, stride=2, padding=1), nn.ReLU())
    backbone.out_channels = 16
    return kind(backbone, num_classes,
                rpn_anchor_generator=AnchorGenerator(((16, 32),), ((0.5, 1.0, 2.0),)),
                box_roi_pool=MultiScaleRoIAlign(["0"], 5, 2), **SMALL, **kwargs)


def test_tiny_faster_rcnn_learns_one_box():
    ember.manual_seed(0)
    model = tiny()
    image, target = ember.rand(3, 64, 64), one_box_target()
    optimizer = ember.optim.SGD(model.parameters(), lr=0.02, momentum=0.9)
    totals = []
    for _ in range(12):
        losses = model([image], [target])
        assert list(losses) == ["loss_classifier", "loss_box_reg", "loss_objectness",
                                "loss_rpn_box_reg"]
        total = sum(losses.values())
        assert all(math.isfinite(float(v)) for v in losses.values())
        optimizer.zero_grad()
        total.backward()
        optimizer.step()
        totals.append(float(total))
    assert sum(totals[-3:]) < 0.7 * sum(totals[:3])
    model.eval()
    with ember.no_grad():
        out = model([image, ember.rand(3, 40, 56)])
    assert len(out) == 2 and sorted(out[0]) == ["boxes", "labels", "scores"]
    for det, (h, w) in zip(out, [(64, 64), (40, 56)]):
        n = len(det["boxes"])
        assert tuple(det["boxes"].shape) == (n, 4) and tuple(det["scores"].shape) == (n,)
        assert det["labels"].dtype == ember.int64
        if n:  # boxes in the original image's pixels, classes never the background
            assert float(det["boxes"][:, 2].max()) <= w and float(det["boxes"][:, 3].max()) <= h
            assert int(det["labels"].min()) >= 1 and int(det["labels"].max()) <= 2
            scores = det["scores"].tolist()
            assert scores == sorted(scores, reverse=True) and min(scores) > 0.05


def test_mobilenet_builder_trains_and_detects():
    ember.manual_seed(0)
    model = detection.fasterrcnn_mobilenet_v3_large_fpn(num_classes=2, **SMALL)
    assert model.rpn.score_thresh == 0.05  # the builder's default
    assert model.rpn.anchor_generator.num_anchors_per_location() == [15, 15, 15]
    losses = model([ember.rand(3, 64, 64)], [one_box_target()])
    sum(losses.values()).backward()
    assert model.roi_heads.box_predictor.cls_score.weight.grad is not None
    assert model.backbone.body["0"][0].weight.grad is not None
    model.eval()
    out = model([ember.rand(3, 48, 64)])
    assert sorted(out[0]) == ["boxes", "labels", "scores"]


def test_mask_rcnn_trains_and_pastes_masks():
    ember.manual_seed(0)
    model = tiny(MaskRCNN, 2, mask_roi_pool=MultiScaleRoIAlign(["0"], 7, 2),
                 mask_head=MaskRCNNHeads(16, [16, 16], 1))
    assert tuple(model.roi_heads.mask_predictor(ember.zeros(1, 256, 7, 7)).shape) == (
        1, 2, 14, 14)  # the default predictor: 256 channels in, one map per class out
    model.roi_heads.mask_predictor = MaskRCNNPredictor(16, 8, 2)
    losses = model([ember.rand(3, 64, 64)], [one_box_target(masks=True)])
    assert list(losses) == ["loss_classifier", "loss_box_reg", "loss_mask", "loss_objectness",
                            "loss_rpn_box_reg"]
    assert all(math.isfinite(float(v)) for v in losses.values())
    sum(losses.values()).backward()
    assert model.roi_heads.mask_predictor.mask_fcn_logits.weight.grad is not None
    model.eval()
    model.roi_heads.score_thresh = 0.0  # an untrained model: keep what it finds
    with ember.no_grad():
        out = model([ember.rand(3, 48, 40)])[0]
    n = len(out["boxes"])
    assert tuple(out["masks"].shape) == (n, 1, 48, 40)
    if n:
        assert 0.0 <= float(out["masks"].min()) and float(out["masks"].max()) <= 1.0
    with pytest.raises(ValueError, match="'masks'"):
        model.train()([ember.rand(3, 64, 64)], [one_box_target()])


def test_tiny_retinanet_learns_one_box_and_detects():
    ember.manual_seed(0)
    backbone = nn.Sequential(nn.Conv2d(3, 16, 3, stride=2, padding=1), nn.ReLU(),
                             nn.Conv2d(16, 16, 3, stride=2, padding=1), nn.ReLU())
    backbone.out_channels = 16
    model = RetinaNet(backbone, 3, min_size=64, max_size=64, topk_candidates=30,
                      anchor_generator=AnchorGenerator(((16, 32),), ((0.5, 1.0, 2.0),)))
    head = model.head.classification_head
    assert abs(float(head.cls_logits.bias[0]) - math.log(0.01 / 0.99)) < 1e-6
    image, target = ember.rand(3, 64, 64), one_box_target()
    optimizer = ember.optim.SGD(model.parameters(), lr=0.05, momentum=0.9)
    totals = []
    for _ in range(12):
        losses = model([image], [target])
        assert list(losses) == ["classification", "bbox_regression"]
        optimizer.zero_grad()
        sum(losses.values()).backward()
        optimizer.step()
        totals.append([float(v) for v in losses.values()])
    assert all(math.isfinite(t) for step in totals for t in step)
    focal = [step[0] for step in totals]  # the focal loss starts near its prior and falls
    assert all(b < a for a, b in zip(focal, focal[1:])), focal
    assert sum(map(sum, totals[-3:])) < 0.92 * sum(map(sum, totals[:3])), totals
    model.eval()
    with ember.no_grad():
        out = model([image, ember.rand(3, 40, 56)])
    for det, (h, w) in zip(out, [(64, 64), (40, 56)]):
        assert sorted(det) == ["boxes", "labels", "scores"]
        n = len(det["boxes"])
        assert n <= 30 and tuple(det["labels"].shape) == (n,)
        if n:
            assert float(det["boxes"][:, 2].max()) <= w and float(det["boxes"][:, 3].max()) <= h
            assert int(det["labels"].max()) <= 2
    with pytest.raises(ValueError, match="targets should be passed"):
        model.train()([image])


def test_errors():
    model = tiny()
    image = ember.rand(3, 64, 64)
    with pytest.raises(ValueError, match="targets should be passed"):
        model([image])
    with pytest.raises(ValueError, match=r"shape \[N, 4\]"):
        model([image], [{"boxes": ember.zeros(4), "labels": ember.tensor([1])}])
    with pytest.raises(ValueError, match="positive height and width.*index 0"):
        model([image], [{"boxes": ember.tensor([[10.0, 10.0, 5.0, 20.0]]),
                         "labels": ember.tensor([1])}])
    with pytest.raises(TypeError, match="int64"):
        model([image], [{"boxes": ember.tensor([[1.0, 1.0, 5.0, 5.0]]),
                         "labels": ember.tensor([1.0])}])
    with pytest.raises(ValueError, match=r"\(C, H, W\)"):
        model.eval()([ember.rand(1, 3, 8, 8)])
    backbone = model.backbone
    with pytest.raises(ValueError, match="num_classes should be None"):
        FasterRCNN(backbone, 3, box_predictor=nn.Linear(2, 2))
    with pytest.raises(ValueError, match="num_classes should not be None"):
        FasterRCNN(backbone)
    with pytest.raises(ValueError, match="out_channels"):
        FasterRCNN(nn.ReLU(), 3)
    with pytest.raises(TypeError, match="MultiScaleRoIAlign"):
        FasterRCNN(backbone, 3, box_roi_pool=nn.ReLU())
    with pytest.raises(TypeError, match="MultiScaleRoIAlign"):
        MaskRCNN(backbone, 3, mask_roi_pool=nn.ReLU())
    with pytest.raises(ValueError, match="no pretrained weights"):
        detection.fasterrcnn_resnet50_fpn(weights="DEFAULT")
    with pytest.raises(ValueError, match="weights_backbone"):
        detection.fasterrcnn_resnet50_fpn(weights_backbone="DEFAULT")
    with pytest.warns(UserWarning, match="no effect"):
        with init.skipping():
            detection.fasterrcnn_mobilenet_v3_large_fpn(trainable_backbone_layers=2)


def test_registry():
    assert models.list_models(detection) == sorted([
        *PARAMS, "fcos_resnet50_fpn", "keypointrcnn_resnet50_fpn", "ssd300_vgg16",
        "ssdlite320_mobilenet_v3_large", "fasterrcnn_mobilenet_v3_large_320_fpn",
        "fasterrcnn_resnet50_fpn_v2", "maskrcnn_resnet50_fpn_v2", "retinanet_resnet50_fpn_v2"])
    assert models.get_model_builder("MaskRCNN_ResNet50_FPN") is detection.maskrcnn_resnet50_fpn
    assert detection.fasterrcnn_resnet50_fpn.__module__ == (
        "ember.vision.models.detection.faster_rcnn")


def test_targets_without_labels_or_one_per_image_are_refused_clearly():
    model = tiny()
    image, target = ember.rand(3, 64, 64), one_box_target()
    with pytest.raises(ValueError, match="labels key"):
        model([image], [{"boxes": target["boxes"]}])
    with pytest.raises(ValueError, match="2 images but 1 targets"):
        model([image, image], [target])
    with pytest.raises(ValueError, match="2 images but 1 targets"):
        model.eval()([image, image], [target])


def test_no_proposals_give_empty_detections():
    # an RPN score threshold no anchor passes (the mobilenet builder's default is 0.05)
    ember.manual_seed(0)
    for kind in (FasterRCNN, MaskRCNN):
        extra = {"mask_roi_pool": MultiScaleRoIAlign(["0"], 14, 2)} if kind is MaskRCNN else {}
        model = tiny(kind, rpn_score_thresh=1.0, **extra).eval()
        out = model([ember.rand(3, 64, 64), ember.rand(3, 48, 64)])
        assert [tuple(o["boxes"].shape) for o in out] == [(0, 4), (0, 4)]
        assert [tuple(o["labels"].shape) for o in out] == [(0,), (0,)]
        if kind is MaskRCNN:
            assert tuple(out[1]["masks"].shape) == (0, 1, 48, 64)
