"""torchvision's classification models under its names and signatures (``torchvision.models``
→ ``ember.vision.models``; the segmentation, detection, video and optical-flow models in their
subpackages): the architectures, module names, constructor options and initialization, so a
state dict saved from torchvision loads. No pretrained weights are bundled: ``weights`` must
be None.

Example:
    >>> model = ember.vision.models.get_model("resnet18", num_classes=10)
    >>> model(ember.randn(1, 3, 64, 64)).shape
    ember.Size([1, 10])
"""

from ember.vision.models import detection, optical_flow, segmentation, video
from ember.vision.models._api import get_model, get_model_builder, list_models
from ember.vision.models.alexnet import *  # noqa: F403
from ember.vision.models.alexnet import __all__ as _alexnet
from ember.vision.models.convnext import *  # noqa: F403
from ember.vision.models.convnext import __all__ as _convnext
from ember.vision.models.densenet import *  # noqa: F403
from ember.vision.models.densenet import __all__ as _densenet
from ember.vision.models.efficientnet import *  # noqa: F403
from ember.vision.models.efficientnet import __all__ as _efficientnet
from ember.vision.models.googlenet import *  # noqa: F403
from ember.vision.models.googlenet import __all__ as _googlenet
from ember.vision.models.inception import *  # noqa: F403
from ember.vision.models.inception import __all__ as _inception
from ember.vision.models.maxvit import *  # noqa: F403
from ember.vision.models.maxvit import __all__ as _maxvit
from ember.vision.models.mnasnet import *  # noqa: F403
from ember.vision.models.mnasnet import __all__ as _mnasnet
from ember.vision.models.mobilenetv2 import *  # noqa: F403
from ember.vision.models.mobilenetv2 import __all__ as _mobilenetv2
from ember.vision.models.mobilenetv3 import *  # noqa: F403
from ember.vision.models.mobilenetv3 import __all__ as _mobilenetv3
from ember.vision.models.regnet import *  # noqa: F403
from ember.vision.models.regnet import __all__ as _regnet
from ember.vision.models.resnet import *  # noqa: F403
from ember.vision.models.resnet import __all__ as _resnet
from ember.vision.models.shufflenetv2 import *  # noqa: F403
from ember.vision.models.shufflenetv2 import __all__ as _shufflenetv2
from ember.vision.models.squeezenet import *  # noqa: F403
from ember.vision.models.squeezenet import __all__ as _squeezenet
from ember.vision.models.swin_transformer import *  # noqa: F403
from ember.vision.models.swin_transformer import __all__ as _swin_transformer
from ember.vision.models.vgg import *  # noqa: F403
from ember.vision.models.vgg import __all__ as _vgg
from ember.vision.models.vision_transformer import *  # noqa: F403
from ember.vision.models.vision_transformer import __all__ as _vision_transformer

__all__ = ["get_model", "get_model_builder", "list_models", *_alexnet, *_convnext, *_densenet,
           *_efficientnet, *_googlenet, *_inception, *_maxvit, *_mnasnet, *_mobilenetv2,
           *_mobilenetv3, *_regnet, *_resnet, *_shufflenetv2, *_squeezenet, *_swin_transformer,
           *_vgg, *_vision_transformer]
