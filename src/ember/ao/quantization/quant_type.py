"""``torch.ao.quantization.quant_type``: :mod:`ember.quant.quant_type`."""

from ember.quant.quant_type import *  # noqa: F403
from ember.quant.quant_type import __all__  # noqa: F401
