"""``torch.ao.quantization.fuse_modules``: :mod:`ember.quant.fuse`."""

from ember.quant.fuse import *  # noqa: F403
from ember.quant.fuse import __all__  # noqa: F401
