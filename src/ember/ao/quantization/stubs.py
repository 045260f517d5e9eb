"""``torch.ao.quantization.stubs``: :mod:`ember.quant.stubs`."""

from ember.quant.stubs import *  # noqa: F403
from ember.quant.stubs import __all__  # noqa: F401
