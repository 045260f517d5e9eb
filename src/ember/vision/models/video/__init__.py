"""torchvision's video classification models (``torchvision.models.video`` →
``ember.vision.models.video``) with torchvision's module names, so its state dicts load. They
take clips shaped (N, C, T, H, W). No weights are bundled: ``weights`` must be None.

Example:
    >>> model = ember.vision.models.video.r2plus1d_18(num_classes=4)
    >>> model(ember.randn(1, 3, 4, 32, 32)).shape
    ember.Size([1, 4])
"""

from ember.vision.models.video.mvit import *  # noqa: F403
from ember.vision.models.video.mvit import __all__ as _mvit
from ember.vision.models.video.resnet import *  # noqa: F403
from ember.vision.models.video.resnet import __all__ as _resnet
from ember.vision.models.video.s3d import *  # noqa: F403
from ember.vision.models.video.s3d import __all__ as _s3d
from ember.vision.models.video.swin_transformer import *  # noqa: F403
from ember.vision.models.video.swin_transformer import __all__ as _swin

__all__ = [*_mvit, *_resnet, *_s3d, *_swin]
