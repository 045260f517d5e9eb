"""Quantizable Inception v3, as torchvision's ``models.quantization.inception``: a ReLU
module in each conv block (so it fuses), the blocks' concatenations through
``FloatFunctional.cat`` (``myop``; ``myop1``-``myop3`` in block E), their pooling on
quantized tensors too, stubs around the network (after ``transform_input``).

Example:
    >>> model = inception_v3(num_classes=10, aux_logits=False, init_weights=False).eval()
    >>> model.fuse_model()
    >>> type(model.Conv2d_1a_3x3.conv).__name__
    'ConvReLU2d'
"""

from __future__ import annotations

from ember import Tensor
from ember.nn import functional as F
from ember.quant.functions import quantized_max_pool2d
from ember.quant.models._utils import BetweenStubs, register
from ember.quant.models.googlenet import QuantizableBasicConv2d
from ember.quant.modules import pooling
from ember.quant.modules.functional_modules import FloatFunctional
from ember.quant.qtensor import QuantizedTensor
from ember.vision.models import quantization as listed
from ember.vision.models.googlenet import transform_input
from ember.vision.models.inception import (
    Inception3,
    InceptionA,
    InceptionAux,
    InceptionB,
    InceptionC,
    InceptionD,
    InceptionE,
    InceptionOutputs,
)

__all__ = ["QuantizableInception3", "inception_v3"]


class _Quantizable:
    """An Inception block's pooling of float or quantized tensors and its concatenations
    through ``FloatFunctional`` modules (``myop``; block E: ``myop1``, ``myop2``, ``myop3``)."""

    def __init__(self, *args, **kwargs) -> None:
        super().__init__(*args, conv_block=QuantizableBasicConv2d, **kwargs)
        for name in self._ops:
            setattr(self, name, FloatFunctional())

    _ops = ("myop",)

    def _avg_pool(self, x: Tensor) -> Tensor:
        if isinstance(x, QuantizedTensor):
            return pooling.avg_pool2d(x, 3, 1, 1)
        return F.avg_pool2d(x, kernel_size=3, stride=1, padding=1)

    def _max_pool(self, x: Tensor) -> Tensor:
        if isinstance(x, QuantizedTensor):
            return quantized_max_pool2d(x, [3, 3], [2, 2])
        return F.max_pool2d(x, kernel_size=3, stride=2)

    def _cat(self, tensors: list[Tensor], which: int = 0) -> Tensor:
        return getattr(self, self._ops[max(which - 1, 0)]).cat(tensors, 1)


class QuantizableInceptionA(_Quantizable, InceptionA):
    pass


class QuantizableInceptionB(_Quantizable, InceptionB):
    pass


class QuantizableInceptionC(_Quantizable, InceptionC):
    pass


class QuantizableInceptionD(_Quantizable, InceptionD):
    pass


class QuantizableInceptionE(_Quantizable, InceptionE):
    _ops = ("myop1", "myop2", "myop3")


class QuantizableInceptionAux(InceptionAux):
    """The auxiliary classifier (training only) of quantizable conv blocks."""

    def __init__(self, *args, **kwargs) -> None:
        super().__init__(*args, conv_block=QuantizableBasicConv2d, **kwargs)


class QuantizableInception3(BetweenStubs, Inception3):
    """Inception v3 of quantizable blocks between a ``QuantStub`` (``quant``) and a
    ``DeQuantStub`` (``dequant``)."""

    def __init__(self, *args, **kwargs) -> None:
        blocks = [QuantizableBasicConv2d, QuantizableInceptionA, QuantizableInceptionB,
                  QuantizableInceptionC, QuantizableInceptionD, QuantizableInceptionE,
                  QuantizableInceptionAux]
        super().__init__(*args, inception_blocks=blocks, **kwargs)

    def forward(self, x: Tensor) -> Tensor | InceptionOutputs:
        if self.transform_input:
            x = transform_input(x)
        x, aux = self._forward(self.quant(x))
        return self._outputs(self.dequant(x), aux)

    def fuse_model(self, is_qat: bool | None = None) -> None:
        """Fuses every conv+bn+relu (in place)."""
        for m in self.modules():
            if type(m) is QuantizableBasicConv2d:
                m.fuse_model(is_qat)


inception_v3 = register("inception_v3", QuantizableInception3, "Inception v3", __name__)
listed.register("QuantizableInception3", QuantizableInception3)
