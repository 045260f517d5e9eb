"""torchvision's quantizable classifiers (``torchvision.models.quantization``), served as
``ember.vision.models.quantization`` and registered with ``ember.vision.models.get_model`` as
``quantized_<name>``; :func:`quantize_model` quantizes one as ``quantize=True`` does."""

from ember.quant.models import googlenet as _googlenet
from ember.quant.models import inception, mobilenetv2, mobilenetv3, resnet, shufflenetv2
from ember.quant.models._utils import quantize_model
from ember.quant.models.googlenet import *  # noqa: F403
from ember.quant.models.inception import *  # noqa: F403
from ember.quant.models.mobilenetv2 import *  # noqa: F403
from ember.quant.models.mobilenetv3 import *  # noqa: F403
from ember.quant.models.resnet import *  # noqa: F403
from ember.quant.models.shufflenetv2 import *  # noqa: F403

__all__ = ["quantize_model", *_googlenet.__all__, *inception.__all__, *mobilenetv2.__all__,
           *mobilenetv3.__all__, *resnet.__all__, *shufflenetv2.__all__]
