"""torchvision's detection models (``torchvision.models.detection`` →
``ember.vision.models.detection``): Faster R-CNN, Mask R-CNN, Keypoint R-CNN, RetinaNet, FCOS,
SSD and SSDlite with their building blocks, module names, constructor options and train/eval
behaviour. No pretrained weights are bundled: ``weights`` and ``weights_backbone`` must be None.

Example:
    >>> model = fasterrcnn_mobilenet_v3_large_fpn(num_classes=3, min_size=64, max_size=64,
    ...                                           rpn_post_nms_top_n_train=50,
    ...                                           box_batch_size_per_image=32)
    >>> images = [ember.rand(3, 64, 64)]
    >>> targets = [{"boxes": ember.tensor([[8.0, 8.0, 40.0, 40.0]]),
    ...             "labels": ember.tensor([1])}]
    >>> sorted(model(images, targets))
    ['loss_box_reg', 'loss_classifier', 'loss_objectness', 'loss_rpn_box_reg']
"""

from ember.vision.models.detection.faster_rcnn import *  # noqa: F403
from ember.vision.models.detection.faster_rcnn import __all__ as _faster_rcnn
from ember.vision.models.detection.fcos import *  # noqa: F403
from ember.vision.models.detection.fcos import __all__ as _fcos
from ember.vision.models.detection.keypoint_rcnn import *  # noqa: F403
from ember.vision.models.detection.keypoint_rcnn import __all__ as _keypoint_rcnn
from ember.vision.models.detection.mask_rcnn import *  # noqa: F403
from ember.vision.models.detection.mask_rcnn import __all__ as _mask_rcnn
from ember.vision.models.detection.retinanet import *  # noqa: F403
from ember.vision.models.detection.retinanet import __all__ as _retinanet
from ember.vision.models.detection.ssd import *  # noqa: F403
from ember.vision.models.detection.ssd import __all__ as _ssd
from ember.vision.models.detection.ssdlite import *  # noqa: F403
from ember.vision.models.detection.ssdlite import __all__ as _ssdlite

__all__ = [*_faster_rcnn, *_fcos, *_keypoint_rcnn, *_mask_rcnn, *_retinanet, *_ssd, *_ssdlite]
