"""fasterrcnn_mobilenet_v3_large_320_fpn: torchvision's low-resolution MobileNet detector is
the MobileNet Faster R-CNN with other defaults (recorded from torchvision 0.29.1's builder:
320/640 resizing, 150 proposals before and after NMS at test time, score threshold 0.05)."""

import pytest

from ember.vision import models
from ember.vision.models import detection


def test_builder_defaults_and_registration():
    model = detection.fasterrcnn_mobilenet_v3_large_320_fpn(num_classes=3)
    assert model.transform.min_size == (320,) and model.transform.max_size == 640
    assert model.rpn._pre_nms_top_n == {"training": 2000, "testing": 150}
    assert model.rpn._post_nms_top_n == {"training": 2000, "testing": 150}
    assert model.rpn.score_thresh == 0.05
    # torchvision 0.29.1 counts 18,959,754 parameters for num_classes=3, untrained backbone
    assert sum(p.numel() for p in model.parameters()) == 18_959_754
    assert "fasterrcnn_mobilenet_v3_large_320_fpn" in models.list_models(module=detection)
    small = detection.fasterrcnn_mobilenet_v3_large_320_fpn(num_classes=3, min_size=200)
    assert small.transform.min_size == (200,)  # the defaults give way to keywords
    with pytest.raises(ValueError, match="no pretrained weights"):
        detection.fasterrcnn_mobilenet_v3_large_320_fpn(weights="DEFAULT")
