"""``torch.ao.quantization``'s names: :mod:`ember.quant`."""

from ember.quant import *  # noqa: F403
