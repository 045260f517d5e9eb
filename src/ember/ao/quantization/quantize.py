"""``torch.ao.quantization.quantize``: :mod:`ember.quant.quantize`."""

from ember.quant.quantize import *  # noqa: F403
from ember.quant.quantize import __all__  # noqa: F401
