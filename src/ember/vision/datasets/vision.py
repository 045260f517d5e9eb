"""The base of the image datasets, as torchvision's ``VisionDataset``: a ``root`` folder, the
optional ``transform`` of each sample and ``target_transform`` of each target, and the
``repr`` that lists them."""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path
from typing import Any

from ember.data import Dataset

__all__ = ["VisionDataset"]


class VisionDataset(Dataset):
    """Items ``(sample, target)`` read under ``root``; subclasses give ``__getitem__`` (which
    ends with :meth:`transformed`), ``__len__`` and, for the ``repr``, :meth:`extra_repr`.

    Example:
        >>> class Noise(VisionDataset):
        ...     def __getitem__(self, i): return self.transformed(np.zeros((2, 2)), 0)
        ...     def __len__(self): return 3
        >>> Noise(None, target_transform=str)[0][1]
        '0'
    """

    def __init__(self, root: str | os.PathLike | None, transform: Callable | None = None,
                 target_transform: Callable | None = None) -> None:
        self.root = None if root is None else Path(os.path.expanduser(root))
        self.transform, self.target_transform = transform, target_transform

    def transformed(self, sample: Any, target: Any) -> tuple[Any, Any]:
        """``(transform(sample), target_transform(target))``, each where given."""
        if self.transform is not None:
            sample = self.transform(sample)
        if self.target_transform is not None:
            target = self.target_transform(target)
        return sample, target

    def extra_repr(self) -> str:
        """Lines the ``repr`` adds after the root (none here)."""
        return ""

    def __repr__(self) -> str:
        lines = [f"Dataset {type(self).__name__}", f"    Number of datapoints: {len(self)}",
                 f"    Root location: {self.root}"]
        lines += [f"    {line}" for line in self.extra_repr().splitlines()]
        if self.transform is not None:
            lines.append(f"    Transform: {self.transform!r}")
        return "\n".join(lines)
