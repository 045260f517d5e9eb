"""MNIST and Fashion-MNIST, as torchvision reads them (``.data``, ``.targets``, ``.classes``).

Items are ``(image, label)``: without a transform the image is a ``(28, 28)`` uint8 NumPy
array (torchvision gives a PIL image; Ember does not need PIL), and ``ToTensor`` makes it the
same ``(1, 28, 28)`` float tensor in [0, 1] that torchvision gives. The label is a Python int.
"""

from __future__ import annotations

import os
import warnings
from collections.abc import Callable
from pathlib import Path
from typing import Any

import ember
from ember.errors import ArgumentError, EmberError
from ember.vision.datasets.idx import download_url, read_idx
from ember.vision.datasets.vision import VisionDataset

__all__ = ["MNIST", "FashionMNIST", "DatasetNotFoundError"]


class DatasetNotFoundError(EmberError, RuntimeError):
    """The dataset's files are in none of the places searched."""


def _renamed(dataset: Any, old: str, new: str) -> ember.Tensor:
    """``dataset.<new>``, warning that ``old`` was renamed (torchvision's words)."""
    warnings.warn(f"{old} has been renamed {new}", stacklevel=3)
    return getattr(dataset, new)


class MNIST(VisionDataset):
    """The MNIST handwritten digits: 60,000 training and 10,000 test images of 28x28.

    The files (``train-images-idx3-ubyte[.gz]`` …) are searched in ``root/MNIST/raw/`` (the
    torchvision layout), ``root``, ``$EMBER_DATA/MNIST/raw/``, ``$EMBER_DATA`` and the Debian
    package's folder; ``download=True`` fetches missing ones into ``root/MNIST/raw/`` and
    checks their MD5.

    Example:
        >>> ds = FashionMNIST(root=None, train=False)
        >>> image, label = ds[0]
        >>> image.shape, image.dtype, label
        ((28, 28), dtype('uint8'), 9)
    """

    mirrors = ["https://ossci-datasets.s3.amazonaws.com/mnist/",
               "http://yann.lecun.com/exdb/mnist/"]
    resources = [("train-images-idx3-ubyte.gz", "f68b3c2dcbeaaa9fbdd348bbdeb94873"),
                 ("train-labels-idx1-ubyte.gz", "d53e105ee54ea40749a09fcbcd1e9432"),
                 ("t10k-images-idx3-ubyte.gz", "9fb629c4189551a2d022fa330f9573f3"),
                 ("t10k-labels-idx1-ubyte.gz", "ec29112dd5afa0611ce80d1b7f02629c")]
    classes = ["0 - zero", "1 - one", "2 - two", "3 - three", "4 - four", "5 - five",
               "6 - six", "7 - seven", "8 - eight", "9 - nine"]
    system_dir = "/usr/share/datasets/mnist"
    debian_package = "dataset-mnist"

    def __init__(self, root: str | os.PathLike | None, train: bool = True,
                 transform: Callable | None = None, target_transform: Callable | None = None,
                 download: bool = False) -> None:
        super().__init__(root, transform=transform, target_transform=target_transform)
        self.train = train
        split = "train" if train else "t10k"
        images, labels = f"{split}-images-idx3-ubyte", f"{split}-labels-idx1-ubyte"
        paths = self._find(images), self._find(labels)
        if None in paths and download:
            self.download()
            paths = self._find(images), self._find(labels)
        if None in paths:
            raise DatasetNotFoundError(self._not_found(images if paths[0] is None else labels))
        self.files = paths  # (where the images and the labels were found)
        self.data = ember.from_numpy(read_idx(paths[0]))
        self.targets = ember.from_numpy(read_idx(paths[1]).astype("int64"))
        if self.data.ndim != 3 or self.targets.shape != self.data.shape[:1]:
            raise DatasetNotFoundError(
                f"{type(self).__name__}: {paths[0]} holds shape {tuple(self.data.shape)} and "
                f"{paths[1]} shape {tuple(self.targets.shape)}; expected (N, H, W) images "
                f"and N labels")

    training_file = "training.pt"  # (torchvision's names of its processed files, kept for
    test_file = "test.pt"  # code that reads them; Ember reads the raw IDX files)

    @property
    def raw_folder(self) -> Path | None:
        return None if self.root is None else self.root / type(self).__name__ / "raw"

    @property
    def processed_folder(self) -> Path | None:
        return None if self.root is None else self.root / type(self).__name__ / "processed"

    train_labels = property(lambda self: _renamed(self, "train_labels", "targets"),
                            doc="``targets`` (torchvision's old name, which warns as its does)")
    test_labels = property(lambda self: _renamed(self, "test_labels", "targets"),
                           doc="``targets`` (torchvision's old name, which warns as its does)")
    train_data = property(lambda self: _renamed(self, "train_data", "data"),
                          doc="``data`` (torchvision's old name, which warns as its does)")
    test_data = property(lambda self: _renamed(self, "test_data", "data"),
                         doc="``data`` (torchvision's old name, which warns as its does)")

    @property
    def class_to_idx(self) -> dict[str, int]:
        return {c: i for i, c in enumerate(self.classes)}

    def _search_dirs(self) -> list[Path]:
        dirs = []
        if self.root is not None:
            dirs += [self.raw_folder, self.root]
        env = os.environ.get("EMBER_DATA")
        if env:
            dirs += [Path(env) / type(self).__name__ / "raw", Path(env)]
        dirs.append(Path(self.system_dir))
        return dirs

    def _find(self, stem: str) -> Path | None:
        for d in self._search_dirs():
            for name in (stem, stem + ".gz"):
                if (d / name).is_file():
                    return d / name
        return None

    def _not_found(self, stem: str) -> str:
        where = "\n  ".join(str(d) for d in self._search_dirs())
        return (f"{type(self).__name__}: dataset not found: no {stem}[.gz] in\n  {where}\n"
                f"Fix: `apt-get install {self.debian_package}`, or pass a root and "
                f"download=True, or set $EMBER_DATA to a folder holding the files.")

    def download(self) -> None:
        """Fetches the four files into ``root/<ClassName>/raw`` (MD5-checked)."""
        if self.raw_folder is None:
            raise ArgumentError(f"{type(self).__name__}: download=True needs a root folder")
        for name, md5 in self.resources:
            download_url([m + name for m in self.mirrors], self.raw_folder / name, md5)

    def __getitem__(self, index: int) -> tuple[Any, Any]:
        img = self.data.numpy()[index].copy()  # a transform may change it in place
        return self.transformed(img, int(self.targets.numpy()[index]))

    def __len__(self) -> int:
        return len(self.data)

    def extra_repr(self) -> str:
        return f"Split: {'Train' if self.train else 'Test'}"


class FashionMNIST(MNIST):
    """Zalando's Fashion-MNIST: 28x28 grey images of 10 kinds of clothing (same layout and
    API as :class:`MNIST`).

    Example:
        >>> ds = FashionMNIST(root=None, train=False)
        >>> len(ds), ds.classes[ds[0][1]]
        (10000, 'Ankle boot')
    """

    mirrors = ["http://fashion-mnist.s3-website.eu-central-1.amazonaws.com/"]
    resources = [("train-images-idx3-ubyte.gz", "8d4fb7e6c68d591d4c3dfef9ec88bf0d"),
                 ("train-labels-idx1-ubyte.gz", "25c81989df183df01b3e8a0aad5dffbe"),
                 ("t10k-images-idx3-ubyte.gz", "bef4ecab320f06d8554ea6380940ec79"),
                 ("t10k-labels-idx1-ubyte.gz", "bb300cfdad3c16e7a12a480ee83cd310")]
    classes = ["T-shirt/top", "Trouser", "Pullover", "Dress", "Coat", "Sandal", "Shirt",
               "Sneaker", "Bag", "Ankle boot"]
    system_dir = "/usr/share/datasets/fashion-mnist"
    debian_package = "dataset-fashion-mnist"
