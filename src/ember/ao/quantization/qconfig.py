"""``torch.ao.quantization.qconfig``: :mod:`ember.quant.qconfig`."""

from ember.quant.qconfig import *  # noqa: F403
from ember.quant.qconfig import __all__  # noqa: F401
