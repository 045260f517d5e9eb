"""``torch.ao.nn.intrinsic.quantized`` (importable as ``ember.ao.nn.intrinsic.quantized``):
the quantized fused modules that ``convert`` makes of ``ember.ao.nn.intrinsic``'s, and
``dynamic`` (``LinearReLU``). The same classes as in ``ember.ao.nn.quantized``.

Example:
    >>> import ember.ao.nn.intrinsic.quantized as nniq
    >>> nniq.ConvReLU2d(1, 2, 3).weight().shape
    ember.Size([2, 1, 3, 3])
"""

from ember.ao.nn.intrinsic_quantized import dynamic
from ember.quant.modules.batchnorm import BNReLU2d, BNReLU3d
from ember.quant.modules.quantized import ConvReLU1d, ConvReLU2d, ConvReLU3d, LinearReLU

__all__ = ["BNReLU2d", "BNReLU3d", "ConvReLU1d", "ConvReLU2d", "ConvReLU3d", "LinearReLU",
           "dynamic"]
