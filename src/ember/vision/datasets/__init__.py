"""Datasets under torchvision's names (``torchvision.datasets`` → ``ember.vision.datasets``)."""

from ember.vision.datasets.idx import IDXError, read_idx, write_idx
from ember.vision.datasets.mnist import MNIST, DatasetNotFoundError, FashionMNIST

__all__ = ["MNIST", "FashionMNIST", "DatasetNotFoundError", "IDXError", "read_idx",
           "write_idx"]
