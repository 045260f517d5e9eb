"""Datasets under torchvision's names (``torchvision.datasets`` → ``ember.vision.datasets``)."""

from ember.vision.datasets.cifar import CIFAR10, CIFAR100
from ember.vision.datasets.folder import (
    IMG_EXTENSIONS,
    DatasetFolder,
    ImageFolder,
    default_loader,
    find_classes,
    has_file_allowed_extension,
    is_image_file,
    make_dataset,
    pil_loader,
)
from ember.vision.datasets.idx import IDXError, read_idx, write_idx
from ember.vision.datasets.mnist import MNIST, DatasetNotFoundError, FashionMNIST
from ember.vision.datasets.vision import VisionDataset

__all__ = ["MNIST", "FashionMNIST", "DatasetNotFoundError", "IDXError", "read_idx",
           "write_idx", "DatasetFolder", "ImageFolder", "IMG_EXTENSIONS", "default_loader",
           "find_classes", "has_file_allowed_extension", "is_image_file", "make_dataset",
           "pil_loader", "VisionDataset", "CIFAR10", "CIFAR100"]
