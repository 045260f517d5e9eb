"""Small image classifiers for 1×28×28 inputs (MNIST, Fashion-MNIST), as ``nn.Sequential``
stacks: their state-dict keys are the layer indices (``1.weight``, ``3.bias``, …) exactly as
the same ``torch.nn.Sequential`` gives."""

from __future__ import annotations

from ember import nn


def mlp(num_classes: int = 10, hidden: int = 1024) -> nn.Sequential:
    """Flatten, Linear 784→1024, ReLU, Linear 1024→1024, ReLU, Linear 1024→10.

    Example:
        >>> ember.models.mlp()(ember.randn(2, 1, 28, 28)).shape
        ember.Size([2, 10])
    """
    return nn.Sequential(
        nn.Flatten(),
        nn.Linear(28 * 28, hidden), nn.ReLU(),
        nn.Linear(hidden, hidden), nn.ReLU(),
        nn.Linear(hidden, num_classes),
    )


def cnn(num_classes: int = 10) -> nn.Sequential:
    """Two 3×3 conv + ReLU + 2×2 max-pool stages (32 and 64 channels), then Linear
    3136→128, ReLU, Linear 128→10.

    Example:
        >>> ember.models.cnn()(ember.randn(2, 1, 28, 28)).shape
        ember.Size([2, 10])
    """
    return nn.Sequential(
        nn.Conv2d(1, 32, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2),
        nn.Conv2d(32, 64, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2),
        nn.Flatten(),
        nn.Linear(64 * 7 * 7, 128), nn.ReLU(),
        nn.Linear(128, num_classes),
    )


def lenet5(num_classes: int = 10) -> nn.Sequential:
    """LeNet-5 for 28×28 inputs (the first conv pads by 2, as for the original 32×32), with
    ReLU and max-pooling in place of the original scaled tanh and subsampling.

    Example:
        >>> ember.models.lenet5()(ember.randn(2, 1, 28, 28)).shape
        ember.Size([2, 10])
    """
    return nn.Sequential(
        nn.Conv2d(1, 6, 5, padding=2), nn.ReLU(), nn.MaxPool2d(2),
        nn.Conv2d(6, 16, 5), nn.ReLU(), nn.MaxPool2d(2),
        nn.Flatten(),
        nn.Linear(16 * 5 * 5, 120), nn.ReLU(),
        nn.Linear(120, 84), nn.ReLU(),
        nn.Linear(84, num_classes),
    )
