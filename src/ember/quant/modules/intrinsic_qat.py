"""PyTorch's ``torch.ao.nn.intrinsic.qat`` (``ember.ao.nn.intrinsic.qat``): the fused
quantization-aware-training modules, the very classes of :mod:`ember.quant.modules.qat`
(PyTorch's ``LinearBn1d`` is not built).

Example:
    >>> import ember.ao.nn.intrinsic.qat as nniqat
    >>> from ember.quant.modules import qat
    >>> nniqat.ConvBn2d is qat.ConvBn2d and nniqat.freeze_bn_stats is qat.freeze_bn_stats
    True
"""

from ember.quant.modules.qat import (
    ConvBn1d,
    ConvBn2d,
    ConvBn3d,
    ConvBnReLU1d,
    ConvBnReLU2d,
    ConvBnReLU3d,
    ConvReLU1d,
    ConvReLU2d,
    ConvReLU3d,
    LinearReLU,
    freeze_bn_stats,
    update_bn_stats,
)

__all__ = ["ConvBn1d", "ConvBn2d", "ConvBn3d", "ConvBnReLU1d", "ConvBnReLU2d", "ConvBnReLU3d",
           "ConvReLU1d", "ConvReLU2d", "ConvReLU3d", "LinearReLU", "freeze_bn_stats",
           "update_bn_stats"]
