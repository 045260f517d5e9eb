"""What the quantizable classifiers share, as torchvision's ``models.quantization.utils``:
:func:`quantize_model` (post-training static quantization on one random image), ReLU6 →
ReLU, fusing in eval or QAT form, and registering builders with ``ember.vision.models``."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from ember import Tensor, backends, nn
from ember.errors import ArgumentError
from ember.nn import functional as F
from ember.ops.random import rand
from ember.quant.fuse import fuse_modules, fuse_modules_qat
from ember.quant.modules import pooling
from ember.quant.observer import (
    default_observer,
    default_per_channel_weight_observer,
    default_weight_observer,
)
from ember.quant.qconfig import QConfig
from ember.quant.qtensor import QuantizedTensor
from ember.quant.quantize import convert, prepare
from ember.quant.stubs import DeQuantStub, QuantStub
from ember.vision.models import quantization as listed
from ember.vision.models._api import make_builder

__all__ = ["quantize_model"]


class BetweenStubs:
    """Mixin put before a float model's class: the model gets a ``QuantStub`` (``quant``) and
    a ``DeQuantStub`` (``dequant``), and its forward runs between them (a subclass whose
    quantized forward differs overrides ``forward``)."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.quant = QuantStub()
        self.dequant = DeQuantStub()

    def forward(self, x: Tensor) -> Any:
        return self.dequant(super().forward(self.quant(x)))  # type: ignore[misc]


def replace_relu(module: nn.Module) -> None:
    """Every ``nn.ReLU`` and ``nn.ReLU6`` (exactly those types) under ``module`` becomes a
    fresh ``nn.ReLU``, which fuses with the convolution before it."""
    for name, child in list(module.named_children()):
        replace_relu(child)
        if type(child) in (nn.ReLU, nn.ReLU6):
            module._modules[name] = nn.ReLU()


def quantize_model(model: nn.Module, backend: str) -> None:
    """Quantizes ``model`` in place as torchvision's builders do with ``quantize=True``: sets
    the quantized engine to ``backend``, puts it in eval mode, gives it the backend's qconfig
    (``fbgemm``: per-channel weights; ``qnnpack``: per-tensor; another engine: none), calls
    ``model.fuse_model()``, prepares it, runs it once on ``rand(1, 3, 299, 299)`` and
    converts it.

    Example:
        >>> from ember.vision.models.quantization import resnet18
        >>> model = resnet18()
        >>> quantize_model(model, "fbgemm")
        >>> type(model.conv1).__name__
        'ConvReLU2d'
    """
    if backend not in backends.quantized.supported_engines:
        raise ArgumentError(f"quantize_model: quantized backend {backend!r} is not supported; "
                            f"the engines are {backends.quantized.supported_engines}")
    backends.quantized.engine = backend
    model.eval()
    weight = {"fbgemm": default_per_channel_weight_observer,
              "qnnpack": default_weight_observer}.get(backend)
    if weight is not None:
        model.qconfig = QConfig(activation=default_observer, weight=weight)
    model.fuse_model()
    prepare(model, inplace=True)
    model(rand(1, 3, 299, 299))
    convert(model, inplace=True)


def adaptive_avg_pool2d(x: Tensor | QuantizedTensor, size: Any) -> Tensor | QuantizedTensor:
    """``F.adaptive_avg_pool2d`` of a float tensor, the quantized kernel's of a quantized one
    (a model's functional pooling, which runs before and after ``convert``)."""
    if isinstance(x, QuantizedTensor):
        return pooling.adaptive_avg_pool2d(x, size)
    return F.adaptive_avg_pool2d(x, size)


def spatial_mean(x: Tensor | QuantizedTensor) -> Tensor | QuantizedTensor:
    """``x.mean([2, 3])`` of a float or a quantized tensor."""
    if isinstance(x, QuantizedTensor):
        return pooling.mean(x, [2, 3])
    return x.mean([2, 3])


def fuse(model: nn.Module, modules: list, is_qat: bool | None) -> None:
    """Fuses ``modules`` of ``model`` in place, for QAT if ``is_qat`` (default: when
    ``model`` is training)."""
    qat = model.training if is_qat is None else is_qat
    (fuse_modules_qat if qat else fuse_modules)(model, modules, inplace=True)


def quantizable(make: Callable[..., nn.Module], quantize: bool = False,
                backend: str = "fbgemm", **kwargs: Any) -> nn.Module:
    """``make(**kwargs)`` with its ReLU6s replaced, quantized for ``backend`` if asked."""
    model = make(**kwargs)
    replace_relu(model)
    if quantize:
        quantize_model(model, backend)
    return model


def register(name: str, make: Callable[..., nn.Module], doc: str, module: str,
             backend: str = "fbgemm", raw: bool = False, **fixed: Any) -> Callable[..., nn.Module]:
    """The builder ``name(*, weights=None, progress=True, quantize=False, **kwargs)``,
    registered as ``quantized_<name>`` and served by ``ember.vision.models.quantization``;
    ``backend`` is its default engine (torchvision's). ``make`` builds the model, which
    :func:`quantizable` completes, or (``raw``) does it all, given ``quantize`` and
    ``backend``."""
    def build(**kwargs: Any) -> nn.Module:
        options = {"backend": backend, **kwargs}
        return make(**options) if raw else quantizable(make, **options)

    builder = make_builder(name, build, f"Quantizable {doc}", module, fixed=fixed,
                           registered=f"quantized_{name}", listed_in=listed.__name__)
    builder.__doc__ += (" ``quantize=True`` quantizes it (:func:`quantize_model`) for "
                        f"``backend`` (default ``'{backend}'``).")
    listed.register(name, builder)
    return builder
