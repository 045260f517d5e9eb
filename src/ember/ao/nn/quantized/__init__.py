"""``torch.ao.nn.quantized``: statically quantized modules, and ``dynamic``."""

from ember.ao.nn.quantized import dynamic, functional  # noqa: F401
from ember.quant.modules.activations import *  # noqa: F403
from ember.quant.modules.batchnorm import *  # noqa: F403
from ember.quant.modules.conv_transpose import *  # noqa: F403
from ember.quant.modules.embedding_ops import *  # noqa: F403
from ember.quant.modules.functional_modules import *  # noqa: F403
from ember.quant.modules.normalization import *  # noqa: F403
from ember.quant.modules.pooling import AdaptiveAvgPool2d, AvgPool2d  # noqa: F401
from ember.quant.modules.quantized import *  # noqa: F403
