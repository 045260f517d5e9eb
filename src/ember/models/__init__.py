"""Ready-made networks with the parameter names of their usual PyTorch definitions, so state
dicts copy across: ``mlp``, ``cnn`` and ``lenet5`` for 1×28×28 images, ``resnet18``
(CIFAR-style stem), and ``gpt`` (a small decoder-only transformer).

Example:
    >>> model = ember.models.cnn()
    >>> model(ember.randn(8, 1, 28, 28)).shape
    ember.Size([8, 10])
"""

from ember.models.gpt import GPT, gpt
from ember.models.resnet import BasicBlock, Bottleneck, ResNet, resnet18
from ember.models.small import cnn, lenet5, mlp

__all__ = ["mlp", "cnn", "lenet5", "resnet18", "gpt", "ResNet", "BasicBlock", "Bottleneck", "GPT"]
