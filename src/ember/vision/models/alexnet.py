"""AlexNet (Krizhevsky et al. 2012) as torchvision builds it: five convolutions
(``features``), a 6×6 adaptive average pool and three linear layers (``classifier``), with
PyTorch's default initialization.

Example:
    >>> alexnet(num_classes=10)(ember.randn(1, 3, 64, 64)).shape
    ember.Size([1, 10])
"""

from __future__ import annotations

from ember import Tensor, nn
from ember.vision.models._api import make_builder

__all__ = ["AlexNet", "alexnet"]


class AlexNet(nn.Module):
    """torchvision's ``AlexNet(num_classes=1000, dropout=0.5)``; any input of at least 63×63
    pixels (the pool adapts to 6×6)."""

    def __init__(self, num_classes: int = 1000, dropout: float = 0.5) -> None:
        super().__init__()
        self.features = nn.Sequential(
            nn.Conv2d(3, 64, 11, stride=4, padding=2), nn.ReLU(inplace=True),
            nn.MaxPool2d(3, stride=2),
            nn.Conv2d(64, 192, 5, padding=2), nn.ReLU(inplace=True), nn.MaxPool2d(3, stride=2),
            nn.Conv2d(192, 384, 3, padding=1), nn.ReLU(inplace=True),
            nn.Conv2d(384, 256, 3, padding=1), nn.ReLU(inplace=True),
            nn.Conv2d(256, 256, 3, padding=1), nn.ReLU(inplace=True), nn.MaxPool2d(3, stride=2))
        self.avgpool = nn.AdaptiveAvgPool2d((6, 6))
        self.classifier = nn.Sequential(
            nn.Dropout(p=dropout), nn.Linear(256 * 6 * 6, 4096), nn.ReLU(inplace=True),
            nn.Dropout(p=dropout), nn.Linear(4096, 4096), nn.ReLU(inplace=True),
            nn.Linear(4096, num_classes))

    def forward(self, x: Tensor) -> Tensor:
        return self.classifier(self.avgpool(self.features(x)).flatten(1))


alexnet = make_builder("alexnet", AlexNet, "AlexNet", __name__)
