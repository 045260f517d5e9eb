"""torchvision's quantizable classifiers (``torchvision.models.quantization``), served as
``ember.vision.models.quantization`` and registered with ``ember.vision.models.get_model`` as
``quantized_<name>``; :func:`quantize_model` quantizes one as ``quantize=True`` does."""

from ember.quant.models import resnet
from ember.quant.models._utils import quantize_model
from ember.quant.models.resnet import *  # noqa: F403

__all__ = ["quantize_model", *resnet.__all__]
