"""VGG (Simonyan & Zisserman 2014) as torchvision builds it: 3×3 convolutions (with batch norm
in the ``_bn`` variants) and 2×2 max-pools in ``features``, a 7×7 adaptive average pool, and
three linear layers in ``classifier``.

Example:
    >>> make_layers(CONFIGS["A"])(ember.randn(1, 3, 32, 32)).shape  # vgg11's features
    ember.Size([1, 512, 1, 1])
"""

from __future__ import annotations

from ember import Tensor, nn
from ember.vision.models._api import make_builder
from ember.vision.models._init import init_convs_and_norms, small_normal_linear

__all__ = ["VGG", "make_layers", "vgg11", "vgg11_bn", "vgg13", "vgg13_bn", "vgg16", "vgg16_bn",
           "vgg19", "vgg19_bn"]

# channels of each 3x3 convolution, "M" a 2x2 max-pool (the paper's configurations A, B, D, E)
CONFIGS: dict[str, list[int | str]] = {
    "A": [64, "M", 128, "M", 256, 256, "M", 512, 512, "M", 512, 512, "M"],
    "B": [64, 64, "M", 128, 128, "M", 256, 256, "M", 512, 512, "M", 512, 512, "M"],
    "D": [64, 64, "M", 128, 128, "M", 256, 256, 256, "M", 512, 512, 512, "M", 512, 512, 512,
          "M"],
    "E": [64, 64, "M", 128, 128, "M", 256, 256, 256, 256, "M", 512, 512, 512, 512, "M", 512,
          512, 512, 512, "M"],
}


def make_layers(cfg: list[int | str], batch_norm: bool = False) -> nn.Sequential:
    """The ``features`` stack for a configuration: conv (+ batch norm) + ReLU per number,
    a 2×2 max-pool per ``"M"``.

    Example:
        >>> make_layers([8, "M"], batch_norm=True)(ember.randn(1, 3, 4, 4)).shape
        ember.Size([1, 8, 2, 2])
    """
    layers: list[nn.Module] = []
    channels = 3
    for v in cfg:
        if v == "M":
            layers.append(nn.MaxPool2d(kernel_size=2, stride=2))
            continue
        layers.append(nn.Conv2d(channels, int(v), kernel_size=3, padding=1))
        if batch_norm:
            layers.append(nn.BatchNorm2d(int(v)))
        layers.append(nn.ReLU(inplace=True))
        channels = int(v)
    return nn.Sequential(*layers)


class VGG(nn.Module):
    """torchvision's ``VGG(features, num_classes=1000, init_weights=True, dropout=0.5)``:
    ``features`` must end with 512 channels."""

    def __init__(self, features: nn.Module, num_classes: int = 1000, init_weights: bool = True,
                 dropout: float = 0.5) -> None:
        super().__init__()
        self.features = features
        self.avgpool = nn.AdaptiveAvgPool2d((7, 7))
        self.classifier = nn.Sequential(
            nn.Linear(512 * 7 * 7, 4096), nn.ReLU(True), nn.Dropout(p=dropout),
            nn.Linear(4096, 4096), nn.ReLU(True), nn.Dropout(p=dropout),
            nn.Linear(4096, num_classes))
        if init_weights:
            init_convs_and_norms(self, linear=small_normal_linear)

    def forward(self, x: Tensor) -> Tensor:
        return self.classifier(self.avgpool(self.features(x)).flatten(1))


def _vgg(cfg: str, batch_norm: bool, **kwargs) -> VGG:
    return VGG(make_layers(CONFIGS[cfg], batch_norm=batch_norm), **kwargs)


def _builder(name: str, cfg: str, batch_norm: bool, depth: int):
    doc = f"VGG-{depth}" + (" with batch norm" if batch_norm else "")
    return make_builder(name, lambda **kw: _vgg(cfg, batch_norm, **kw), doc, __name__)


vgg11 = _builder("vgg11", "A", False, 11)
vgg11_bn = _builder("vgg11_bn", "A", True, 11)
vgg13 = _builder("vgg13", "B", False, 13)
vgg13_bn = _builder("vgg13_bn", "B", True, 13)
vgg16 = _builder("vgg16", "D", False, 16)
vgg16_bn = _builder("vgg16_bn", "D", True, 16)
vgg19 = _builder("vgg19", "E", False, 19)
vgg19_bn = _builder("vgg19_bn", "E", True, 19)
