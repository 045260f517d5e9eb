"""``torch.ao.nn.quantized.dynamic``: dynamically quantized modules."""

from ember.quant.modules.dynamic import *  # noqa: F403
