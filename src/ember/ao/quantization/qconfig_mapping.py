"""``torch.ao.quantization.qconfig_mapping``: :mod:`ember.quant.qconfig_mapping`."""

from ember.quant.qconfig_mapping import *  # noqa: F403
from ember.quant.qconfig_mapping import __all__  # noqa: F401
