"""torchvision's semantic segmentation models (``torchvision.models.segmentation`` →
``ember.vision.models.segmentation``): FCN, DeepLabV3 and LR-ASPP with torchvision's module
names, so its state dicts load. Each forward returns an ``OrderedDict`` with ``"out"`` (and,
built with ``aux_loss=True``, ``"aux"``) logits at the input resolution. No weights are bundled:
``weights`` and ``weights_backbone`` must be None (the backbone starts random).

Example:
    >>> model = ember.vision.models.segmentation.fcn_resnet50(num_classes=3, aux_loss=True)
    >>> list(model.eval()(ember.randn(1, 3, 32, 32)))
    ['out', 'aux']
"""

from ember.vision.models.segmentation.deeplabv3 import *  # noqa: F403
from ember.vision.models.segmentation.deeplabv3 import __all__ as _deeplabv3
from ember.vision.models.segmentation.fcn import *  # noqa: F403
from ember.vision.models.segmentation.fcn import __all__ as _fcn
from ember.vision.models.segmentation.lraspp import *  # noqa: F403
from ember.vision.models.segmentation.lraspp import __all__ as _lraspp

__all__ = [*_deeplabv3, *_fcn, *_lraspp]
