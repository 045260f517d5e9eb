"""``torch.ao.nn.intrinsic.quantized.dynamic``: the dynamically quantized ``LinearReLU``."""

from ember.quant.modules.dynamic import LinearReLU

__all__ = ["LinearReLU"]
