"""torchvision's v2 detectors (fasterrcnn/maskrcnn/retinanet_resnet50_fpn_v2): parameter
counts and module layout recorded from torchvision 0.29.1 (num_classes=91, untrained
backbone), and RetinaNet's ``_loss_type`` switch computed by hand."""

import numpy as np
import pytest

import ember
from ember.vision.models import detection
from ember.vision.models.detection.retinanet import RetinaNetRegressionHead
from ember.vision.ops import generalized_box_iou_loss


@pytest.mark.parametrize("name, count, shapes", [
    ("fasterrcnn_resnet50_fpn_v2", 43_712_278, {
        "rpn.head.conv.1.0.weight": (256, 256, 3, 3),
        "backbone.fpn.inner_blocks.0.1.running_var": (256,),
        "roi_heads.box_head.3.1.weight": (256,),
        "roi_heads.box_head.5.weight": (1024, 256 * 7 * 7)}),
    ("maskrcnn_resnet50_fpn_v2", 46_359_409, {
        "roi_heads.mask_head.3.1.bias": (256,),
        "roi_heads.mask_head.0.0.weight": (256, 256, 3, 3)}),
    ("retinanet_resnet50_fpn_v2", 38_198_935, {
        "backbone.fpn.extra_blocks.p6.weight": (256, 2048, 3, 3),
        "head.classification_head.conv.0.1.weight": (256,),
        "head.regression_head.bbox_reg.weight": (36, 256, 3, 3)}),
])
def test_v2_builders_match_torchvision_layout(name, count, shapes):
    model = getattr(detection, name)()
    assert sum(p.numel() for p in model.parameters()) == count
    state = model.state_dict()
    for key, shape in shapes.items():
        assert tuple(state[key].shape) == shape, key
    if name.startswith("retinanet"):
        assert model.head.regression_head._loss_type == "giou"
        assert type(model.head.classification_head.conv[0][1]).__name__ == "GroupNorm"


def test_retinanet_regression_loss_types():
    head = RetinaNetRegressionHead(4, 1)
    anchors = [ember.tensor([[0.0, 0, 10, 10], [5, 5, 20, 25], [0, 0, 4, 4]])]
    targets = [{"boxes": ember.tensor([[1.0, 1, 9, 12], [6, 4, 18, 26]])}]
    deltas = ember.tensor(np.random.default_rng(0).normal(0, 0.1, (1, 3, 4)))
    matched = [ember.tensor([0, 1, -1])]
    outputs = {"bbox_regression": deltas}
    head._loss_type = "giou"
    got = head.compute_loss(targets, outputs, anchors, matched)
    decoded = head.box_coder.decode_single(deltas[0, :2], anchors[0][:2])
    expected = generalized_box_iou_loss(decoded, targets[0]["boxes"], reduction="sum") / 2
    np.testing.assert_allclose(float(got), float(expected), rtol=1e-6)
    head._loss_type = "l1"
    wanted = head.box_coder.encode_single(targets[0]["boxes"], anchors[0][:2])
    np.testing.assert_allclose(float(head.compute_loss(targets, outputs, anchors, matched)),
                               float((deltas[0, :2] - wanted).abs().sum() / 2), rtol=1e-6)
    head._loss_type = "huber"
    with pytest.raises(ValueError, match="unsupported _loss_type 'huber'"):
        head.compute_loss(targets, outputs, anchors, matched)
