"""Quantizable GoogLeNet, as torchvision's ``models.quantization.googlenet``: a ReLU module in
each conv block (so it fuses), the Inception branches concatenated through
``FloatFunctional.cat``, stubs around the network (after ``transform_input``).

Example:
    >>> model = googlenet(num_classes=10, aux_logits=False, init_weights=False).eval()
    >>> model.fuse_model()
    >>> type(model.conv1.conv).__name__
    'ConvReLU2d'
"""

from __future__ import annotations

from ember import Tensor, nn
from ember.quant.models._utils import BetweenStubs, adaptive_avg_pool2d, fuse, register
from ember.quant.modules.functional_modules import FloatFunctional
from ember.vision.models import quantization as listed
from ember.vision.models.googlenet import (
    BasicConv2d,
    GoogLeNet,
    GoogLeNetOutputs,
    Inception,
    InceptionAux,
    transform_input,
)

__all__ = ["QuantizableGoogLeNet", "googlenet"]


class QuantizableBasicConv2d(BasicConv2d):
    """Conv, batch norm and a ReLU module (``relu``)."""

    def __init__(self, *args, **kwargs) -> None:
        super().__init__(*args, **kwargs)
        self.relu = nn.ReLU()

    def forward(self, x: Tensor) -> Tensor:
        return self.relu(self.bn(self.conv(x)))

    def fuse_model(self, is_qat: bool | None = None) -> None:
        """Fuses conv+bn+relu in place."""
        fuse(self, ["conv", "bn", "relu"], is_qat)


class QuantizableInception(Inception):
    """GoogLeNet's Inception block concatenating through ``cat.cat``."""

    def __init__(self, *args, **kwargs) -> None:
        super().__init__(*args, conv_block=QuantizableBasicConv2d, **kwargs)
        self.cat = FloatFunctional()

    def forward(self, x: Tensor) -> Tensor:
        branches = (self.branch1, self.branch2, self.branch3, self.branch4)
        return self.cat.cat([branch(x) for branch in branches], 1)


class QuantizableInceptionAux(InceptionAux):
    """The auxiliary classifier with a ReLU module (``relu``)."""

    def __init__(self, *args, **kwargs) -> None:
        super().__init__(*args, conv_block=QuantizableBasicConv2d, **kwargs)
        self.relu = nn.ReLU()

    def forward(self, x: Tensor) -> Tensor:
        x = self.conv(adaptive_avg_pool2d(x, (4, 4))).flatten(1)
        return self.fc2(self.dropout(self.relu(self.fc1(x))))


class QuantizableGoogLeNet(BetweenStubs, GoogLeNet):
    """GoogLeNet of quantizable blocks between a ``QuantStub`` (``quant``) and a
    ``DeQuantStub`` (``dequant``)."""

    def __init__(self, *args, **kwargs) -> None:
        super().__init__(*args, blocks=[QuantizableBasicConv2d, QuantizableInception,
                                        QuantizableInceptionAux], **kwargs)

    def forward(self, x: Tensor) -> Tensor | GoogLeNetOutputs:
        if self.transform_input:
            x = transform_input(x)
        x, aux2, aux1 = self._forward(self.quant(x))
        return self._outputs(self.dequant(x), aux2, aux1)

    def fuse_model(self, is_qat: bool | None = None) -> None:
        """Fuses every conv+bn+relu (in place)."""
        for m in self.modules():
            if type(m) is QuantizableBasicConv2d:
                m.fuse_model(is_qat)


googlenet = register("googlenet", QuantizableGoogLeNet, "GoogLeNet (Inception v1)", __name__)
listed.register("QuantizableGoogLeNet", QuantizableGoogLeNet)
