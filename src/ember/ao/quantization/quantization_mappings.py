"""``torch.ao.quantization.quantization_mappings``: :mod:`ember.quant.mappings`."""

from ember.quant.mappings import *  # noqa: F403
from ember.quant.mappings import __all__, get_combined_dict  # noqa: F401
