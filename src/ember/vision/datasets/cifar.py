"""CIFAR-10 and CIFAR-100, read from the "python version" batches in torchvision's layout
(``root/cifar-10-batches-py/``, ``root/cifar-100-python/``).

The batches are pickles; they are read by an unpickler that builds only NumPy arrays and plain
containers, so a tampered file cannot run code. Items are ``(image, label)``: without a
transform the image is a ``(32, 32, 3)`` uint8 NumPy array (torchvision gives a PIL image;
``ToTensor`` makes either the same ``(3, 32, 32)`` tensor), the label a Python int.
"""

from __future__ import annotations

import os
import pickle
import tarfile
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np

from ember.vision.datasets.idx import download_url
from ember.vision.datasets.mnist import DatasetNotFoundError
from ember.vision.datasets.vision import VisionDataset

__all__ = ["CIFAR10", "CIFAR100"]

# what a batch's pickle may build: NumPy arrays (under NumPy 1's and 2's module names; pickle
# protocol 5 rebuilds them from a buffer) and, in files written by Python 2, its byte strings
_ALLOWED = {(f"numpy{core}.{module}", name) for core in (".core", "._core")
            for module, name in (("multiarray", "_reconstruct"), ("numeric", "_frombuffer"))} | \
    {("numpy", "ndarray"), ("numpy", "dtype"), ("_codecs", "encode")}


class _ArraysOnly(pickle.Unpickler):
    def find_class(self, module: str, name: str) -> Any:
        if (module, name) not in _ALLOWED:
            raise pickle.UnpicklingError(f"{module}.{name} is not allowed in a CIFAR batch "
                                         f"(only NumPy arrays and plain data)")
        return super().find_class(module, name)


def load_batch(path: str | os.PathLike) -> dict[str, Any]:
    """A CIFAR batch file's dictionary (keys as str), unpickled safely.

    Example:
        >>> load_batch("data/cifar-10-batches-py/test_batch")["labels"][:3]
        [3, 8, 8]
    """
    with open(path, "rb") as f:
        try:
            batch = _ArraysOnly(f, encoding="latin1").load()
        except (pickle.UnpicklingError, EOFError, ValueError) as error:
            raise DatasetNotFoundError(f"{path} is not a CIFAR batch: {error}") from None
    if not isinstance(batch, dict):
        raise DatasetNotFoundError(f"{path} is not a CIFAR batch: it holds a "
                                   f"{type(batch).__name__}, not a dict")
    return {k.decode("latin1") if isinstance(k, bytes) else k: v for k, v in batch.items()}


def _entry(batch: dict[str, Any], key: str, path: Path) -> Any:
    if key not in batch:
        raise DatasetNotFoundError(f"{path} is not a CIFAR batch of this kind: it has no "
                                   f"{key!r} (it has {sorted(batch)})")
    return batch[key]


class CIFAR10(VisionDataset):
    """The CIFAR-10 tiny images: 50,000 training and 10,000 test images of 32x32 in 10
    classes, from ``root/cifar-10-batches-py/``; ``download=True`` fetches and unpacks the
    archive (MD5-checked) first. ``data`` is (N, 32, 32, 3) uint8, ``targets`` a list.

    Example:
        >>> test = CIFAR10("data", train=False, download=True)
        >>> image, label = test[0]
        >>> image.shape, test.classes[label]
        ((32, 32, 3), 'cat')
    """

    base_folder = "cifar-10-batches-py"
    url = "https://www.cs.toronto.edu/~kriz/cifar-10-python.tar.gz"
    archive_md5 = "c58f30108f718f92721af3b95e74349a"
    train_files = [f"data_batch_{i}" for i in range(1, 6)]
    test_files = ["test_batch"]
    meta = ("batches.meta", "label_names")
    label_key = "labels"

    def __init__(self, root: str | os.PathLike, train: bool = True,
                 transform: Callable | None = None, target_transform: Callable | None = None,
                 download: bool = False) -> None:
        super().__init__(root, transform=transform, target_transform=target_transform)
        self.train = train
        folder = self.root / self.base_folder
        names = self.train_files if train else self.test_files
        needed = [*names, self.meta[0]]
        if download and not all((folder / n).is_file() for n in needed):
            self.download()
        missing = [n for n in needed if not (folder / n).is_file()]
        if missing:
            raise DatasetNotFoundError(
                f"{type(self).__name__}: dataset not found: no {', '.join(missing)} in "
                f"{folder}. Fix: pass download=True, or unpack {self.url.rsplit('/', 1)[1]} "
                f"into {self.root}")
        images, labels = [], []
        for name in names:
            batch = load_batch(folder / name)
            data = np.asarray(_entry(batch, "data", folder / name))
            if data.ndim != 2 or data.shape[1] != 3072 or data.dtype != np.uint8:
                raise DatasetNotFoundError(f"{type(self).__name__}: {folder / name} holds "
                                           f"{data.dtype} data of shape {data.shape}; a CIFAR "
                                           f"batch holds uint8 rows of 3072 values")
            images.append(data.reshape(-1, 3, 32, 32))
            labels.extend(int(k) for k in _entry(batch, self.label_key, folder / name))
        self.data = np.concatenate(images).transpose(0, 2, 3, 1)
        self.targets = labels
        if len(self.targets) != len(self.data):
            raise DatasetNotFoundError(f"{type(self).__name__}: {folder} holds "
                                       f"{len(self.data)} images for {len(self.targets)} labels")
        self.classes = list(_entry(load_batch(folder / self.meta[0]), self.meta[1],
                                   folder / self.meta[0]))

    @property
    def class_to_idx(self) -> dict[str, int]:
        return {name: i for i, name in enumerate(self.classes)}

    def download(self) -> None:
        """Fetches the archive into ``root`` (MD5-checked) and unpacks it there."""
        archive = self.root / self.url.rsplit("/", 1)[1]
        download_url([self.url], archive, self.archive_md5)
        with tarfile.open(archive, "r:gz") as tar:  # (the data filter: Python 3.11.4 on)
            tar.extractall(self.root, **({"filter": "data"} if hasattr(tarfile, "data_filter")
                                         else {}))

    def __getitem__(self, index: int) -> tuple[Any, Any]:
        return self.transformed(self.data[index].copy(), self.targets[index])

    def __len__(self) -> int:
        return len(self.data)

    def extra_repr(self) -> str:
        return f"Split: {'Train' if self.train else 'Test'}"


class CIFAR100(CIFAR10):
    """CIFAR-100: the same images' layout in 100 fine classes (``targets``; the 20 coarse
    superclasses are not read, as in torchvision), from ``root/cifar-100-python/``.

    Example:
        >>> CIFAR100("data", train=False, download=True).classes[:2]
        ['apple', 'aquarium_fish']
    """

    base_folder = "cifar-100-python"
    url = "https://www.cs.toronto.edu/~kriz/cifar-100-python.tar.gz"
    archive_md5 = "eb9058c3a382ffc7106e4002c42a8d85"
    train_files = ["train"]
    test_files = ["test"]
    meta = ("meta", "fine_label_names")
    label_key = "fine_labels"
