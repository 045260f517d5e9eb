"""SSD and SSDlite: the train/eval contract on tiny models, torchvision's conventions (size as
(width, height), an int out_channels), clear errors, and the pure-math cores (hard negative
mining, the loss, default boxes, matching) against plain-torch transcriptions of torchvision's
formulas on the same inputs. (Parameter counts and state-dict names are checked with the other
new detectors in ``test_detection_keypoint_fcos_ssd``.)"""

import math
from collections import OrderedDict

import numpy as np
import pytest
import torch

import ember
from ember import nn
from ember.nn import init
from ember.vision.models import detection
from ember.vision.models.detection import SSD, SSDHead
from ember.vision.models.detection._utils import SSDMatcher
from ember.vision.models.detection.anchor_utils import AnchorGenerator, DefaultBoxGenerator
from ember.vision.models.detection.image_list import ImageList
from ember.vision.models.detection.ssd import hard_negative_mask
from tests.vision.test_detection_keypoint_fcos_ssd import BOX, check_detections, one_box, train

RNG = np.random.default_rng(0)

class TwoMaps(nn.Module):
    """A stride-8 and a stride-16 feature map."""

    def __init__(self):
        super().__init__()
        self.stem = nn.Sequential(nn.Conv2d(3, 16, 3, stride=4, padding=1), nn.ReLU(),
                                  nn.Conv2d(16, 16, 3, stride=2, padding=1), nn.ReLU())
        self.down = nn.Sequential(nn.Conv2d(16, 16, 3, stride=2, padding=1), nn.ReLU())

    def forward(self, x):
        first = self.stem(x)
        return OrderedDict([("0", first), ("1", self.down(first))])


def tiny_ssd(**kwargs):
    return SSD(TwoMaps(), DefaultBoxGenerator([[2], [2, 3]]), (64, 64), 3, **kwargs)


def test_ssd_size_is_width_then_height():
    seen = []

    class Probe(TwoMaps):
        def forward(self, x):
            seen.append(tuple(x.shape[-2:]))
            return super().forward(x)

    model = SSD(Probe(), DefaultBoxGenerator([[2], [2, 3]]), (64, 32), 3)
    # as torchvision's: size is (width, height), for the dry run and the transform alike
    assert seen == [(32, 64)]
    images, _ = model.transform([ember.rand(3, 50, 50)])
    assert tuple(images.tensors.shape[-2:]) == (32, 64)


def test_ssd_takes_a_single_out_channels_int():
    backbone = nn.Sequential(nn.Conv2d(3, 8, 3, stride=8, padding=1))
    backbone.out_channels = 8  # as torchvision's: an int means one feature map
    model = SSD(backbone, DefaultBoxGenerator([[2]]), (64, 64), 3)
    assert model.head.classification_head.module_list[0].in_channels == 8
    backbone.out_channels = "8"
    with pytest.raises(ValueError, match="out_channels either int or List.*got str"):
        SSD(backbone, DefaultBoxGenerator([[2]]), (64, 64), 3)


def test_ssd_learns_one_box_and_detects():
    ember.manual_seed(0)
    model = tiny_ssd()  # no out_channels attribute: one dry run finds them
    assert [m.in_channels for m in model.head.classification_head.module_list] == [16, 16]
    history, keys = train(model, one_box(), 10, 0.01)
    assert keys == ["bbox_regression", "classification"]
    assert sum(history[-1].values()) < 0.7 * sum(history[0].values()), history
    out = check_detections(model)
    assert all(int(d["labels"].min()) >= 1 for d in out if len(d["labels"]))


def test_ssdlite_builder_trains_a_step_and_detects():
    ember.manual_seed(0)
    model = detection.ssdlite320_mobilenet_v3_large(num_classes=3, topk_candidates=20,
                                                    detections_per_img=10)
    model.transform.fixed_size = (96, 96)  # smaller than 320 to keep the test fast
    # two images: the last extra block's 1×1 map needs more than one value per batch norm
    losses = model([ember.rand(3, 64, 64)] * 2, [one_box()] * 2)
    assert sorted(losses) == ["bbox_regression", "classification"]
    sum(losses.values()).backward()
    assert model.head.regression_head.module_list[0][1].weight.grad is not None
    assert model.backbone.features[0][0][0].weight.grad is not None
    check_detections(model)


def test_ssd_errors():
    with pytest.raises(TypeError, match="DefaultBoxGenerator"):
        SSD(TwoMaps(), AnchorGenerator(), (64, 64), 3)
    with pytest.raises(ValueError, match=r"output channels from the backbone \(2\).*\(1\)"):
        SSD(TwoMaps(), DefaultBoxGenerator([[2]]), (64, 64), 3)
    with pytest.raises(ValueError, match="2 feature maps for 1 prediction layers"):
        SSD(TwoMaps(), DefaultBoxGenerator([[2]]), (64, 64), 3,
            head=SSDHead([16], [4], 3)).eval()([ember.rand(3, 64, 64)])
    model = tiny_ssd()
    with pytest.raises(ValueError, match="targets should be passed"):
        model([ember.rand(3, 64, 64)])
    with pytest.raises(ValueError, match="positive height and width"):
        model([ember.rand(3, 64, 64)], [{"boxes": ember.tensor([[9.0, 9.0, 9.0, 20.0]]),
                                         "labels": ember.tensor([1])}])
    with pytest.raises(ValueError, match="one more scale"):
        DefaultBoxGenerator([[2], [2]], scales=[0.1, 0.2])
    # more scales than that are fine, as in torchvision: the extra ones go unused
    assert DefaultBoxGenerator([[2]], scales=[0.5, 1.0, 2.0])._wh_pairs[0][:2].tolist() == [
        [0.5, 0.5], [pytest.approx(math.sqrt(0.5))] * 2]
    with pytest.raises(ValueError, match="no pretrained weights"):
        detection.ssd300_vgg16(weights="DEFAULT")
    with pytest.warns(UserWarning, match="already fixed"), init.skipping():
        detection.ssdlite320_mobilenet_v3_large(size=(100, 100))


def test_hard_negative_mining_against_torch():
    losses = torch.tensor(RNG.uniform(0, 5, (3, 40)), dtype=torch.float32)
    foreground = torch.tensor(RNG.uniform(0, 1, (3, 40)) < 0.1)
    foreground[2] = False  # no positives: no negatives either
    foreground[1, :12] = True  # more negatives wanted than there are: all of them
    for ratio in (3.0, 1.0):
        negative = losses.clone()
        negative[foreground] = -float("inf")
        order = negative.sort(1, descending=True).indices
        want = order.sort(1).indices < ratio * foreground.sum(1, keepdim=True)
        got = hard_negative_mask(ember.tensor(losses.numpy()),
                                 ember.tensor(foreground.numpy()), ratio)
        assert got.tolist() == want.tolist()
    assert not bool(got[2].any())


def test_ssd_loss_against_torch():
    ember.manual_seed(0)
    model = tiny_ssd()
    anchors = ember.tensor(np.concatenate([RNG.uniform(0, 40, (30, 2)),
                                           RNG.uniform(45, 64, (30, 2))], 1).astype(np.float32))
    logits = ember.tensor(RNG.standard_normal((2, 30, 3)).astype(np.float32))
    deltas = ember.tensor(RNG.standard_normal((2, 30, 4)).astype(np.float32))
    targets = [one_box(), {"boxes": ember.tensor([BOX, [30.0, 2.0, 60.0, 40.0]]),
                           "labels": ember.tensor([2, 1])}]
    matched = [ember.tensor(RNG.integers(-1, n, 30)) for n in (1, 2)]
    got = model.compute_loss(targets, {"cls_logits": logits, "bbox_regression": deltas},
                             [anchors, anchors], matched)

    t_anchors, t_logits, t_deltas = (torch.tensor(x.numpy()) for x in (anchors, logits, deltas))
    box_loss, classes = 0.0, torch.zeros(2, 30, dtype=torch.int64)
    for i, (target, m) in enumerate(zip(targets, matched)):
        m = torch.tensor(m.numpy())
        rows = torch.where(m >= 0)[0]
        gt = torch.tensor(target["boxes"].numpy())[m[rows]]
        wanted = torch_encode(gt, t_anchors[rows], (10.0, 10.0, 5.0, 5.0))
        box_loss += torch.nn.functional.smooth_l1_loss(t_deltas[i, rows], wanted, reduction="sum")
        classes[i, rows] = torch.tensor(target["labels"].numpy())[m[rows]]
    ce = torch.nn.functional.cross_entropy(t_logits.reshape(-1, 3), classes.reshape(-1),
                                           reduction="none").reshape(2, 30)
    foreground = classes > 0
    negative = ce.clone()
    negative[foreground] = -float("inf")
    background = negative.sort(1, descending=True).indices.sort(1).indices < 3 * foreground.sum(
        1, keepdim=True)
    total = foreground.sum()
    assert float(got["bbox_regression"]) == pytest.approx(float(box_loss / total), rel=1e-5)
    assert float(got["classification"]) == pytest.approx(
        float((ce[foreground].sum() + ce[background].sum()) / total), rel=1e-5)


def torch_encode(gt, ex, w):
    ew, eh = ex[:, 2] - ex[:, 0], ex[:, 3] - ex[:, 1]
    gw, gh = gt[:, 2] - gt[:, 0], gt[:, 3] - gt[:, 1]
    return torch.stack([w[0] * ((gt[:, 0] + gw / 2) - (ex[:, 0] + ew / 2)) / ew,
                        w[1] * ((gt[:, 1] + gh / 2) - (ex[:, 1] + eh / 2)) / eh,
                        w[2] * torch.log(gw / ew), w[3] * torch.log(gh / eh)], 1)


def torch_default_boxes(aspect_ratios, scales, steps, grids, size):
    boxes = []
    for k, (rows, cols) in enumerate(grids):
        s, s_next = scales[k], scales[k + 1]
        wh = [[s, s], [math.sqrt(s * s_next)] * 2]
        for r in aspect_ratios[k]:
            wh += [[s * math.sqrt(r), s / math.sqrt(r)], [s / math.sqrt(r), s * math.sqrt(r)]]
        wh = torch.tensor(wh).clamp(0, 1)
        fy, fx = (size[0] / steps[k], size[1] / steps[k]) if steps else (rows, cols)
        cy, cx = torch.meshgrid((torch.arange(rows) + 0.5) / fy, (torch.arange(cols) + 0.5) / fx,
                                indexing="ij")
        centres = torch.stack([cx.reshape(-1), cy.reshape(-1)], 1)
        centres = centres[:, None, :].expand(-1, len(wh), 2).reshape(-1, 2)
        boxes.append(torch.cat([centres, wh.repeat(rows * cols, 1)], 1))
    b = torch.cat(boxes)
    scale = torch.tensor([size[1], size[0]], dtype=torch.float32)
    return torch.cat([(b[:, :2] - b[:, 2:] / 2) * scale, (b[:, :2] + b[:, 2:] / 2) * scale], 1)


def test_default_boxes_against_torch():
    ratios = [[2], [2, 3], [2, 3], [2, 3], [2], [2]]
    scales = [0.07, 0.15, 0.33, 0.51, 0.69, 0.87, 1.05]
    steps = [8, 16, 32, 64, 100, 300]
    grids = [(38, 38), (19, 19), (10, 10), (5, 5), (3, 3), (1, 1)]
    gen = DefaultBoxGenerator(ratios, scales=scales, steps=steps)
    maps = [ember.zeros(1, 1, *g) for g in grids]
    boxes = gen(ImageList(ember.zeros(2, 3, 300, 300), [(300, 300), (280, 300)]), maps)
    assert len(boxes) == 2 and tuple(boxes[0].shape) == (8732, 4)  # SSD300's 8732 boxes
    want = torch_default_boxes(ratios, scales, steps, grids, (300, 300))
    np.testing.assert_allclose(boxes[0].numpy(), want.numpy(), rtol=1e-5, atol=1e-3)
    # no steps and scales from min_ratio..max_ratio (SSDlite's), a non-square batch
    lite = DefaultBoxGenerator([[2, 3]] * 3, min_ratio=0.2, max_ratio=0.95)
    assert lite.scales == pytest.approx([0.2, 0.575, 0.95, 1.0])
    grids = [(6, 8), (3, 4), (1, 2)]
    got = lite(ImageList(ember.zeros(1, 3, 96, 128), [(96, 128)]),
               [ember.zeros(1, 1, *g) for g in grids])[0]
    want = torch_default_boxes([[2, 3]] * 3, lite.scales, None, grids, (96, 128))
    np.testing.assert_allclose(got.numpy(), want.numpy(), rtol=1e-5, atol=1e-3)


def test_ssd_matcher_gives_every_box_its_best_default_box():
    quality = ember.tensor([[0.1, 0.3, 0.2, 0.6], [0.05, 0.4, 0.1, 0.2]])
    # column 3 passes the threshold; box 1's best (column 1) is forced in
    assert SSDMatcher(0.5)(quality).tolist() == [-1, 1, -1, 0]
