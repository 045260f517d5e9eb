"""``torch.ao.quantization.fuser_method_mappings``: :mod:`ember.quant.fuser_method_mappings`."""

from ember.quant.fuser_method_mappings import *  # noqa: F403
from ember.quant.fuser_method_mappings import __all__  # noqa: F401
