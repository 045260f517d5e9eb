"""The base of the image datasets, as torchvision's ``VisionDataset``: a ``root`` folder, the
optional ``transform`` of each sample and ``target_transform`` of each target, and the
``repr`` that lists them."""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path
from typing import Any

from ember.data import Dataset
from ember.errors import ArgumentError

__all__ = ["StandardTransform", "VisionDataset"]


def _apply_each(transform: Callable | None, target_transform: Callable | None, sample: Any,
                target: Any) -> tuple[Any, Any]:
    if transform is not None:
        sample = transform(sample)
    if target_transform is not None:
        target = target_transform(target)
    return sample, target


class StandardTransform:
    """A joint ``transforms(sample, target)`` made of a ``transform`` of the sample and a
    ``target_transform`` of the target (either may be None), as torchvision's.

    Example:
        >>> StandardTransform(str, lambda t: t + 1)(5, 1)
        ('5', 2)
    """

    def __init__(self, transform: Callable | None = None,
                 target_transform: Callable | None = None) -> None:
        self.transform, self.target_transform = transform, target_transform

    def __call__(self, sample: Any, target: Any) -> tuple[Any, Any]:
        return _apply_each(self.transform, self.target_transform, sample, target)

    def __repr__(self) -> str:
        lines = [type(self).__name__]
        for head, t in (("Transform: ", self.transform),
                        ("Target transform: ", self.target_transform)):
            if t is not None:
                first, *rest = repr(t).splitlines()
                lines += [head + first] + [" " * len(head) + line for line in rest]
        return "\n".join(lines)


class VisionDataset(Dataset):
    """Items ``(sample, target)`` read under ``root``; subclasses give ``__getitem__`` (which
    ends with :meth:`transformed`), ``__len__`` and, for the ``repr``, :meth:`extra_repr`.

    As torchvision's, it takes either a joint ``transforms(sample, target)`` (detection
    datasets use one) or a ``transform`` of the sample and a ``target_transform`` of the
    target, which ``transforms`` then combines (a :class:`StandardTransform`).

    Example:
        >>> class Noise(VisionDataset):
        ...     def __getitem__(self, i): return self.transformed(np.zeros((2, 2)), 0)
        ...     def __len__(self): return 3
        >>> Noise(None, target_transform=str)[0][1]
        '0'
    """

    def __init__(self, root: str | os.PathLike | None = None, transforms: Callable | None = None,
                 transform: Callable | None = None,
                 target_transform: Callable | None = None) -> None:
        self.root = None if root is None else Path(os.path.expanduser(root))
        separate = transform is not None or target_transform is not None
        if transforms is not None and separate:
            raise ArgumentError(f"{type(self).__name__}: Only transforms or transform/"
                                f"target_transform can be passed as argument")
        self.transform, self.target_transform = transform, target_transform
        self.transforms = StandardTransform(transform, target_transform) if separate \
            else transforms

    def transformed(self, sample: Any, target: Any) -> tuple[Any, Any]:
        """The joint ``transforms(sample, target)`` if one was given, else
        ``(transform(sample), target_transform(target))``, each where set (also when set after
        construction, as torchvision's datasets read them)."""
        joint = self.transforms
        if joint is not None and not isinstance(joint, StandardTransform):
            return joint(sample, target)
        # (no StandardTransform built per item: that doubled FashionMNIST's __getitem__)
        return _apply_each(self.transform, self.target_transform, sample, target)

    def extra_repr(self) -> str:
        """Lines the ``repr`` adds after the root (none here)."""
        return ""

    def __repr__(self) -> str:
        # torchvision's text: each entry indented once, so the joint transform's later lines
        # (StandardTransform's "Transform: ...") start at the margin, as there
        body = [f"Number of datapoints: {len(self)}"]
        if self.root is not None:
            body.append(f"Root location: {self.root}")
        body += self.extra_repr().splitlines()
        if self.transforms is not None:
            body.append(repr(self.transforms))
        return "\n".join([f"Dataset {type(self).__name__}"] + ["    " + line for line in body])
