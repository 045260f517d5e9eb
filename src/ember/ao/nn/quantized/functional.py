"""``torch.ao.nn.quantized.functional``: functions on quantized tensors."""

from ember.quant.modules.functional import *  # noqa: F403
