"""Datasets of files kept in one folder per class, as torchvision's ``DatasetFolder`` and
``ImageFolder`` read them: ``root/<class>/…/<file>``, the classes the sorted folder names, the
files of each class in sorted order (subfolders included), each item ``(sample, class
index)``."""

from __future__ import annotations

import os
from collections.abc import Callable, Sequence
from typing import Any

from ember.errors import ArgumentError
from ember.vision.datasets.vision import VisionDataset

__all__ = ["DatasetFolder", "ImageFolder", "IMG_EXTENSIONS", "default_loader",
           "find_classes", "has_file_allowed_extension", "is_image_file", "make_dataset",
           "pil_loader"]

IMG_EXTENSIONS = (".jpg", ".jpeg", ".png", ".ppm", ".bmp", ".pgm", ".tif", ".tiff", ".webp")


def has_file_allowed_extension(filename: str, extensions: str | Sequence[str]) -> bool:
    """Whether ``filename`` ends with one of ``extensions`` (letter case ignored).

    Example:
        >>> has_file_allowed_extension("cat.PNG", (".png", ".jpg"))
        True
    """
    return filename.lower().endswith(tuple(e.lower() for e in _endings(extensions)))


def _endings(extensions: str | Sequence[str]) -> tuple[str, ...]:
    return (extensions,) if isinstance(extensions, str) else tuple(extensions)


def is_image_file(filename: str) -> bool:
    """Whether ``filename`` has one of :data:`IMG_EXTENSIONS`.

    Example:
        >>> is_image_file("photo.jpeg"), is_image_file("notes.txt")
        (True, False)
    """
    return has_file_allowed_extension(filename, IMG_EXTENSIONS)


def find_classes(directory: str | os.PathLike) -> tuple[list[str], dict[str, int]]:
    """The class names (``directory``'s subfolders, sorted) and their indices.

    Example:
        >>> find_classes("flowers")  # flowers/daisy/…, flowers/rose/…
        (['daisy', 'rose'], {'daisy': 0, 'rose': 1})
    """
    if not os.path.isdir(directory):
        raise FileNotFoundError(f"find_classes: {os.fspath(directory)!r} is not a folder")
    classes = sorted(entry.name for entry in os.scandir(directory) if entry.is_dir())
    if not classes:
        raise FileNotFoundError(f"find_classes: no class folder in {os.fspath(directory)!r}. "
                                f"Hint: the layout is root/<class>/<file>")
    return classes, {name: i for i, name in enumerate(classes)}


def make_dataset(directory: str | os.PathLike, class_to_idx: dict[str, int] | None = None,
                 extensions: str | Sequence[str] | None = None,
                 is_valid_file: Callable[[str], bool] | None = None,
                 allow_empty: bool = False) -> list[tuple[str, int]]:
    """``(path, class index)`` of every file under each class folder that has one of
    ``extensions`` (or that ``is_valid_file`` accepts: give one of the two), the classes in
    name order (as torchvision, whatever their indices), files in sorted order; a class
    without a file is an error unless ``allow_empty``.

    Example:
        >>> make_dataset("flowers", extensions=(".png",))[:1]
        [('flowers/daisy/1.png', 0)]
    """
    directory = os.path.expanduser(os.fspath(directory))
    if class_to_idx is None:
        _, class_to_idx = find_classes(directory)
    elif not class_to_idx:
        raise ArgumentError("make_dataset: class_to_idx is empty; it needs at least one class")
    if (extensions is None) == (is_valid_file is None):
        raise ArgumentError("make_dataset: give extensions or is_valid_file, not both or neither")
    accept = is_valid_file or (lambda path: has_file_allowed_extension(path, extensions))
    found: list[tuple[str, int]] = []
    empty = []
    for name, index in sorted(class_to_idx.items()):
        before = len(found)
        for folder, _, files in sorted(os.walk(os.path.join(directory, name),
                                               followlinks=True)):
            found.extend((path, index) for path in (os.path.join(folder, f)
                                                     for f in sorted(files)) if accept(path))
        if len(found) == before:
            empty.append(name)
    if empty and not allow_empty:
        wanted = "that is_valid_file accepts" if extensions is None else \
            f"with one of {', '.join(_endings(extensions))}"
        raise FileNotFoundError(f"make_dataset: no file {wanted} in the class folder(s) "
                                f"{', '.join(empty)} of {directory!r}. Hint: allow_empty=True "
                                f"keeps such classes")
    return found


def pil_loader(path: str | os.PathLike) -> Any:
    """The image at ``path`` as an RGB PIL image (read whole, the file closed).

    Example:
        >>> pil_loader("flowers/daisy/1.png").mode
        'RGB'
    """
    from PIL import Image

    with open(path, "rb") as f:
        return Image.open(f).convert("RGB")


default_loader = pil_loader


class DatasetFolder(VisionDataset):
    """Files in one folder per class, read by ``loader``: ``classes``, ``class_to_idx``,
    ``samples`` (``(path, class index)``, see :func:`make_dataset`) and ``targets``; an item
    is ``(transform(loader(path)), target_transform(index))``. Subclasses may override
    :meth:`find_classes` and :meth:`make_dataset`.

    Example:
        >>> ds = DatasetFolder("sounds", loader=np.load, extensions=(".npy",))
        >>> sample, label = ds[0]
    """

    def __init__(self, root: str | os.PathLike, loader: Callable[[str], Any],
                 extensions: str | Sequence[str] | None = None,
                 transform: Callable | None = None, target_transform: Callable | None = None,
                 is_valid_file: Callable[[str], bool] | None = None,
                 allow_empty: bool = False) -> None:
        super().__init__(root, transform=transform, target_transform=target_transform)
        self.loader, self.extensions = loader, extensions
        self.classes, self.class_to_idx = self.find_classes(self.root)
        self.samples = self.make_dataset(self.root, self.class_to_idx, extensions,
                                         is_valid_file, allow_empty)
        self.targets = [index for _, index in self.samples]

    @staticmethod
    def make_dataset(directory: str | os.PathLike, class_to_idx: dict[str, int],
                     extensions: str | Sequence[str] | None = None,
                     is_valid_file: Callable[[str], bool] | None = None,
                     allow_empty: bool = False) -> list[tuple[str, int]]:
        """The samples (see :func:`make_dataset`)."""
        return make_dataset(directory, class_to_idx, extensions, is_valid_file, allow_empty)

    def find_classes(self, directory: str | os.PathLike) -> tuple[list[str], dict[str, int]]:
        """The classes and their indices (see :func:`find_classes`)."""
        return find_classes(directory)

    def __getitem__(self, index: int) -> tuple[Any, Any]:
        path, target = self.samples[index]
        return self.transformed(self.loader(path), target)

    def __len__(self) -> int:
        return len(self.samples)


class ImageFolder(DatasetFolder):
    """Images in one folder per class (any of :data:`IMG_EXTENSIONS`, unless
    ``is_valid_file`` chooses), read as RGB PIL images by default; ``imgs`` is ``samples``.

    Example:
        >>> ds = ImageFolder("flowers", transform=transforms.ToTensor())
        >>> image, label = ds[0]  # a (3, H, W) float tensor and a class index
    """

    def __init__(self, root: str | os.PathLike, transform: Callable | None = None,
                 target_transform: Callable | None = None,
                 loader: Callable[[str], Any] = default_loader,
                 is_valid_file: Callable[[str], bool] | None = None,
                 allow_empty: bool = False) -> None:
        super().__init__(root, loader, IMG_EXTENSIONS if is_valid_file is None else None,
                         transform, target_transform, is_valid_file, allow_empty)
        self.imgs = self.samples
